"""`verify_quote`: is this sentence at the place a citation opens? A pure handler (SPEC §9, §10).

Request: `{quote, blockId | locator | citationUrl}` (none of them: anywhere in the index). The quote
is compared with the block texts of the index by `build/core/quote_match.py` (NFKC, case, hyphenation,
CJK by characters). The cited place is a block (blockId, a locator's blockId, or a URL's
`#blockId`; a retired id follows the anchor map as `evidence.read` does), a page (`#page-N`), a
box (`?page=N&bbox=…`: the blocks whose box centre lies in it) or a whole file (a page URL alone).

Answer: `verdict` `found` (the quote's words are in a block of the cited place), `found_elsewhere`
(not there, but a block elsewhere holds them all) or `not_found`; `match`, the block holding the
quote or else the most similar one (its `similarity`: share of the quote's words it has, in order),
with its locator; `diagnostics.reason` when the cited place did not hold the quote. A block whose
PDF box was found at build time not to hold its words (`evidence_block.box_holds_text = 0`) is
answered at page precision, never `bbox` (`functions/search/quote_check.py`).

Invariants: read-only; bounded work (one cited resource's FTS candidates, MAX_CANDIDATES blocks of
the index); never a 500 for a bad request: no words, two targets, an unknown block or page -> 4xx.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from mnote_evidence.build.core.quote_match import match_form, quote_in, similarity
from mnote_evidence.build.core.text import CJK_RUN, QueryError, fts_query, query_terms
from mnote_evidence.functions.citations import url as citation_url
from mnote_evidence.functions.core.cleaning import clean_text, quote_window
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.errors import BadRequest, NotFound
from mnote_evidence.functions.core.validation import (
    BLOCK_ID,
    LOCATOR,
    TEXT,
    Field,
    RequestSpec,
    get_block_id,
    get_str,
)
from mnote_evidence.functions.handlers.evidence import _resolve
from mnote_evidence.functions.search.quote_check import checked_locator
from mnote_evidence.functions.search.results import with_base

MAX_QUOTE_CHARS = 2000
MAX_URL_CHARS = 2000
MAX_CANDIDATES = 40  # blocks of the index compared when the cited place does not hold the quote
MAX_OR_TERMS = 24
CJK_PIECE = 4
COMMON = 2000  # a word in this many blocks or more does not pick best-match candidates
MIN_SIMILARITY = 0.2  # below this, no block is offered as the best match

_COLUMNS = (
    "b.block_id, b.text, b.kind, b.page, b.bbox_json, b.locator_json, b.ordinal, b.resource_id, "
    "b.box_holds_text, r.source_root_relative_path AS path"
)
_FROM = "FROM evidence_block b JOIN evidence_resource r USING (resource_id)"


@dataclass
class Target:
    scope: str  # block | page | box | file | index
    rows: list[sqlite3.Row]  # the blocks of the cited place (empty for index)
    path: str | None = None
    block_id: str | None = None
    page: int | None = None
    bbox: list[float] | None = None
    redirected_from: str | None = None
    resource_id: str | None = None

    def to_json(self) -> dict:
        out: dict = {"scope": self.scope}
        for key, value in (
            ("resourcePath", self.path),
            ("blockId", self.block_id),
            ("page", self.page),
            ("bbox", self.bbox),
        ):
            if value is not None:
                out[key] = value
        return out


def _rows(conn: sqlite3.Connection, where: str, params: list) -> list[sqlite3.Row]:
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    return cur.execute(
        f"SELECT {_COLUMNS} {_FROM} WHERE r.status = 'ok' AND {where} ORDER BY b.ordinal", params
    ).fetchall()


def _inside(bbox: list[float], box: list[float]) -> bool:
    cx, cy = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    return box[0] <= cx <= box[2] and box[1] <= cy <= box[3]


def _target(request: dict, conn: sqlite3.Connection) -> Target:
    url = get_str(request, "citationUrl", max_len=MAX_URL_CHARS)
    has_block = request.get("blockId") is not None or request.get("locator") is not None
    if url is not None and has_block:
        raise BadRequest("give one of 'blockId', 'locator' or 'citationUrl', not several")
    if url is None and not has_block:
        return Target("index", [])
    place = citation_url.parse(url) if url is not None else None
    if place is None or place.block_id:
        block_id = place.block_id if place else get_block_id(request)
        row, redirected = _resolve(conn, block_id)
        rows = _rows(conn, "b.block_id = ?", [row["block_id"]])
        return Target(
            "block",
            rows,
            row["path"],
            row["block_id"],
            row["page"],
            redirected_from=redirected,
            resource_id=row["resource_id"],
        )
    found = citation_url.resource_for(conn, place)
    if found is None:
        raise NotFound("citationUrl names no file of this index")
    rid, path, page_count = found
    if place.page is None:
        return Target("file", [], path, resource_id=rid)
    if not 1 <= place.page <= (page_count or 0):
        raise BadRequest(f"citationUrl: {path} has no page {place.page}")
    rows = _rows(conn, "b.resource_id = ? AND b.page = ?", [rid, place.page])
    if place.bbox is not None:
        rows = [r for r in rows if r["bbox_json"] and _inside(json.loads(r["bbox_json"]), place.bbox)]
        return Target("box", rows, path, page=place.page, bbox=place.bbox, resource_id=rid)
    return Target("page", rows, path, page=place.page, resource_id=rid)


def _holds(quote: str, text: str) -> bool:
    """The quote is in the block's text, or in its text cleaned of markup (raw HTML in a note)."""
    return quote_in(quote, match_form(text)) or quote_in(quote, match_form(clean_text(text, markdown=False)))


