"""The query API's one route table (SPEC §9), shared by every adapter, and one HTTP answer.

`ROUTES` names each pure handler once: its HTTP path (the same under the Datasette
plugin and the plain ASGI app), its MCP tool name (None: not offered as a tool), its
`RequestSpec` (validation, the MCP input schema, the query-string form) and what the
tool is for. `answer` turns an HTTP request (method, query args, body) into
`(status, payload)` the same way for every HTTP adapter: POST takes a JSON object,
GET the spec's query-string form, the handler runs inside one database session
(one build for the whole request) and every error goes through `errors.call`
(4xx with a message, a generic 500; never a path or a traceback). `site_base` checks
the public site URL every adapter may prefix links with.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.core.validation import RequestSpec
from mnote_evidence.functions.handlers import evidence, knowledge, verify

Handler = Callable[[dict, Context], dict]


@dataclass(frozen=True)
class Route:
    path: str
    handler: Handler
    spec: RequestSpec
    tool: str | None = None
    title: str = ""
    description: str = ""


ROUTES: tuple[Route, ...] = (
    Route(
        "/-/evidence/search",
        evidence.search,
        evidence.SEARCH_REQUEST,
        "evidence_search",
        "Search the evidence",
        "Full-text search over every note and attachment (PDF, DOCX, images' OCR text). Each result has a "
        "quote, a score and a locator (`source`) whose openAction.url opens the exact page box, paragraph "
        "or lines in the static site.",
    ),
    Route(
        "/-/evidence/read",
        evidence.read,
        evidence.READ_REQUEST,
        "evidence_read",
        "Read around a block",
        "A block with its neighbours on the same page or section, the section summary, and the lines of "
        "notes that reference its file.",
    ),
    Route(
        "/-/evidence/open",
        evidence.open_,
        evidence.OPEN_REQUEST,
        "evidence_open",
        "Link to a place",
        "The normalised openAction (URL) for a block id or a locator: give the user this link.",
    ),
    Route(
        "/-/evidence/verify",
        verify.verify_quote,
        verify.VERIFY_REQUEST,
        "verify_quote",
        "Check a quote",
        "Is this sentence at the place a citation opens? Give the quote and the cited blockId, locator or "
        "citationUrl (or nothing: anywhere in the notes). Answers found / found_elsewhere / not_found and "
        "the block that holds the words (or the most similar one) with its locator: check before you "
        "quote.",
    ),
    Route(
        "/-/knowledge/query",
        knowledge.query,
        knowledge.QUERY_REQUEST,
        "knowledge_query",
        "Cited retrieval",
        "Retrieve passages with LightRAG and map each to a citation of the exact block it came from "
        "(citationUrl, citationMarkdown). If LightRAG is down the answer says so (degraded) instead of "
        "failing.",
    ),
    Route(
        "/-/knowledge/status",
        knowledge.status,
        knowledge.STATUS_REQUEST,
        "knowledge_status",
        "Knowledge server status",
        "Whether the LightRAG server answers, and its models and rerank settings.",
    ),
    Route("/-/knowledge/ask", knowledge.ask, knowledge.ASK_REQUEST),
)
BY_PATH = {r.path: r for r in ROUTES}
BY_TOOL = {r.tool: r for r in ROUTES if r.tool}


def run(route: Route, ctx: Context, request: Any) -> tuple[int, dict]:
    """The handler on `request` inside one database session; errors as `errors.call` answers them."""

    def in_session(req: dict) -> dict:
        with ctx.db.session():
            return route.handler(req, ctx)

    return call(in_session, request)


def answer(route: Route, ctx: Context, method: str, args: Any, body: bytes | None) -> tuple[int, dict]:
    """One HTTP request: POST with a JSON body, else the query string (`args`: `keys()` + `get()`)."""
    if method == "POST":
        try:
            request = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError):
            return 400, {"ok": False, "error": {"code": "bad_request", "message": "body is not valid JSON"}}
    else:
        request = route.spec.from_query(args)
    return run(route, ctx, request)


def site_base(site_url: str | None) -> str:
    """The prefix of every URL the handlers return: "" (site-relative) or the site's public URL ending in '/'.
    Raises ValueError (a message for the user) for anything but an http(s) URL without query or fragment."""
    if not site_url:
        return ""
    parts = urlsplit(site_url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(
            f"the site URL must be the site's public http(s) address, like https://example.org/notes/ "
            f"(got {site_url!r})"
        )
    return site_url.rstrip("/") + "/"
