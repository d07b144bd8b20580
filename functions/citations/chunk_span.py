"""Where a LightRAG chunk lies in the text we sent, and which blocks lie there (SPEC §10, by position).

LightRAG chunks are token windows of the text we ingested, stripped: exact substrings.
`knowledge_text` keeps that text (build/index/knowledge_text.py), and every block's
`charRange` indexes the same text. So a chunk is located by offset, not by
resemblance: `locate` finds the chunk's span, `SpanBlocks.overlapping` returns the
blocks whose char range overlaps it, in order, each with the part of its text that
lies inside the chunk.

Invariants:
- a block is a candidate only if its charRange overlaps the chunk's span; nothing
  else in the document (an identical passage on another page) can be cited;
- page furniture (role `furniture`: running headers, footers, page numbers) is never a
  candidate: its range is blanked in the ingested text (build/index/knowledge_text.py `ingest_text`)
  and skipped here, also in texts ingested before furniture was detected;
- LightRAG sanitises what it receives (lightrag-hku 1.5 `sanitize_text_for_encoding`: HTML entities
  unescaped, control characters and surrogates removed); when a chunk is not found verbatim it is
  looked up in that sanitised view of the text, whose every character maps back to its offset;
- a chunk that cannot be located yields no span (the caller cites the file, never a
  resembling block elsewhere);
- a repeated chunk text (the same window twice in one document) takes the occurrence
  whose order matches LightRAG's chunk index when it can tell (`-chunk-NNN` ids), else the first.
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
from dataclasses import dataclass

from mnote_evidence.build.core.model import ROLE_FURNITURE
from mnote_evidence.build.core.text import is_cjk

_REPLACEMENT = "\ufffd"  # a token window cut inside a multi-byte character decodes to U+FFFD
_ORDER = re.compile(r"-chunk-(\d+)$")
_WORD = re.compile(r"\w")


def _in_word(text: str, i: int) -> bool:
    """text[i-1] and text[i] belong to one Latin word (CJK runs have no word boundaries to respect)."""
    return all(_WORD.match(ch) and not is_cjk(ch) for ch in text[i - 1 : i + 1])


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    ambiguous: bool = False  # the chunk text occurs more than once in the document


@dataclass
class SpanBlock:
    """A block of the cited resource, as mapping needs it."""

    block_id: str
    kind: str
    text: str
    ordinal: int
    page: int | None
    start: int
    end: int
    verbatim: bool  # text == ingested[start:end] (PDF, DOCX, OCR); Markdown blocks hold rendered text

    def inside(self, span: Span) -> str:
        """The block's text that lies inside the span (all of it unless verbatim and cut by the span's edge);
        a word the span's edge cuts in two is left out, so every word shown is whole in block and chunk."""
        if not self.verbatim:
            return self.text
        a = max(span.start, self.start) - self.start
        z = min(span.end, self.end) - self.start
        text = self.text
        if 0 < a < z and _in_word(text, a):
            space = text.find(" ", a, z)
            a = space + 1 if space >= 0 else a
        if a < z < len(text) and _in_word(text, z):
            space = text.rfind(" ", a, z)
            z = space if space > a else z
        return text[a:z]

    def overlap(self, span: Span) -> float:
        """Share of the block's char range inside the span (0..1)."""
        width = max(1, self.end - self.start)
        return max(0, min(span.end, self.end) - max(span.start, self.start)) / width


# html.unescape's own entity pattern, and the characters lightrag-hku removes (its utils.py)
_SANITISED = re.compile(
    r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)"
    r"|[\x00-\x08\x0B\x0C\x0E-\x1F\x7F\uD800-\uDFFF\uFFFE\uFFFF]"
)
_REMOVED = re.compile(r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F\uD800-\uDFFF\uFFFE\uFFFF]")


def sanitised_view(text: str) -> tuple[str, list[int]] | None:
    """The text as LightRAG stores it, with the offset in `text` of each of its characters (plus the end);
    None when sanitising changes nothing."""
    if not _SANITISED.search(text):
        return None
    out: list[str] = []
    offsets: list[int] = []
    pos = 0
    for m in _SANITISED.finditer(text):
        out.append(text[pos : m.start()])
        offsets.extend(range(pos, m.start()))
        repl = _REMOVED.sub("", html.unescape(m.group(0)) if m.group(0).startswith("&") else "")
        out.append(repl)
        offsets.extend([m.start()] * len(repl))
        pos = m.end()
    out.append(text[pos:])
    offsets.extend(range(pos, len(text) + 1))
    return "".join(out), offsets


