"""The index's resource rows, kept beside it for the next build to read (faster than from SQLite).

The rows' values (as selected, `ResourceRow.SQL_COLUMNS`) marshal'ed by column in a base (`ROWS_BASE`),
and the rows written since in a delta (`ROWS_DELTA`: by resource id, None for a row deleted) that each
build writing the index rewrites; a new base after a write from empty or once the delta grows large.
Trust: every write of the index puts a new random token in `build_meta` (`TOKEN_KEY`); the delta carries
that token, the index file's size and mtime and the base's id, the base its id and a checksum. A build
uses the cache only when all of those match, else it reads the rows from SQLite and writes a new base:
the rows are the same values either way. The files are no evidence: only `load_previous` reads them.
"""

from __future__ import annotations

import marshal
import os
import sqlite3
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

from mnote_evidence.build.core.fsutil import atomic_write_bytes
from mnote_evidence.build.core.model import ResourceRow
from mnote_evidence.build.core.sqlite_ro import connect_ro

TOKEN_KEY = "rows_token"  # build_meta: the token of the write the cache must match
ROWS_BASE = ".mnote-rows-base.marshal"
ROWS_DELTA = ".mnote-rows-delta.marshal"
# marshal's format and this layout: another Python reads the rows from SQLite (and writes a new base)
FORMAT = f"mnote-rows-1-py{sys.version_info[0]}.{sys.version_info[1]}-m{marshal.version}"
DELTA_MAX = 1000

Row = tuple


@dataclass
class Cached:
    """The cache a build read: its base and the rows changed since (resource id -> values, None: gone)."""

    base_id: str
    delta: dict[str, Row | None]


def new_token() -> str:
    return os.urandom(8).hex()


def read(db_path: Path, token: str | None) -> tuple[list[Row], Cached] | None:
    """The rows of the index at `db_path`, whose token is `token` (every row, its values), if the cache
    beside it is that index's; else None (read them from the index)."""
    if not token:
        return None
    folder = db_path.parent
    delta_header, delta = _read(folder / ROWS_DELTA)
    if not isinstance(delta, dict) or delta_header[1:] != [token, _stamp(db_path)]:
        return None
    base_header, columns = _read(folder / ROWS_BASE)
    if not isinstance(columns, tuple) or base_header != [delta_header[0]]:
        return None
    rows: list[Row] = list(zip(*columns))
    if delta:
        at = dict(zip(columns[0], range(len(rows))))
        gone = []
        for rid, row in delta.items():
            i = at.get(rid)
            if i is None:
                if row is not None:
                    rows.append(row)
            elif row is None:
                gone.append(i)
            else:
                rows[i] = row
        for i in sorted(gone, reverse=True):
            del rows[i]
    return rows, Cached(delta_header[0], delta)


def save(db_path: Path, token: str, cached: Cached | None, written: set[str]) -> None:
    """After a write of the index at `db_path` that set `token`: the delta with the rows `written` (resource
    ids) since the base `cached` names, or a new base (no usable cache, or too many rows changed)."""
    try:
        _save(db_path, token, cached, written)
    except (OSError, sqlite3.Error):  # no cache (the next build reads the index): the build stands
        for name in (ROWS_DELTA, ROWS_BASE):
            (db_path.parent / name).unlink(missing_ok=True)


def _save(db_path: Path, token: str, cached: Cached | None, written: set[str]) -> None:
    folder = db_path.parent
    conn = connect_ro(db_path)
    try:
        stamp = _stamp(db_path)
        if cached is not None and len(cached.delta.keys() | written) <= DELTA_MAX:
            delta = dict(cached.delta)
            delta.update(dict.fromkeys(written))  # None unless still in the index:
            delta.update((r[0], r) for r in ResourceRow.select(conn, written))
            _write(folder / ROWS_DELTA, [cached.base_id, token, stamp], delta)
            return
        rows = ResourceRow.select(conn).fetchall()
    finally:
        conn.close()
    base_id = new_token()
    # equal strings as one object: marshal writes the others as references, which load faster
    shared: dict[str, str] = {}
    columns = tuple(
        tuple(shared.setdefault(v, v) if v.__class__ is str else v for v in column) for column in zip(*rows)
    )
    _write(folder / ROWS_BASE, [base_id], columns)
    _write(folder / ROWS_DELTA, [base_id, token, stamp], {})


def _stamp(db_path: Path) -> str:
    try:
        st = os.stat(db_path)
    except OSError:
        return ""
    return f"{st.st_size}:{st.st_mtime_ns}"


def _write(path: Path, header: list[str], value: object) -> None:
    data = marshal.dumps(value)
    atomic_write_bytes(path, " ".join([FORMAT, f"{zlib.crc32(data):08x}", *header]).encode() + b"\n" + data)


def _read(path: Path) -> tuple[list[str], object | None]:
    """(the header's fields after the format and checksum, the value), or ([], None) if unusable."""
    try:
        raw = path.read_bytes()
    except OSError:
        return [], None
    line, _, data = raw.partition(b"\n")
    fields = line.decode("ascii", "replace").split(" ")
    if len(fields) < 2 or fields[0] != FORMAT or fields[1] != f"{zlib.crc32(data):08x}":
        return [], None
    try:
        return fields[2:], marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return [], None
