"""Short text renderings of the handlers' answers for MCP tool results (SPEC §9, §10).

An MCP tool result carries the handler's JSON as structured content and, for
clients and models that read text, one of these renderings: a few lines per
result, each with a Markdown link that opens the exact place (citations use
their own `citationMarkdown`; search results get a link in the same style).
Invariants: every URL shown is one the handler returned (never built here); a
degraded or failed answer says why in words; nothing here reads the database.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from typing import Any

from mnote_evidence.functions.search.results import SOME_WORDS, across

MAX_QUOTE = 280
BLOCK_URI = "evidence://block/{}"


def place(loc: dict[str, Any]) -> str:
    """Where in the file: `p.3`, `lines 4-9`, `¶12` (empty for a whole file)."""
    if "page" in loc:
        return f"p.{loc['page']}"
    if loc.get("lineRange"):
        first, last = loc["lineRange"]
        return f"line {first}" if first == last else f"lines {first}–{last}"
    if "paragraphIndex" in loc:
        return f"¶{loc['paragraphIndex']}"
    return ""


def locator_link(loc: dict[str, Any], label: str | None = None) -> str:
    """`[spec.pdf · p.3 · Revenue > Recognition](url)`, the locator's openAction as a Markdown link."""
    parts = [
        label or posixpath.basename(loc["resourcePath"]),
        place(loc),
        " > ".join(loc.get("sectionPath") or []),
    ]
    text = " · ".join(p for p in parts if p).replace("[", "\\[").replace("]", "\\]")
    return f"[{text}]({loc['openAction']['url']})"


def _quote(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 1] + "…"


def search_text(body: dict) -> str:
    results = body["results"]
    head = f"{len(results)} result{'s' if len(results) != 1 else ''}"
    if body.get("total") is not None:
        head += f" of {body['total']}{'+' if body.get('totalIsLowerBound') else ''}"
    head += f" for {body['query']!r} ({body['mode']})"
    if "groups" in body:
        head += f", from {len(body['groups'])} file{'s' if len(body['groups']) != 1 else ''}"
    lines = [head]
    if body.get("nextOffset") is not None:
        lines.append(f"(more: the same call with offset {body['nextOffset']})")
    if body.get("matchMode") == "any" and results:
        lines.append(f"({SOME_WORDS})")
    if body.get("degraded"):
        lines.append(f"(LightRAG OCR hits unavailable: {body.get('degradedReason')})")
    for n, r in enumerate(results, 1):
        lines += [
            f"{n}. {locator_link(r['source'], r['source']['resourcePath'])} ({r['source']['precision']})",
            *([f"   ({across(r)})"] if across(r) else []),
            f"   “{_quote(r['quote'])}”",
            f"   {BLOCK_URI.format(r['evidenceId'])}",
        ]
    return "\n".join(lines)


def read_text(body: dict) -> str:
    anchor = body["anchor"]
    lines = [
        f"{locator_link(anchor['source'], anchor['source']['resourcePath'])} ({anchor['kind']})",
        f"“{_quote(anchor['text'])}”",
    ]
    if body.get("redirectedFrom"):
        lines.append(f"(block {body['redirectedFrom']} was renamed: this is its successor)")
    if body.get("section"):
        lines.append(f"Section: {' > '.join(body['section']['path'])}")
    lines.append(f"{len(body['neighbours'])} neighbour(s) on the same {body['neighbourScope']}:")
    lines += [f"- {locator_link(n['source'])}: {_quote(n['text'])}" for n in body["neighbours"]]
    if body["ownerReferences"]:
        lines.append("Referenced from:")
        lines += [
            f"- {locator_link(r['source'], r['source']['resourcePath'])}: {_quote(r['text'])}"
            for r in body["ownerReferences"]
        ]
    return "\n".join(lines)


def open_text(body: dict) -> str:
    where = (
        " · ".join(p for p in (body["resourcePath"], place(body)) if p)
        .replace("[", "\\[")
        .replace("]", "\\]")
    )
    return f"[{where}]({body['openAction']['url']}) ({body['precision']} precision)"


