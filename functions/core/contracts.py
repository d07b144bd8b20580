"""What the query handlers take and return (SPEC §9, §11), defined once.

`Context` is what every handler is called with. The response shapes are TypedDicts matching the
published schemas: `SearchResponse` is `schemas/search_response.schema.json` (its `source` is the
`EvidenceLocator` of `schemas/locator.schema.json`, with `openAction.url` prefixed by the site's
base) and `VerifyQuoteResponse` is `schemas/verify_quote_response.schema.json`. Errors are
`ErrorResponse`, produced only by `errors.call`. Citations are typed in
`functions/citations/model.py` (`schemas/citation.schema.json`).
"""

# No `from __future__ import annotations` here: TypedDict must see `NotRequired[...]` evaluated.

from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

from mnote_evidence.build.core.model import EvidenceLocator
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.core.db import EvidenceDB

# evidence.search boundary kinds (SPEC §11)
BOUNDARY_LOCAL = "ordinary_local_search"
BOUNDARY_LOCAL_WITH_OCR = "ordinary_local_search_with_knowledge_ocr"


@dataclass
class Context:
    """Everything a handler needs besides its request."""

    db: EvidenceDB
    site_base: str = ""  # prefix of openAction URLs: "" = site-relative, "/-/evidence/site/" when served
    lightrag: LightRagConfig | None = None  # knowledge functions and includeOcr


class Via(TypedDict):
    """How a graph result was reached from an FTS hit."""

    edgeType: str
    direction: Literal["in", "out"]
    fromEvidenceId: str


class Snippet(TypedDict):
    """A window of the block's own text around the query terms (never the segmented FTS text)."""

    text: str  # <= 160 chars of text, plus "…" at each cut
    highlights: list[list[int]]  # sorted [start, end) pairs in UTF-16 code units of `text`


class ResultDiagnostics(TypedDict):
    quoteCheck: Literal["quote_not_in_block", "box_text_mismatch"]  # why quoteVerified is false


class SearchResult(TypedDict):
    evidenceId: str  # the block id
    quote: str  # <= 280 chars, centred on the query terms
    snippet: Snippet
    score: float
    matchSource: Literal["fts", "graph", "knowledge_ocr"]
    source: EvidenceLocator  # openAction.url prefixed with Context.site_base; downgraded when not verified
    quoteVerified: bool  # functions/search/quote_check.py: the quote's words are at the place `source` opens
    diagnostics: NotRequired[ResultDiagnostics]  # only when quoteVerified is false
    via: NotRequired[Via]  # graph results only
    role: NotRequired[str]  # "furniture" (includeFurniture only); absent for body text
    matchLevel: NotRequired[Literal["page", "section"]]  # the words across a page's (section's) blocks
    alsoMatched: NotRequired[list[str]]  # with matchLevel: that page's other blocks holding some words


class Boundary(TypedDict):
    kind: str  # BOUNDARY_LOCAL | BOUNDARY_LOCAL_WITH_OCR


class GroupExpand(TypedDict):
    """Fields to add to the same request to list every match in the group's file."""

    resourcePath: str


class Group(TypedDict):
    """groupBy=document: one file's results, `results[first:first + count]`."""

    resourcePath: str
    resourceKind: str
    first: int
    count: int
    more: int  # other matches in the file, not shown
    moreIsLowerBound: bool  # counting stopped at 1,000
    expand: GroupExpand


class SearchResponse(TypedDict):
    ok: Literal[True]
    query: str
    mode: Literal["fts", "graph", "hybrid"]
    matchMode: Literal["all", "any"]  # any: no block holds every term; results hold some meaning-bearing ones
    results: list[SearchResult]
    offset: int  # of the first result (of the first file, grouped)
    total: int  # matching blocks, after filters
    totalIsLowerBound: bool  # more matched than were counted (`total` is then "at least")
    nextOffset: NotRequired[int]  # the next page's offset; absent on the last page (and for graph/hybrid)
    groups: NotRequired[list[Group]]  # groupBy=document only
    boundary: Boundary
    degraded: bool
    degradedReason: NotRequired[str]  # includeOcr only: why LightRAG could not add results


class QuoteMatch(TypedDict):
    """verify_quote: the block holding the quote, or else the most similar block."""

    evidenceId: str
    similarity: float  # share of the quote's words the block has, in order (1.0: it holds them all)
    quoteVerified: bool  # the block holds the quote and, for a PDF box, the box holds the block's words
    precision: Literal["bbox", "page", "paragraph", "line", "file"]
    quote: str  # <= 280 chars of the block's text
    source: EvidenceLocator  # openAction.url prefixed with Context.site_base
    reason: NotRequired[str]  # why quoteVerified is false: quote_not_in_block | box_text_mismatch


class VerifyTarget(TypedDict):
    scope: Literal["block", "page", "box", "file", "index"]
    resourcePath: NotRequired[str]
    blockId: NotRequired[str]
    page: NotRequired[int]
    bbox: NotRequired[list[float]]


class VerifyDiagnostics(TypedDict):
    reason: NotRequired[str]  # quote_not_in_<scope>: the cited place does not hold the quote
    redirectedFrom: NotRequired[str]  # a retired block id, followed through the anchor map


class VerifyQuoteResponse(TypedDict):
    """schemas/verify_quote_response.schema.json"""

    ok: Literal[True]
    verdict: Literal["found", "found_elsewhere", "not_found"]
    found: bool  # verdict == "found": the cited place (or, without one, the index) holds the quote
    quote: str
    target: VerifyTarget
    match: NotRequired[QuoteMatch]  # absent when no block is similar enough
    diagnostics: VerifyDiagnostics


class ErrorDetail(TypedDict):
    code: str
    message: str


class ErrorResponse(TypedDict):
    ok: Literal[False]
    error: ErrorDetail
