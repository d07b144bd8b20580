"""The text each LightRAG document was made from, kept in `knowledge_text` (SPEC §9, §10).

LightRAG cuts a document into chunks that are exact substrings of the text we sent, so keeping that
text lets a citation find a chunk by offset and cite only the blocks whose `charRange` lies there (the
blocks' char ranges index the same text: the sidecar text, or the note itself). Stored as plain text
with its sha256 (compression would cost time on every question: docs/performance.md).
`ingest_text` blanks each furniture block's char range (running headers, footers, page numbers) with
spaces: the text keeps its length, so every other `charRange` still indexes it exactly, and no chunk
carries a header's words.
"""

from __future__ import annotations

import hashlib

from mnote_evidence.build.core.model import ROLE_FURNITURE, Block


def text_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def pack_text(text: str) -> tuple[str, str]:
    """(text_hash, text) as stored in `knowledge_text`."""
    return text_hash(text), text


def ingest_text(text: str, blocks: list[Block]) -> str:
    """`text` with every furniture block's char range replaced by as many spaces (offsets unchanged)."""
    ranges = sorted(b.char_range for b in blocks if b.role == ROLE_FURNITURE and b.char_range)
    if not ranges:
        return text
    parts, pos = [], 0
    for start, end in ranges:
        start, end = max(start, pos), min(end, len(text))
        if end > start:
            parts += [text[pos:start], " " * (end - start)]
            pos = end
    parts.append(text[pos:])
    return "".join(parts)


def furniture_blocks(doc: dict | None) -> list[Block]:
    """The furniture blocks source map `doc` lists (none without one)."""
    if not doc:
        return []
    found = [b for p in doc.get("pages", []) for b in p.get("blocks", [])] + doc.get("blocks", [])
    return [Block.from_json(b) for b in found if b.get("role") == ROLE_FURNITURE]