def _terms(quote: str) -> list[str]:
    """The quote's words for a best-match search: Latin words, and CJK runs in pieces of up to
    CJK_PIECE characters (a reworded sentence keeps some of its pieces, rarely a whole run)."""
    out: dict[str, None] = {}
    for term in query_terms(quote):
        if CJK_RUN.fullmatch(term):
            for i in range(0, max(1, len(term) - 1), CJK_PIECE - 1):
                out.setdefault(term[i : i + CJK_PIECE])
        else:
            out.setdefault(term.lower())
    return [t for t in out if len(t) > 1][:MAX_OR_TERMS]


def _fts(
    conn: sqlite3.Connection, quote: str, limit: int, resource_id: str | None = None, every_word: bool = False
) -> list[sqlite3.Row]:
    """Blocks the FTS index ranks best for the quote: holding all of its words (`every_word`), or
    else any of its rarer words. Inside one resource the search is a rowid range (a resource's
    blocks are written with consecutive ids), so its cost does not grow with the index."""
    span, params, mine, owner = "", [], "", []
    if resource_id:
        lo, hi = conn.execute(
            "SELECT min(id), max(id) FROM evidence_block WHERE resource_id = ?", [resource_id]
        ).fetchone()
        if lo is None:
            return []
        span, params, mine, owner = (
            "AND rowid BETWEEN ? AND ?",
            [lo, hi],
            "AND b.resource_id = ?",
            [resource_id],
        )
    try:
        match = fts_query(quote) if every_word else _rare_match(conn, quote, span, params)
    except QueryError:
        return []
    if not match:
        return []
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    return cur.execute(
        "WITH ranked AS (SELECT rowid, bm25(evidence_fts) AS rank FROM evidence_fts "
        "WHERE evidence_fts MATCH ? "
        f"{span} ORDER BY rank LIMIT ?) SELECT {_COLUMNS} FROM ranked "
        "JOIN evidence_block b ON b.id = ranked.rowid "
        f"JOIN evidence_resource r USING (resource_id) WHERE r.status = 'ok' {mine} ORDER BY ranked.rank",
        [match, *params, limit, *owner],
    ).fetchall()


def _rare_match(conn: sqlite3.Connection, quote: str, span: str, params: list) -> str | None:
    """An FTS expression for blocks like the quote: any of its words that are not common (in fewer
    than COMMON blocks), or, when every word is common, the three rarest together. Counting stops at
    COMMON, so a word in every block costs no more than a rare one."""
    counted = []
    for term in _terms(quote):
        match = fts_query(term)
        n = conn.execute(
            f"SELECT count(*) FROM (SELECT rowid FROM evidence_fts WHERE evidence_fts MATCH ? {span} "
            "LIMIT ?)",
            [match, *params, COMMON],
        ).fetchone()[0]
        if n:
            counted.append((n, match))
    counted.sort()
    rare = [m for n, m in counted if n < COMMON]
    if rare:
        return " OR ".join(f"({m})" for m in rare)
    return " AND ".join(f"({m})" for _, m in counted[:3]) or None


