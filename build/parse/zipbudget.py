"""Inflating a zip archive under a byte budget, before any library opens it (SPEC §3, §9).

A zip's directory declares each entry's uncompressed size, and an attacker
controls it: `check_inflated_size` does not trust them and inflates every entry
itself, in 1 MiB steps with a constant-size window, counting the bytes that
really come out. It stops as soon as an entry passes its declared size (a lie:
`zipfile` would inflate the whole entry into memory before truncating it) or
the total passes the budget. Memory stays constant whatever the archive claims
or contains.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

_LOCAL_HEADER = struct.Struct("<4s5H3I2H")
_STEP = 1 << 20


class OverBudget(Exception):
    def __init__(self, inflated: int, budget: int, entry: str):
        super().__init__(f"{entry}: inflates past {budget / 2**20:.0f} MiB")
        self.inflated, self.budget, self.entry = inflated, budget, entry


def check_inflated_size(path: Path, infos: list[zipfile.ZipInfo], budget: int) -> int:
    """Total bytes the entries really inflate to; raises `OverBudget` once it passes `budget`,
    `zipfile.BadZipFile` for an entry inflating past its declared size, a damaged entry or a
    method other than stored/deflated."""
    total = 0
    with open(path, "rb") as f:
        for info in infos:
            f.seek(info.header_offset)
            header = f.read(_LOCAL_HEADER.size)
            if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
                raise zipfile.BadZipFile(f"bad local header for {info.filename}")
            name_len, extra_len = _LOCAL_HEADER.unpack(header)[-2:]
            f.seek(name_len + extra_len, 1)
            total = _inflate_entry(f, info, total, budget)
    return total


def _inflate_entry(f, info: zipfile.ZipInfo, total: int, budget: int) -> int:
    left = info.compress_size
    if info.compress_type == zipfile.ZIP_STORED:
        total += left
        if total > budget:
            raise OverBudget(total, budget, info.filename)
        return total
    if info.compress_type != zipfile.ZIP_DEFLATED:
        raise zipfile.BadZipFile(f"{info.filename}: unsupported compression method {info.compress_type}")
    inflater = zlib.decompressobj(-15)
    start = total
    try:
        while left > 0 and not inflater.eof:
            chunk = f.read(min(_STEP, left))
            if not chunk:
                raise zipfile.BadZipFile(f"{info.filename}: truncated")
            left -= len(chunk)
            data = inflater.decompress(chunk, _STEP)
            while True:
                total += len(data)
                if total > budget:
                    raise OverBudget(total, budget, info.filename)
                if total - start > info.file_size:
                    raise zipfile.BadZipFile(
                        f"{info.filename} inflates past its declared size ({info.file_size} bytes)"
                    )
                if not inflater.unconsumed_tail:
                    break
                data = inflater.decompress(inflater.unconsumed_tail, _STEP)
    except zlib.error as exc:
        raise zipfile.BadZipFile(f"{info.filename}: {exc}") from exc
    return total
