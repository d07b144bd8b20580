"""The text each LightRAG document was made from, kept in `knowledge_text` (SPEC §9, §10).

LightRAG cuts a document into chunks that are exact substrings of the text we sent
(token windows, stripped). Keeping that text lets a citation find where a chunk
is, by offset, and cite only the blocks whose `charRange` lies there: the blocks'
char ranges index the same text (the `*.parse.md` / `*.ocr.md` sidecar text, or
the note itself). Stored as plain text with its sha256, written at insert time: zlib would
save about 3/4 of its size but cost ~3 ms per megabyte of text on every question
(bench/citation_truth.py, the 20 ms mapping budget).
"""

from __future__ import annotations

import hashlib


def text_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def pack_text(text: str) -> tuple[str, str]:
    """(text_hash, text) as stored in `knowledge_text`."""
    return text_hash(text), text