def locate(
    text: str, content: str, chunk_id: str = "", view: tuple[str, list[int]] | None = None
) -> Span | None:
    """The span of `content` in `text` (or, failing that, in LightRAG's sanitised `view` of it), or None
    when it is in neither (the text changed since ingest)."""
    core = content.strip().strip(_REPLACEMENT).strip()
    if not core:
        return None
    start = text.find(core)
    if start < 0 and view is not None:
        found = locate(view[0], core, chunk_id)
        if found is None:
            return None
        offsets = view[1]
        return Span(offsets[found.start], offsets[found.end - 1] + 1, found.ambiguous)
    if start < 0:
        return None
    found = [start]
    while len(found) < 64 and (nxt := text.find(core, found[-1] + 1)) >= 0:
        found.append(nxt)
    if len(found) > 1:
        m = _ORDER.search(chunk_id)
        # chunks are windows of equal stride: the n-th chunk starts about n/len(all) into the text
        pick = found[0] if not m else min(found, key=lambda s: abs(s - int(m.group(1)) * len(core) * 0.9))
        return Span(pick, pick + len(core), ambiguous=True)
    return Span(start, start + len(core))


class SpanBlocks:
    """Per resource, lazily: the ingested text, and the blocks of a span found by binary search.

    Providers emit blocks in text order (ordinals 0..n-1 with increasing, non-overlapping char
    ranges), so the first block ending after a span's start is found with ~log2(n) indexed point
    reads, and only the span's rows are read after it; a 300-page manual is never loaded whole."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._texts: dict[str, str | None] = {}
        self._views: dict[str, tuple[str, list[int]] | None] = {}
        self._count: dict[str, int] = {}
        self._probes: dict[tuple[str, int], tuple[int, int, int] | None] = {}  # shared by a file's chunks

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            try:
                row = self.conn.execute(
                    "SELECT text FROM knowledge_text WHERE source_root_relative_path = ?", [path]
                ).fetchone()
            except sqlite3.OperationalError:  # an index built before knowledge_text existed
                row = None
            self._texts[path] = row[0] if row else None
        return self._texts[path]

    def view(self, path: str) -> tuple[str, list[int]] | None:
        """LightRAG's sanitised view of the ingested text (computed once, only when a chunk needs it)."""
        if path not in self._views:
            text = self.text(path)
            self._views[path] = sanitised_view(text) if text is not None else None
        return self._views[path]

    def locate(self, path: str, content: str, chunk_id: str) -> Span | None:
        text = self.text(path)
        if text is None:
            return None
        return locate(text, content, chunk_id) or locate(text, content, chunk_id, self.view(path))

    def _probe(self, resource_id: str, ordinal: int) -> tuple[int, int, int] | None:
        """(ordinal, start, end) of the first block at or after `ordinal` that has a char range."""
        key = (resource_id, ordinal)
        if key not in self._probes:
            self._probes[key] = self._read_probe(resource_id, ordinal)
        return self._probes[key]

    def _read_probe(self, resource_id: str, ordinal: int) -> tuple[int, int, int] | None:
        row = self.conn.execute(
            "SELECT ordinal, char_range_json FROM evidence_block WHERE resource_id = ? AND ordinal = ?",
            [resource_id, ordinal],
        ).fetchone()
        if row is None or row[1] is None:  # rare: a block without a char range; take the next one that has
            row = self.conn.execute(
                "SELECT ordinal, char_range_json FROM evidence_block WHERE resource_id = ? "
                "AND ordinal >= ? AND char_range_json IS NOT NULL ORDER BY ordinal LIMIT 1",
                [resource_id, ordinal],
            ).fetchone()
        if row is None:
            return None
        a, b = json.loads(row[1])
        return row[0], a, b

    def _first_after(self, resource_id: str, pos: int) -> int | None:
        """Smallest ordinal of a block whose char range ends after `pos`."""
        if resource_id not in self._count:
            self._count[resource_id] = self.conn.execute(
                "SELECT COALESCE(MAX(ordinal), -1) FROM evidence_block WHERE resource_id = ?", [resource_id]
            ).fetchone()[0]
        lo, hi, found = 0, self._count[resource_id], None
        while lo <= hi:
            mid = (lo + hi) // 2
            probe = self._probe(resource_id, mid)
            if probe is None:
                hi = mid - 1
            elif probe[2] > pos:
                found, hi = probe[0], mid - 1
            else:
                lo = probe[0] + 1
        return found

    def overlapping(self, resource_id: str, text: str, span: Span) -> list[SpanBlock]:
        """Body blocks whose char range overlaps the span, in text order (only their rows are read)."""
        first = self._first_after(resource_id, span.start)
        if first is None:
            return []
        out = []
        for bid, kind, btext, ordinal, page, cr, role in self.conn.execute(
            "SELECT block_id, kind, text, ordinal, page, char_range_json, role FROM evidence_block "
            "WHERE resource_id = ? AND ordinal >= ? ORDER BY ordinal",
            [resource_id, first],
        ):
            if cr is None or role == ROLE_FURNITURE:
                continue
            a, b = json.loads(cr)
            if a >= span.end:
                break
            if b > span.start:
                out.append(SpanBlock(bid, kind, btext, ordinal, page, a, b, text[a:b] == btext))
        return out
