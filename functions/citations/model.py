"""The citation, defined once (SPEC §10, schema `mnote.citation.v1`, schemas/citation.schema.json).

`functions/citations/mapper.py` builds these; `functions/handlers/knowledge.py`, the CLI and the Ask
page read them.
Field names are the JSON names. Optional keys are absent, never null: `blockId`, `page`, `bbox`,
`regions` and `source` exist only when a block was matched (and the format has pages/boxes).

Invariants (checked by tests against real lightrag-server responses):
- `displayQuote` is cut from the cited block's text (`quoteSource: sidecar`), so `quoteVerified` is true
  and every word shown is at the place `citationUrl` opens; without a block it comes from the chunk
  (`quoteSource: chunk`, precision `file`, `quoteVerified: false`);
- every region is a block of the chunk's span, on the chunk's own pages;
- `diagnostics.rawQuote` is the only place the provider's chunk text appears.
"""

# No `from __future__ import annotations` here: TypedDict must see `NotRequired[...]` evaluated.

import posixpath
from typing import Literal, NotRequired, TypedDict

CITATION_SCHEMA = "mnote.citation.v1"
Precision = Literal["bbox", "page", "paragraph", "line", "block", "file"]
QuoteSource = Literal["chunk", "sidecar", "fallback", "placeholder", "missing"]


class Region(TypedDict):
    page: int
    bbox: list[float]
    blockId: str


class CitationDiagnostics(TypedDict):
    rawReferenceMapped: bool
    sidecarBlockMapped: bool
    blockMatch: Literal["term", "position", "unlocated", "no_text", "placeholder"]
    chunkSpan: NotRequired[list[int]]  # [start, end) of the chunk in the ingested text
    spanAmbiguous: NotRequired[bool]
    displayCleaned: bool
    locatorTextSource: Literal["block", "chunk"]
    ocrTextExposed: bool
    quoteOnlyImagePlaceholder: bool
    rawQuote: str
    chunkId: str
    # why not quoteVerified
    quoteCheck: NotRequired[Literal["quote_not_in_block", "box_text_mismatch", "no_block"]]


class Citation(TypedDict):
    citationId: str
    provider: str
    sourcePath: str
    resourceKind: str
    blockId: NotRequired[str]
    headingPath: list[str]
    displayQuote: str
    quoteVerified: bool
    locatorEvidenceText: str
    searchQuery: str
    quoteSource: QuoteSource
    locatorPrecision: Precision
    locatorDegraded: bool
    page: NotRequired[int]
    bbox: NotRequired[list[float]]
    regions: NotRequired[list[Region]]
    citationUrl: str
    citationMarkdown: str
    relevanceScore: NotRequired[float]
    source: NotRequired[dict]  # the block's EvidenceLocator (schemas/locator.schema.json), with the site base
    diagnostics: CitationDiagnostics


def citation_markdown(c: Citation) -> str:
    """`[a3z1] spec.pdf · p.3 · Revenue > Recognition` linking the citation URL; lesser precision in words."""
    parts = [f"[{c['citationId']}] {posixpath.basename(c['sourcePath'])}"]
    if "page" in c:
        parts.append(f"p.{c['page']}")
    loc = c.get("source", {})
    precision = c["locatorPrecision"]
    if precision == "paragraph":
        parts.append(f"¶{loc.get('paragraphIndex')} (paragraph)")
    elif precision == "line" and loc.get("lineRange"):
        a, b = loc["lineRange"]
        parts.append(f"line {a}" if a == b else f"lines {a}–{b}")
    elif precision == "block":
        parts.append("(its own block: no paragraph number)")
    elif precision == "page":
        parts.append("(page: the passage's box could not be verified)")
    elif precision == "file":
        parts.append("(whole file: no passage matched)")
    if c["headingPath"]:
        parts.append(" > ".join(c["headingPath"]))
    text = " · ".join(parts).replace("]", "\\]").replace("[", "\\[")
    return f"[{text}]({c['citationUrl']})"
