"""Compiled notes handed from the parse to the render, so a full build parses each note once.

Where the build parses a changed note (a parse worker, `parse/prepare.py`), `store_programs` compiles
the task's notes (`note_html.compile_note`) into one file in the site's `PROGRAMS_DIR`, each program
named by a hash of the note's text, its block ids and what `compile_note` reads of its blocks; the
file starts with a JSON line of {name: [offset, length]}. `load_program` finds the program for the
same text and blocks of the same shape; anything else is compiled again in the render, so a program
can only save time, never change a page. `render_site` removes the folder at the end; it is never
synced (a cache, not a result), and programs are not removed one by one as they are read.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnote_evidence.build.core.fsutil import folder_inside
from mnote_evidence.build.core.model import Block

if TYPE_CHECKING:
    from mnote_evidence.build.render.note_html import Program

PROGRAMS_DIR = ".mnote-note-programs"
VERSION = "4"  # of the program format and of `compile_note`'s output: part of every name
SUFFIX = ".programs"


Shape = list[list[Any]]


def shape_of(blocks: list[Block]) -> Shape:
    """What `compile_note` reads of the blocks: their ids, anchors and a properties block's text."""
    return [[b.id, b.anchor, b.text if b.type == "properties" else None] for b in blocks]


def _name(text: str, shape: Shape) -> str:
    h = hashlib.sha256(f"{VERSION}\0{text}\0".encode("utf-8", "surrogatepass"))
    h.update(json.dumps(shape, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def store_programs(folder: Path, notes: list[tuple[str, list[Block]]]) -> None:
    """Compile each (text, blocks) note (its kept tokens, when it was just parsed here) into one file
    of `folder`; best effort: a note that does not compile or encode is left to the render."""
    from mnote_evidence.build.render.note_html import BlockMismatch, compile_note

    entries: dict[str, list[int]] = {}
    chunks: list[bytes] = []
    offset = 0
    for text, blocks in notes:
        try:
            data = json.dumps(compile_note(text, blocks), ensure_ascii=False, separators=(",", ":")).encode(
                "utf-8"
            )
        except (BlockMismatch, ValueError):  # ValueError: a surrogate in the text (not UTF-8)
            continue
        entries[_name(text, shape_of(blocks))] = [offset, len(data)]
        chunks.append(data)
        offset += len(data)
    if not entries:
        return
    head = json.dumps(entries, separators=(",", ":")).encode("ascii") + b"\n"
    try:
        folder_inside(folder.parent, folder, create=True, replace_links=True)  # in the site: no link
        final = folder / (hashlib.sha256(head).hexdigest()[:32] + SUFFIX)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        tmp.write_bytes(b"".join([head, *chunks]))
        tmp.replace(final)
    except OSError:  # disk full...: the render compiles them
        return


# the programs of a folder, read once per process: (inode, mtime), {name: (file, start, length)}
_found: dict[Path, tuple[tuple[int, int], dict[str, tuple[Path, int, int]]]] = {}


def _programs_in(folder: Path) -> dict[str, tuple[Path, int, int]]:
    """Where each program of `folder` is: its files' first lines, read again only if files came or went
    (a file written or removed changes the folder's mtime)."""
    try:
        st = folder.stat()
    except OSError:
        _found.pop(folder, None)
        return {}
    key = (st.st_ino, st.st_mtime_ns)
    known = _found.get(folder)
    if known is not None and known[0] == key:
        return known[1]
    where: dict[str, tuple[Path, int, int]] = {}
    for path in folder.glob("*" + SUFFIX):
        try:
            with open(path, "rb") as f:
                head = f.readline()
            entries = json.loads(head)
            for name, (offset, length) in entries.items():
                where[name] = (path, len(head) + offset, length)
        except (OSError, ValueError, TypeError):
            continue
    _found[folder] = (key, where)
    return where


def load_program(folder: Path | None, text: str, shape: Shape) -> Program | None:
    """The program `store_programs` left for this text and blocks of this shape (`shape_of`), else None."""
    if folder is None:
        return None
    entry = _programs_in(folder).get(_name(text, shape))
    if entry is None:
        return None
    path, start, length = entry
    try:
        with open(path, "rb") as f:
            f.seek(start)
            parts, ops = json.loads(f.read(length))
    except (OSError, ValueError, TypeError):
        return None
    return parts, ops
