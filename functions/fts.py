"""Full-text search over evidence blocks, ranked by bm25 and query-term precision.

bm25 alone ranks a paragraph that merely contains a longer compound (吡咯烷
inside N-甲基吡咯烷酮) as high as one about the term itself, because CJK has no
word boundaries for the index to see. After FTS picks candidates we look at
each occurrence of each CJK query term: an occurrence flanked by CJK characters
on both sides is most likely part of a longer word and counts least.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from build.text import fts_query, is_cjk, query_terms

CANDIDATES_PER_RESULT = 5
MIN_CANDIDATES = 50
_FLANK_WEIGHT = (1.0, 0.6, 0.25)  # by number of CJK neighbours (0, 1, 2)


@dataclass
class Hit:
    block_id: str
    resource_path: str
    resource_kind: str
    text: str
    score: float
    locator: dict[str, Any]


def term_precision(text: str, terms: list[str]) -> float:
    """1.0 when every CJK term appears standing alone somewhere; less when only inside compounds."""
    weights = []
    for term in terms:
        if not is_cjk(term[0]):
            continue
        best, start = 0.0, text.find(term)
        while start >= 0 and best < 1.0:
            end = start + len(term)
            flanked = (start > 0 and is_cjk(text[start - 1])) + (end < len(text) and is_cjk(text[end]))
            best = max(best, _FLANK_WEIGHT[flanked])
            start = text.find(term, start + 1)
        weights.append(best)
    return sum(weights) / len(weights) if weights else 1.0


def search_blocks(conn: sqlite3.Connection, query: str, top_k: int = 10,
                  kinds: list[str] | None = None, path_prefix: str | None = None) -> list[Hit]:
    """Ranked hits among `ok` resources. Raises `build.text.QueryError` for an unusable query."""
    match = fts_query(query)
    where = ["evidence_fts MATCH ?", "r.status = 'ok'"]
    params: list[Any] = [match]
    if kinds:
        where.append(f"r.kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    if path_prefix:
        where.append("substr(r.source_root_relative_path, 1, ?) = ?")
        params.extend([len(path_prefix), path_prefix])
    params.append(max(MIN_CANDIDATES, top_k * CANDIDATES_PER_RESULT))
    rows = conn.execute(
        "SELECT b.block_id, r.source_root_relative_path, r.kind, b.text, b.locator_json, "
        "bm25(evidence_fts) AS rank FROM evidence_fts "
        "JOIN evidence_block b ON b.id = evidence_fts.rowid "
        "JOIN evidence_resource r ON r.resource_id = b.resource_id "
        f"WHERE {' AND '.join(where)} ORDER BY rank LIMIT ?", params).fetchall()
    terms = query_terms(query)
    hits = [Hit(bid, path, kind, text, round(-rank * (0.5 + term_precision(text, terms)), 6),
                json.loads(loc)) for bid, path, kind, text, loc, rank in rows]
    hits.sort(key=lambda h: (-h.score, h.block_id))
    return hits[:top_k]