def _match(row: sqlite3.Row, quote: str, score: float, ctx: Context) -> dict:
    terms = query_terms(quote)
    loc, verified, reason = checked_locator(row, score == 1.0)
    out = {
        "evidenceId": row["block_id"],
        "similarity": score,
        "quoteVerified": verified,
        "precision": loc["precision"],
        "quote": quote_window(clean_text(row["text"], markdown=False), terms),
        "source": with_base(loc, ctx.site_base),
    }
    if reason:
        out["reason"] = reason
    return out


VERIFY_REQUEST = RequestSpec(
    Field(
        "quote",
        TEXT,
        "The sentence or words to check, as they will be shown.",
        required=True,
        max_len=MAX_QUOTE_CHARS,
    ),
    Field("blockId", BLOCK_ID, "The cited block (an evidenceId or a citation's blockId)."),
    Field("locator", LOCATOR, "Or the cited locator (its blockId is used)."),
    Field(
        "citationUrl",
        TEXT,
        "Or the citation's URL (citationUrl / openAction.url): its block, page, box or file.",
        max_len=MAX_URL_CHARS,
    ),
)


def verify_quote(request: dict, ctx: Context) -> dict:
    quote = VERIFY_REQUEST.parse(request)["quote"]
    if not match_form(quote.replace("…", " ")):
        raise BadRequest("'quote' has no words to check")
    conn = ctx.db.connect()
    target = _target(request, conn)
    cited = target.rows
    if target.scope == "file":  # a whole file: its blocks that hold every word of the quote
        cited = _fts(conn, quote, MAX_CANDIDATES, target.resource_id, every_word=True)
    here = next((r for r in cited if _holds(quote, r["text"])), None)
    verdict, best, score = "found", here, 1.0
    if here is None and target.scope == "index":
        here = next(
            (r for r in _fts(conn, quote, MAX_CANDIDATES, every_word=True) if _holds(quote, r["text"])), None
        )
        best = here
    if here is None:
        verdict, best, score = _best(conn, quote, target, cited)
    out: dict = {
        "ok": True,
        "verdict": verdict,
        "found": verdict == "found",
        "quote": quote,
        "target": target.to_json(),
        "diagnostics": {},
    }
    if best is not None and score >= MIN_SIMILARITY:
        out["match"] = _match(best, quote, score, ctx)
    if verdict != "found" and target.scope != "index":
        out["diagnostics"]["reason"] = f"quote_not_in_{target.scope}"
    if target.redirected_from:
        out["diagnostics"]["redirectedFrom"] = target.redirected_from
    return out


def _best(
    conn: sqlite3.Connection, quote: str, target: Target, cited: list[sqlite3.Row]
) -> tuple[str, sqlite3.Row | None, float]:
    """(verdict, the block holding the quote elsewhere or else the most similar block, its similarity)."""
    seen: dict[str, sqlite3.Row] = {}
    pools = [cited]
    if target.resource_id:
        pools.append(_fts(conn, quote, MAX_CANDIDATES // 2, target.resource_id))
    pools.append(_fts(conn, quote, MAX_CANDIDATES))
    for pool in pools:
        for r in pool:
            seen.setdefault(r["block_id"], r)
    mine = {r["block_id"] for r in cited}
    for r in seen.values():
        if r["block_id"] not in mine and _holds(quote, r["text"]):
            return "found_elsewhere", r, 1.0
    scored = [(similarity(quote, r["text"]), i, r) for i, r in enumerate(seen.values())]
    if not scored:
        return "not_found", None, 0.0
    score, _, row = max(scored, key=lambda t: (t[0], -t[1]))
    return "not_found", row, min(score, 0.9999)  # 1.0 only for a block that holds the quote
