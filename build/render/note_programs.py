"""Compiled notes handed from the parse to the render, so a full build parses each note once (issue 17).

Where the build parses a changed note for the index (a parse worker, `build/prepare.py`), its tokens
are still in memory (`markdown_syntax.parse_note(keep=True)`): `store_program` compiles the note's
HTML there (`note_html.compile_note`: all but what depends on the rest of the site) and leaves it as
a JSON file in the site's `PROGRAMS_DIR`, named by a hash of the note's text, its block ids and what
`compile_note` reads of its blocks. `load_program` in the render finds it for the same text and
blocks; anything else (no file, other text, other blocks, an unreadable file)
is compiled again in the render, so a program can only save time, never change a page.
`render_site` removes the folder when it is done; it is never synced (a cache, not a result). A program is
not removed as it is read (the front page reads the home note's again): in a profiled full build of 10,000
notes (jobs 1) those 10,000 unlinks waited 15 s on the file system's writeback (the parse's files flushed
by the render's own batched syncs, or by any other process's), where the folder's removal at the end
takes a fraction of a second.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnote_evidence.build.model import Block

if TYPE_CHECKING:  # the parser and renderer load only where a note is compiled
    from mnote_evidence.build.render.note_html import Program

PROGRAMS_DIR = ".mnote-note-programs"  # in the site folder, while a build runs
VERSION = "1"  # of the program format and of `compile_note`'s output: part of every name


Shape = list[list[Any]]  # what a program's name covers of the note's blocks (`shape_of`)


def shape_of(blocks: list[Block]) -> Shape:
    """What `compile_note` reads of the blocks: their ids, anchors and a properties block's text."""
    return [[b.id, b.anchor, b.text if b.type == "properties" else None] for b in blocks]


def _name(text: str, shape: Shape) -> str:
    h = hashlib.sha256(f"{VERSION}\0{text}\0".encode("utf-8", "surrogatepass"))
    h.update(json.dumps(shape, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32] + ".json"


def store_program(folder: Path, text: str, blocks: list[Block]) -> None:
    """Compile the note (its kept tokens, when it was just parsed here) into `folder`; best effort."""
    from mnote_evidence.build.render.note_html import BlockMismatch, compile_note
    try:
        program = compile_note(text, blocks)
    except BlockMismatch:
        return
    try:
        folder.mkdir(exist_ok=True)
        final = folder / _name(text, shape_of(blocks))
        tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(program, ensure_ascii=False, separators=(",", ":")), "utf-8")
        tmp.replace(final)
    except (OSError, ValueError):  # disk full, a surrogate in the text...: the render compiles it
        return


def load_program(folder: Path | None, text: str, shape: Shape) -> Program | None:
    """The program `store_program` left for this text and blocks of this shape (`shape_of`, or
    `render/note_map.py`'s from the source map itself), else None."""
    if folder is None:
        return None
    path = folder / _name(text, shape)
    try:
        parts, ops = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError, TypeError):
        return None
    return parts, ops
