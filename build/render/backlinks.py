"""Backlinks as a reader sees them: the sentence of the linking block that holds the link (SPEC §8).

A backlink is an edge into a resource (`data.backlinks`: the linking block and its text). The
panel shows the sentence around the link, with the link's own words marked, instead of the first
characters of a long paragraph. The words are the link's label as written: the linking note's
source slice of that block (its `char_range`) is parsed with the one Markdown parser
(`build.markdown_syntax`) and the label of the link whose target resolved here is taken from its
tokens. When that fails (a reference-style link, a note changed since the build, a PDF's outline
link) the block's text is shortened instead: the panel never fails.

Invariants: the text shown is the indexed block text (a slice of it), never re-derived from the
source; labels only locate the link within it. Source notes are read once per render (`Sentences`).
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from mnote_evidence.build.markdown_syntax import markdown_parser
from mnote_evidence.build.providers.encoding import decode_note
from mnote_evidence.build.render import data

MAX_CHARS = 220  # longer sentences are cut around the link
# a sentence ends after . ! ? followed by space, after a CJK full stop / ! / ?, or at a line break
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")


@dataclass
class Snippet:
    before: str
    mark: str  # the link's words ("" when they could not be located)
    after: str


def sentence_around(text: str, label: str) -> Snippet:
    """The sentence of `text` holding the first occurrence of `label`, the label split out."""
    at = _find(text, label)
    if at < 0:
        return Snippet(_cut(text.strip(), 0, MAX_CHARS), "", "")
    start, end = 0, len(text)
    for m in _SENTENCE_END.finditer(text):
        if m.end() <= at:
            start = m.end()
        elif m.start() >= at + len(label):
            end = m.start()
            break
    before, after = text[start:at], text[at + len(label):end]
    room = max(MAX_CHARS - len(label), 40) // 2
    if len(before) > room:
        before = "…" + before[len(before) - room:].lstrip()
    if len(after) > room:
        after = after[:room].rstrip() + "…"
    return Snippet(before.lstrip(), label, after.rstrip())


def _find(text: str, label: str) -> int:
    """Where `label` stands as words of its own (not inside a longer word), else its first occurrence."""
    if not label:
        return -1
    m = re.search(rf"(?<!\w){re.escape(label)}(?!\w)", text)
    return m.start() if m else text.find(label)


def _cut(text: str, start: int, limit: int) -> str:
    return text[start:start + limit].rstrip() + ("…" if len(text) - start > limit else "")


def labels(source: str, targets: set[str]) -> list[str]:
    """The words of the links in Markdown `source` whose target (as written) is in `targets`."""
    out: list[str] = []
    for tok in markdown_parser().parse(source):
        open_target, words = None, []
        for child in tok.children or []:
            if child.type == "wikilink" and child.meta.get("target") in targets:
                out.append(child.content)
            elif child.type == "link_open":
                open_target, words = str(child.attrGet("href") or ""), []
            elif child.type == "link_close":
                if open_target in targets and "".join(words).strip():
                    out.append("".join(words))
                open_target = None
            elif open_target is not None and child.type in ("text", "code_inline"):
                words.append(child.content)
    return out


class Sentences:
    """Linking sentences for the backlinks of many pages, reading each linking note once."""

    def __init__(self, conn: sqlite3.Connection, root: Path):
        self.conn, self.root = conn, root
        self._texts: dict[str, str | None] = {}

    def _source(self, path: str) -> str | None:
        if path not in self._texts:
            try:
                self._texts[path] = decode_note((self.root / path).read_bytes())[0]
            except OSError:
                self._texts[path] = None
        return self._texts[path]

    def snippet(self, link: data.Backlink, target_path: str) -> Snippet:
        rows = self.conn.execute(
            "SELECT l.target, b.char_range_json FROM evidence_link l JOIN evidence_block b "
            "ON b.block_id = l.source_block_id WHERE l.source_block_id = ? AND l.target_path = ?",
            [link.block_id, target_path]).fetchall()
        text = self._source(link.from_path) if rows and link.from_path.lower().endswith((".md", ".markdown")) \
            else None
        found: list[str] = []
        if text is not None and rows[0][1]:
            start, end = json.loads(rows[0][1])
            found = labels(text[start:end], {r[0] for r in rows})
        label = next((w for w in found if w in link.text), "")
        return sentence_around(link.text, label)
