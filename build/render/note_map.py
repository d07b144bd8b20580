"""A note's source map as its page reads it: the title and the blocks' shape, the blocks built only when
the page needs them.

A note's page needs of its source map the title and, to find the program its parse compiled
(`note_programs.py`), the shape of its blocks. `blocks` is built on first use, from the same JSON: only
a note compiled here (no program) or shown from its indexed blocks needs them.
Invariant: `title`, `blocks` and `shape` are what `artifact_from_source_map` of the same document
gives (`shape` = `note_programs.shape_of(blocks)`), so a page is the same either way.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from mnote_evidence.build.core.model import Block
from mnote_evidence.build.parse.sidecars import artifact_from_source_map
from mnote_evidence.build.render.note_programs import Shape


class NoteMap:
    """A Markdown note's source map (`doc`, parsed JSON without pages) for its page."""

    def __init__(self, doc: dict[str, Any]):
        self.doc = doc
        self.title: str | None = doc.get("title")

    @cached_property
    def blocks(self) -> list[Block]:
        return artifact_from_source_map(self.doc, "").blocks

    @cached_property
    def shape(self) -> Shape:
        return [
            [b["id"], b.get("anchor"), b["text"] if b["type"] == "properties" else None]
            for b in self.doc.get("blocks", [])
        ]
