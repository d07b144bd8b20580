"""Full-text search over evidence blocks, ranked by bm25 and query-term precision.

bm25 alone ranks a paragraph that merely contains a longer compound (吡咯烷
inside N-甲基吡咯烷酮) as high as one about the term itself, because CJK has no
word boundaries for the index to see. After FTS picks candidates we look at
each occurrence of each CJK query term: an occurrence flanked by CJK characters
on both sides is most likely part of a longer word and counts least
(`flank_weight`, the one definition of that rule; citation mapping uses it too).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from mnote_evidence.build.model import ROLE_BODY, EvidenceLocator
from mnote_evidence.build.text import fts_query, is_cjk, query_terms

CANDIDATES_PER_RESULT = 5
MIN_CANDIDATES = 50
MAX_WINDOW = 50_000  # beyond this, rank all matches at once (a very selective filter)
_FLANK_WEIGHT = (1.0, 0.6, 0.25)  # by number of CJK neighbours (0, 1, 2)


@dataclass
class Hit:
    block_id: str
    resource_path: str
    resource_kind: str
    text: str
    score: float
    locator: EvidenceLocator
    role: str = ROLE_BODY


def flank_weight(text: str, start: int, end: int) -> float:
    """Weight of a CJK term occurring at text[start:end]: 1.0 standing alone, less per CJK
    neighbour (a neighbour on each side most likely makes it part of a longer word)."""
    flanked = (start > 0 and is_cjk(text[start - 1])) + (end < len(text) and is_cjk(text[end]))
    return _FLANK_WEIGHT[flanked]


def term_precision(text: str, terms: list[str]) -> float:
    """1.0 when every CJK term appears standing alone somewhere; less when only inside compounds."""
    weights = []
    for term in terms:
        if not is_cjk(term[0]):
            continue
        best, start = 0.0, text.find(term)
        while start >= 0 and best < 1.0:
            best = max(best, flank_weight(text, start, start + len(term)))
            start = text.find(term, start + 1)
        weights.append(best)
    return sum(weights) / len(weights) if weights else 1.0


def search_blocks(conn: sqlite3.Connection, query: str, top_k: int = 10,
                  kinds: list[str] | None = None, path_prefix: str | None = None,
                  include_furniture: bool = False) -> list[Hit]:
    """Ranked hits among `ok` resources; page furniture (running headers, footers, page numbers)
    only with `include_furniture`. Raises `build.text.QueryError` for an unusable query.

    bm25 ranks inside the FTS index first (a CTE with a LIMIT), and only those
    candidates are joined to blocks and resources: joining every match before
    sorting cost 3x the raw FTS query on a 1M-block index. When filters (stale
    files, furniture, kinds, path prefix) leave fewer than `top_k`, the window widens."""
    match = fts_query(query)
    terms = query_terms(query)
    window = max(MIN_CANDIDATES, top_k * CANDIDATES_PER_RESULT)
    while True:
        rows = _candidates(conn, match, window, kinds, path_prefix, include_furniture)
        if len(rows[0]) >= top_k or rows[1] < window or window < 0:
            break
        window = window * 8 if window * 8 <= MAX_WINDOW else -1  # -1: rank every match (no LIMIT)
    scored = [(Hit(bid, path, kind, text, round(-rank * (0.5 + term_precision(text, terms)), 6), json.loads(loc),
                   role), ordinal) for bid, path, kind, text, loc, rank, ordinal, role in rows[0]]
    # Equal scores (the same sentence on many pages) in document order: path, then the block's
    # ordinal, so page 2 comes before page 10 (block ids end in "-2", "-10" and sort as text).
    scored.sort(key=lambda t: (-t[0].score, t[0].resource_path, t[1]))
    return [hit for hit, _ in scored[:top_k]]


def _candidates(conn, match: str, window: int, kinds, path_prefix,
                include_furniture: bool = False) -> tuple[list[tuple], int]:
    """(rows passing the filters among the `window` best FTS matches, how many FTS matches were ranked)."""
    where, params = ["r.status = 'ok'"], [match, window]
    if not include_furniture:
        where.append(f"b.role = '{ROLE_BODY}'")
    if kinds:
        where.append(f"r.kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    if path_prefix:
        where.append("substr(r.source_root_relative_path, 1, ?) = ?")
        params.extend([len(path_prefix), path_prefix])
    rows = conn.execute(
        "WITH ranked AS (SELECT rowid, bm25(evidence_fts) AS rank FROM evidence_fts "
        "WHERE evidence_fts MATCH ? ORDER BY rank LIMIT ?) "
        "SELECT b.block_id, r.source_root_relative_path, r.kind, b.text, b.locator_json, ranked.rank, b.ordinal, b.role "
        "FROM ranked JOIN evidence_block b ON b.id = ranked.rowid "
        "JOIN evidence_resource r ON r.resource_id = b.resource_id "
        f"WHERE {' AND '.join(where)} ORDER BY ranked.rank", params).fetchall()
    if window < 0 or len(rows) >= window:
        return rows, window
    ranked = conn.execute("SELECT count(*) FROM (SELECT rowid FROM evidence_fts WHERE evidence_fts MATCH ? "
                          "LIMIT ?)", [match, window]).fetchone()[0]
    return rows, ranked