def query_text(body: dict) -> str:
    if not body.get("ok"):
        head = f"LightRAG unavailable ({body.get('degradedReason')}): {body.get('message')}. No citations."
        found = body.get("passages") or {}
        if not found.get("results"):
            return head + " No passage of the evidence matches the question either."
        page = {**found, "query": body.get("query") or "", "mode": "fts"}
        return head + " Passages of the evidence that match the question:\n" + search_text(page)
    if "entities" in body:
        return graph_text(body)
    cites = body["citations"]
    lines = [f"{len(cites)} citation{'s' if len(cites) != 1 else ''} for {body['query']!r} ({body['mode']})"]
    for c in cites:
        verified = "" if c.get("quoteVerified", True) else " (quote not verified)"
        lines += [f"- {c['citationMarkdown']}{verified}", f"  “{_quote(c['displayQuote'])}”"]
        if "blockId" in c:
            lines.append(f"  {BLOCK_URI.format(c['blockId'])}")
    return "\n".join(lines)


def _evidence_lines(items: list[dict]) -> list[str]:
    return [
        line
        for m in items
        for line in (
            f"  - {locator_link(m['source'], m['sourcePath'])} ({m['createdBy']}, {m['confidence']})",
            f"    “{_quote(m['quote'])}”",
        )
    ]


def graph_text(body: dict) -> str:
    """mode=graph: each entity with the places that mention it, each relationship with its evidence."""
    entities, rels = body["entities"], body["relationships"]
    lines = [f"{len(entities)} entit{'ies' if len(entities) != 1 else 'y'} for {body['query']!r} (graph)"]
    if body.get("degraded"):
        lines.append(f"(LightRAG unavailable: {body.get('degradedReason')}; the notes' @mentions only)")
    for e in entities:
        lines += [
            f"- {e['name']} ({e['entityId']}): {len(e['mentions'])} mention(s)",
            *_evidence_lines(e["mentions"]),
        ]
    if rels:
        lines.append(f"{len(rels)} relationship(s):")
    for r in rels:
        lines += [
            f"- {r['source']} → {r['target']}: {_quote(r.get('description') or '')}",
            *_evidence_lines(r["evidence"]),
        ]
    return "\n".join(lines)


def status_text(body: dict) -> str:
    if not body.get("healthy"):
        return f"LightRAG not available: {body.get('reason')}" + (
            f" ({body['message']})" if body.get("message") else ""
        )
    return (
        f"LightRAG healthy (core {body.get('coreVersion')}): embeddings {body.get('embeddingModel')}, "
        f"LLM {body.get('llmModel')}, rerank {'on' if body.get('rerankEnabled') else 'off'}"
        f"{' (available)' if body.get('rerankAvailable') else ''}"
    )


def verify_text(body: dict) -> str:
    verdict = {
        "found": "Found at the cited place",
        "found_elsewhere": "Not at the cited place, but found elsewhere",
        "not_found": "Not found",
    }[body["verdict"]]
    if body["target"]["scope"] == "index":  # no place was cited: the whole index was searched
        verdict = "Found in the notes" if body["found"] else verdict
    lines = [f"{verdict}: “{_quote(body['quote'])}”"]
    if body["diagnostics"].get("reason"):
        lines.append(f"(reason: {body['diagnostics']['reason']})")
    match = body.get("match")
    if match:
        what = (
            "Held by"
            if body["verdict"] != "not_found"
            else f"Most similar ({match['similarity']:.0%} of the words)"
        )
        lines += [
            f"{what}: {locator_link(match['source'], match['source']['resourcePath'])} "
            f"({match['precision']})",
            f"“{_quote(match['quote'])}”",
            BLOCK_URI.format(match["evidenceId"]),
        ]
    return "\n".join(lines)


def any_text(body: dict) -> str:
    """A tool without its own rendering: the JSON, compact."""
    return json.dumps(body, ensure_ascii=False)[:4000]


def error_text(body: dict) -> str:
    return f"{body['error']['message']} [{body['error']['code']}]"


RENDER: dict[str, Callable[[dict], str]] = {
    "evidence_search": search_text,
    "evidence_read": read_text,
    "evidence_open": open_text,
    "knowledge_query": query_text,
    "knowledge_status": status_text,
    "verify_quote": verify_text,
}


def render(tool: str, body: dict) -> str:
    return RENDER.get(tool, any_text)(body)
