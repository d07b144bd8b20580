"""`evidence.search`, `evidence.read`, `evidence.open` (SPEC §9): pure handlers.

Each takes a request dict and a `Context` and returns a response dict (typed in
`functions/core/contracts.py`). Each request is declared once as a `RequestSpec` (`SEARCH_REQUEST`,
`READ_REQUEST`, `OPEN_REQUEST`; `functions/core/validation.py`), which checks it here and is the MCP
tools' input schema; bad input raises a `HandlerError` (answered as 4xx by `errors.call`).
Invariants: `evidence.sqlite` is read only through `EvidenceDB` and input is never interpolated into
SQL; every answer is bounded (topK <= 50, quotes <= 280 chars, window <= 10); locators'
`openAction.url` carries the site's base URL, so a client can open it as is.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mnote_evidence.build.core.formats import indexed_kinds
from mnote_evidence.build.core.locator import OPEN_ACTION
from mnote_evidence.build.core.model import ROLE_BODY
from mnote_evidence.build.core.text import QueryError
from mnote_evidence.functions.core.cleaning import quote_window
from mnote_evidence.functions.core.contracts import (
    BOUNDARY_LOCAL,
    BOUNDARY_LOCAL_WITH_OCR,
    Context,
    SearchResponse,
    SearchResult,
    Via,
)
from mnote_evidence.functions.core.errors import BadRequest, Gone, NotFound
from mnote_evidence.functions.core.validation import (
    BLOCK_ID,
    CHOICE,
    CHOICES,
    FLAG,
    INTEGER,
    LOCATOR,
    TEXT,
    Field,
    RequestSpec,
    get_block_id,
)
from mnote_evidence.functions.search.fts import Filters, Hit, search_blocks
from mnote_evidence.functions.search.quote_check import mark_results
from mnote_evidence.functions.search.results import MAX_DEPTH, fts_page, result, with_base
from mnote_evidence.functions.search.snippet import snippet

KINDS = tuple(k.value for k in indexed_kinds())  # what a search may filter on (plain str)
MODES = ("fts", "graph", "hybrid")
MAX_TOP_K, DEFAULT_TOP_K = 50, 10
MAX_WINDOW, DEFAULT_WINDOW = 10, 2
GRAPH_DECAY = 0.5


# -- shared pieces -------------------------------------------------------------------
def _hit_for(conn: sqlite3.Connection, block_id: str) -> Hit | None:
    row = conn.execute(
        "SELECT b.block_id, r.source_root_relative_path, r.kind, b.text, b.locator_json "
        "FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
        "WHERE b.block_id = ? AND r.status = 'ok'",
        [block_id],
    ).fetchone()
    return Hit(row[0], row[1], row[2], row[3], 0.0, json.loads(row[4])) if row else None


def _passes(hit: Hit, kinds: list[str] | None, prefix: str | None) -> bool:
    return (not kinds or hit.resource_kind in kinds) and (not prefix or hit.resource_path.startswith(prefix))


def _graph(
    conn: sqlite3.Connection, seeds: list[Hit], query: str, kinds, prefix
) -> list[tuple[Hit, float, Via]]:
    """Follow link edges from each FTS hit: notes that link to its resource (their linking
    block), and resources its block links to (their best block for the query)."""
    found: list[tuple[Hit, float, Via]] = []
    for seed in seeds:  # the evidence_link_edge view (build/index/schema.py)
        rows = conn.execute(
            "SELECT e.source_block_id, e.edge_type FROM evidence_link_edge e JOIN evidence_resource r "
            "ON r.resource_id = e.to_id WHERE r.source_root_relative_path = ? ORDER BY e.link_rowid",
            [seed.resource_path],
        ).fetchall()
        for source_block, edge_type in rows:
            hit = _hit_for(conn, source_block)
            if hit:
                found.append(
                    (
                        hit,
                        seed.score * GRAPH_DECAY,
                        {"edgeType": edge_type, "direction": "in", "fromEvidenceId": seed.block_id},
                    )
                )
        for to_id, edge_type in conn.execute(
            "SELECT to_id, edge_type FROM evidence_link_edge WHERE source_block_id = ? ORDER BY link_rowid",
            [seed.block_id],
        ).fetchall():
            hit = _best_block_of(conn, to_id, query)
            if hit:
                found.append(
                    (
                        hit,
                        seed.score * GRAPH_DECAY,
                        {"edgeType": edge_type, "direction": "out", "fromEvidenceId": seed.block_id},
                    )
                )
    return [(h, s, v) for h, s, v in found if _passes(h, kinds, prefix)]


def _best_block_of(conn: sqlite3.Connection, resource_id: str, query: str) -> Hit | None:
    path = conn.execute(
        "SELECT source_root_relative_path FROM evidence_resource WHERE resource_id = ? AND status = 'ok'",
        [resource_id],
    ).fetchone()
    if not path:
        return None
    hits = search_blocks(conn, query, 5, path_prefix=path[0])
    hits = [h for h in hits if h.resource_path == path[0]]
    if hits:
        return hits[0]
    first = conn.execute(
        "SELECT block_id FROM evidence_block WHERE resource_id = ? AND role = ? ORDER BY ordinal LIMIT 1",
        [resource_id, ROLE_BODY],
    ).fetchone()
    return _hit_for(conn, first[0]) if first else None


# -- evidence.search -------------------------------------------------------------------
GROUP_BY = ("none", "document")
MAX_PER_DOCUMENT, DEFAULT_PER_DOCUMENT = 5, 3
SEARCH_REQUEST = RequestSpec(
    Field("query", TEXT, "Words or a phrase to find (Chinese substrings and English words).", required=True),
    Field(
        "mode",
        CHOICE,
        "fts: full-text; graph: follow links from the hits; hybrid: both.",
        default="fts",
        choices=MODES,
    ),
    Field(
        "topK",
        INTEGER,
        "How many results (with groupBy=document: files) per page.",
        default=DEFAULT_TOP_K,
        lo=1,
        hi=MAX_TOP_K,
    ),
    Field(
        "offset",
        INTEGER,
        "Results (or files) to skip: the previous answer's nextOffset (fts mode).",
        default=0,
        lo=0,
        hi=MAX_DEPTH - 1,
    ),
    Field(
        "groupBy",
        CHOICE,
        "document: one entry per file, its best passages first (fts mode).",
        default="none",
        choices=GROUP_BY,
    ),
    Field(
        "perDocument",
        INTEGER,
        "With groupBy=document: passages shown per file.",
        default=DEFAULT_PER_DOCUMENT,
        lo=1,
        hi=MAX_PER_DOCUMENT,
    ),
    Field("resourceKinds", CHOICES, "Only these kinds of files.", choices=KINDS),
    Field("pathPrefix", TEXT, "Only files whose workspace path starts with this string.", max_len=500),
    Field(
        "folder",
        TEXT,
        "Only files in this folder and below (研究 matches 研究/…, never 研究2/…).",
        max_len=500,
    ),
    Field("resourcePath", TEXT, "Only this file (its workspace path), e.g. a group's expand.", max_len=1000),
    Field("includeFurniture", FLAG, "Also rank PDF page furniture (running headers, footers, page numbers)."),
    Field("includeOcr", FLAG, "Add LightRAG hits on OCR'd sources when local results are fewer than topK."),
    Field("prefixLast", FLAG, "Match the query's last word (3+ characters) as a prefix, as the user types."),
)


def search(request: dict, ctx: Context) -> SearchResponse:
    args = SEARCH_REQUEST.parse(request)
    query, mode, top_k, offset = args["query"], args["mode"], args["topK"], args["offset"]
    group_by, per_document, include_ocr = args["groupBy"], args["perDocument"], args["includeOcr"]
    filters = Filters(
        kinds=args["resourceKinds"],
        path_prefix=args["pathPrefix"],
        folder=args["folder"],
        resource_path=args["resourcePath"],
        include_furniture=args["includeFurniture"],
    )
    if mode != "fts" and (offset or group_by != "none"):
        raise BadRequest(f"'offset' and 'groupBy' page and group full-text results: use mode fts, not {mode}")
    if group_by == "none" and offset + top_k > MAX_DEPTH:
        raise BadRequest(f"'offset' + 'topK' must be at most {MAX_DEPTH}: refine the query or add filters")
    conn = ctx.db.connect()
    try:
        hits, terms, page = fts_page(
            conn,
            query,
            ctx,
            filters,
            top_k,
            offset,
            group_by if group_by != "none" else None,
            per_document,
            args["prefixLast"],
        )
    except QueryError as exc:
        raise BadRequest(f"query has nothing to search for: {exc}") from exc
    except sqlite3.OperationalError as exc:  # defence in depth: fts_query never emits bad syntax
        raise BadRequest(f"query could not be run: {exc}") from exc
    fts_results: list[SearchResult] = page.pop("results")
    results = fts_results if mode in ("fts", "hybrid") else []
    if mode in ("graph", "hybrid"):
        page.pop("nextOffset", None)
        seen = {r["evidenceId"] for r in results} | ({h.block_id for h in hits} if mode == "graph" else set())
        kinds, prefix = filters.kinds, filters.path_prefix
        graph = [
            (h, s, v)
            for h, s, v in _graph(conn, hits, query, kinds, prefix)
            if filters.passes(h.resource_path, h.resource_kind, "ok", h.role)
        ]
        for hit, score, via in sorted(graph, key=lambda t: -t[1]):
            if hit.block_id not in seen:
                seen.add(hit.block_id)
                results.append(result(hit, terms, ctx, "graph", score, via))
        results = results[:top_k]
    out: SearchResponse = {
        "ok": True,
        "query": query,
        "mode": mode,
        "results": results,
        "offset": offset,
        **page,
        "boundary": {"kind": BOUNDARY_LOCAL},
        "degraded": False,
    }
    if include_ocr:
        out["boundary"] = {"kind": BOUNDARY_LOCAL_WITH_OCR}
        if len(out["results"]) < top_k and group_by == "none":  # SPEC §11: only when local hits are fewer
            # imported here: the LightRAG client and citation mapping load only for includeOcr
            from mnote_evidence.functions.handlers.retrieval import ocr_results

            extra, reason = ocr_results(ctx, query, top_k, {r["evidenceId"] for r in results})
            for r in extra[: top_k - len(out["results"])]:
                out["results"].append({**r, "snippet": snippet(r["quote"], terms)})
            if reason:
                out.update(degraded=True, degradedReason=reason)
    mark_results(conn, out["results"])
    return out


# -- evidence.read ----------------------------------------------------------------------
READ_REQUEST = RequestSpec(
    Field("blockId", BLOCK_ID, "The block to read: an evidenceId from a search result."),
    Field("locator", LOCATOR, "Or a locator as returned in a result's source (its blockId is used)."),
    Field(
        "window",
        INTEGER,
        "Neighbouring blocks to include on each side (same page or section).",
        default=DEFAULT_WINDOW,
        lo=0,
        hi=MAX_WINDOW,
    ),
    one_of=("blockId", "locator"),
)


def _resolve(conn: sqlite3.Connection, block_id: str) -> tuple[sqlite3.Row, str | None]:
    """The block row (following the anchor map if the id was retired) and the id redirected from."""
    redirected = None
    row = _block_row(conn, block_id)
    if row is None:
        alias = conn.execute(
            "SELECT successor_block_id FROM evidence_anchor WHERE old_block_id = ?", [block_id]
        ).fetchone()
        if alias is None:
            raise NotFound(f"no block {block_id} in this index")
        if alias[0] is None:
            raise Gone(f"block {block_id} was removed from its document and has no successor", "removed")
        redirected, row = block_id, _block_row(conn, alias[0])
    if row["status"] != "ok":
        raise Gone(f"block {row['block_id']} belongs to a deleted file ({row['path']})")
    return row, redirected


def _block_row(conn: sqlite3.Connection, block_id: str) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT b.*, r.status, r.source_root_relative_path AS path, r.kind AS resource_kind "
        "FROM evidence_block b JOIN evidence_resource r USING (resource_id) WHERE b.block_id = ?",
        [block_id],
    ).fetchone()


def _brief(row: sqlite3.Row, ctx: Context) -> dict[str, Any]:
    return {
        "evidenceId": row["block_id"],
        "kind": row["kind"],
        "text": quote_window(row["text"], [], 600),
        "source": with_base(json.loads(row["locator_json"]), ctx.site_base),
    }


def read(request: dict, ctx: Context) -> dict:
    window = READ_REQUEST.parse(request)["window"]
    conn = ctx.db.connect()
    row, redirected = _resolve(conn, get_block_id(request))
    scope, params = "", []
    if row["page"] is not None:
        scope, params = "AND page = ?", [row["page"]]
    elif row["section_id"] is not None:
        scope, params = "AND section_id = ?", [row["section_id"]]
    neighbours = conn.execute(
        f"SELECT b.*, 'ok' AS status FROM evidence_block b WHERE resource_id = ? {scope} "
        "AND ordinal BETWEEN ? AND ? AND block_id != ? ORDER BY ordinal",
        [row["resource_id"], *params, row["ordinal"] - window, row["ordinal"] + window, row["block_id"]],
    ).fetchall()
    out = {
        "ok": True,
        "anchor": _brief(row, ctx),
        "neighbours": [_brief(n, ctx) for n in neighbours],
        "neighbourScope": "page"
        if row["page"] is not None
        else ("section" if row["section_id"] else "resource"),
        "section": _section(conn, row["resource_id"], row["section_id"]),
        "ownerReferences": _references(conn, row["path"], ctx),
    }
    if redirected:
        out["redirectedFrom"] = redirected
    return out


def _section(conn: sqlite3.Connection, resource_id: str, section_id: str | None) -> dict[str, Any] | None:
    if section_id is None:
        return None
    s = conn.execute("SELECT * FROM evidence_section WHERE section_id = ?", [section_id]).fetchone()
    first = conn.execute(
        "SELECT text FROM evidence_block_row WHERE resource_id = ? AND section_id = ? "
        "ORDER BY ordinal LIMIT 3",
        [resource_id, section_id],
    ).fetchall()
    out = {
        "sectionId": s["section_id"],
        "title": s["title"],
        "path": json.loads(s["path_json"]),
        "blockCount": s["block_count"],
        "summary": quote_window(" ".join(r[0] for r in first), [], 400),
    }
    if s["page_start"] is not None:
        out["pageStart"], out["pageEnd"] = s["page_start"], s["page_end"]
    return out


def _references(conn: sqlite3.Connection, path: str, ctx: Context) -> list[dict[str, Any]]:
    """Lines of notes that link to this resource (its owner note first)."""
    rows = conn.execute(
        "SELECT b.*, r.status, r.owner_document_path FROM evidence_link l "
        "JOIN evidence_block b ON b.block_id = l.source_block_id "
        "JOIN evidence_resource r USING (resource_id) "
        "WHERE l.target_path = ? AND r.status = 'ok' "
        "ORDER BY r.source_root_relative_path, b.ordinal LIMIT 20",
        [path],
    ).fetchall()
    return [_brief(r, ctx) for r in rows]


# -- evidence.open ----------------------------------------------------------------------
OPEN_REQUEST = RequestSpec(
    Field("blockId", BLOCK_ID, "The block to open: an evidenceId from a search result."),
    Field(
        "locator",
        LOCATOR,
        "Or a locator: one with a blockId, or {resourcePath, page, bbox} for any box of a page.",
    ),
    one_of=("blockId", "locator"),
)


def open_(request: dict, ctx: Context) -> dict:
    OPEN_REQUEST.parse(request)
    locator = request.get("locator")
    if request.get("blockId") is None and isinstance(locator, dict) and not locator.get("blockId"):
        return _open_box(locator, ctx)
    conn = ctx.db.connect()
    row, redirected = _resolve(conn, get_block_id(request))
    loc = with_base(json.loads(row["locator_json"]), ctx.site_base)
    out = {
        "ok": True,
        "openAction": loc["openAction"],
        "resourcePath": loc["resourcePath"],
        "blockId": loc["blockId"],
        "precision": loc["precision"],
    }
    for key in ("page", "bbox", "lineRange", "paragraphIndex"):
        if key in loc:
            out[key] = loc[key]
    if redirected:
        out["redirectedFrom"] = redirected
    return out


def _open_box(locator: dict, ctx: Context) -> dict:
    """A locator with a page (and bbox) but no block: open the page at that box."""
    path = locator.get("resourcePath")
    if not isinstance(path, str) or not path:
        raise BadRequest("a locator without blockId needs 'resourcePath'")
    row = (
        ctx.db.connect()
        .execute(
            "SELECT kind, page_count, status, page_url FROM evidence_resource "
            "WHERE source_root_relative_path = ?",
            [path],
        )
        .fetchone()
    )
    if row is None:
        raise NotFound(f"no resource {path!r} in this index")
    url = row["page_url"]  # the site's placement of this file's page (`urls.Pages`), as indexed
    page, bbox = locator.get("page"), locator.get("bbox")
    if page is not None:
        if page > (row["page_count"] or 1):  # its type and the box's: `check_locator` (OPEN_REQUEST)
            raise BadRequest(f"'page' must be from 1 to {row['page_count'] or 1}")
        url += f"#page-{page}"
        if bbox is not None:
            url = row["page_url"] + f"?page={page}&bbox={','.join(f'{v:g}' for v in bbox)}"
    return {
        "ok": True,
        "openAction": {"type": OPEN_ACTION, "url": ctx.site_base + url},
        "resourcePath": path,
        "precision": "bbox" if bbox is not None else "file",
    }
