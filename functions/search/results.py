"""One page of `evidence.search` full-text results: snippets, total, pagination, grouping (SPEC §9).

`evidence.search` validates the request and calls `fts_page`; this module turns ranked hits
(`functions/search/fts.py`) into the response's result dicts and page fields (typed in
`functions/core/contracts.py`, published in `schemas/search_response.schema.json`).

Invariants:
- pages of one query and `topK` partition the ranking: stepping `offset` by `nextOffset` never
  repeats or skips a result (`fts.rank` re-ranks fixed chunks);
- `total` counts the matches passing the filters among the `fts.RANK_WINDOW` (250) best at least
  (deeper pages rank deeper); when more matched it is a lower bound (`totalIsLowerBound: true`):
  counting every match of a frequent term through the filters costs more than ranking it;
- grouped by document, a page holds `topK` files (their best `perDocument` blocks each, in rank
  order) and `offset` counts files; `more` is how many other matches the file has, fetched by
  repeating the query with the group's `expand` fields.
"""

from __future__ import annotations

import copy
import sqlite3

from mnote_evidence.build.core.model import ROLE_BODY, EvidenceLocator
from mnote_evidence.functions.core.cleaning import quote_window
from mnote_evidence.functions.core.contracts import Context, Group, SearchResult, Via
from mnote_evidence.functions.search.fts import (
    LEVEL_BLOCK,
    MATCH_ALL,
    MATCH_ANY,
    Filters,
    Hit,
    Ranked,
    chunk_size,
    count_in_resource,
    match_of,
    rank,
)
from mnote_evidence.functions.search.snippet import snippet

SOME_WORDS = "no passage holds every word: these hold some of them (more, and rarer, first)"  # matchMode any
MAX_DEPTH = 1000  # offset + topK: how deep pages go (as deep as `total` counts exactly)
COUNT_CAP = 1000  # a file's matches counted for a group's `more`


def with_base(locator: EvidenceLocator, base: str) -> EvidenceLocator:
    out = copy.deepcopy(locator)
    out["openAction"]["url"] = base + out["openAction"]["url"]
    return out


def result(
    hit: Hit, terms: list[str], ctx: Context, source: str, score: float, via: Via | None = None
) -> SearchResult:
    out: SearchResult = {
        "evidenceId": hit.block_id,
        "quote": quote_window(hit.text, terms),
        "snippet": snippet(hit.text, terms),
        "score": round(score, 4),
        "matchSource": source,
        "source": with_base(hit.locator, ctx.site_base),
    }
    if via:
        out["via"] = via
    if hit.level != LEVEL_BLOCK:  # the query's words are across this page's (section's) blocks
        out["matchLevel"] = hit.level
        out["alsoMatched"] = hit.also or []
    if hit.role != ROLE_BODY:
        out["role"] = hit.role  # only with includeFurniture: a running header, footer or page number
    return out


def where(loc: EvidenceLocator) -> str:
    """A result's place for people: file · p.3 / lines 4-6 / ¶2 · section > path (CLI and search page)."""
    first, last = loc.get("lineRange", (0, 0))
    place = (
        f"p.{loc['page']}"
        if "page" in loc
        else (f"line {first}" if first == last else f"lines {first}-{last}")
        if "lineRange" in loc
        else f"¶{loc['paragraphIndex']}"
        if "paragraphIndex" in loc
        else ""
    )
    return " · ".join(x for x in (loc["resourcePath"], place, " > ".join(loc.get("sectionPath", []))) if x)


def across(r: SearchResult) -> str:
    """What a page or section hit says of itself (CLI, MCP text); "" for a block hit."""
    level = r.get("matchLevel")
    if not level:
        return ""
    return f"the words across {len(r['alsoMatched']) + 1} passages of this {level}"


def fts_page(
    conn: sqlite3.Connection,
    query: str,
    ctx: Context,
    filters: Filters,
    top_k: int,
    offset: int,
    group_by: str | None,
    per_document: int,
    prefix_last: bool = False,
) -> tuple[list[Hit], list[str], dict]:
    """(the page's hits, the terms they match, the response fields it sets: results, total, nextOffset,
    groups, matchMode). A query no block matches with every term (under the filters) is ranked again
    matching any of its meaning-bearing terms (`matchMode: "any"`); every page of it does the same."""
    for mode in (MATCH_ALL, MATCH_ANY):
        if group_by == "document":
            hits, ranked, fields = _grouped(
                conn, query, ctx, filters, top_k, offset, per_document, mode, prefix_last
            )
        else:
            hits, ranked, fields = _flat(conn, query, ctx, filters, top_k, offset, mode, prefix_last)
        if ranked.total or match_of(query, MATCH_ANY)[0] == ranked.match:
            break  # found, or the same expression (one word)
    return hits, ranked.terms, {**fields, "matchMode": mode}


def _flat(conn, query, ctx, filters, top_k, offset, mode, prefix_last) -> tuple[list[Hit], Ranked, dict]:
    ranked = rank(conn, query, offset + top_k, chunk_size(top_k), filters, mode=mode, prefix_last=prefix_last)
    hits = ranked.hits[offset : offset + top_k]
    terms = ranked.terms
    fields = {
        "results": [result(h, terms, ctx, "fts", h.score) for h in hits],
        **_totals(ranked.total, ranked.exhausted),
    }
    end = offset + len(hits)
    if len(hits) == top_k and end < ranked.total and end < MAX_DEPTH:
        fields["nextOffset"] = end
    return ranked.hits[: offset + top_k], ranked, fields


def _totals(total: int, exact: bool) -> dict:
    return {"total": total, "totalIsLowerBound": not exact}


def _grouped(
    conn, query, ctx, filters, top_k, offset, per_document, mode, prefix_last
) -> tuple[list[Hit], Ranked, dict]:
    ranked = rank(
        conn,
        query,
        0,
        chunk_size(top_k),
        filters,
        documents=offset + top_k + 1,
        per_document=per_document,
        mode=mode,
        prefix_last=prefix_last,
    )
    terms = ranked.terms
    by_path: dict[str, list[Hit]] = {}
    for hit in ranked.hits:
        by_path.setdefault(hit.resource_path, []).append(hit)
    paths = list(by_path)[offset : offset + top_k]
    results: list[SearchResult] = []
    groups: list[Group] = []
    for path in paths:
        shown = by_path[path][:per_document]
        found, exact = ranked.per_path[path], ranked.exhausted
        if not exact:
            found = max(found, count_in_resource(conn, ranked.match, path, filters, COUNT_CAP + 1))
            exact = found <= COUNT_CAP
            found = min(found, COUNT_CAP)
        group: Group = {
            "resourcePath": path,
            "resourceKind": shown[0].resource_kind,
            "first": len(results),
            "count": len(shown),
            "more": max(0, found - len(shown)),
            "moreIsLowerBound": not exact,
            "expand": {"resourcePath": path},
        }
        groups.append(group)
        results += [result(h, terms, ctx, "fts", h.score) for h in shown]
    fields = {"results": results, "groups": groups, **_totals(ranked.total, ranked.exhausted)}
    if len(by_path) > offset + top_k and offset + top_k < MAX_DEPTH:
        fields["nextOffset"] = offset + top_k
    return [h for p in paths for h in by_path[p][:per_document]], ranked, fields
