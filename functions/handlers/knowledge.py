"""`knowledge.query`, `knowledge.status`, `knowledge.ask` (SPEC §9-§11): LightRAG, cited.

LightRAG retrieves; we cite. Its chunks are mapped to evidence blocks by
`functions.citations`; its raw data appears only under `diagnostics`. LightRAG
being down, slow, erroring or answering garbage never raises: the answer comes
back within the configured timeout with `ok: false` (or `degraded: true`) and
a reason code, and evidence search does not depend on any of this.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from mnote_evidence.build.knowledge.lightrag import LightRag, LightRagError
from mnote_evidence.functions.citations.mapper import CitationMapper
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.errors import BadRequest
from mnote_evidence.functions.core.validation import CHOICE, INTEGER, TEXT, Field, RequestSpec
from mnote_evidence.functions.handlers.evidence import search
from mnote_evidence.functions.handlers.retrieval import GRAPH_MODE, graph, retrieve

# graph: entities and relationships with their evidence (retrieval.graph; LightRAG's hybrid, or the notes'
# own `@` mentions alone when no LightRAG is configured)
MODES = ("naive", "local", "global", "hybrid", "mix", "graph")
MAX_TOP_K = 50
_MARKER = re.compile(r"\[(\d{1,3})\]")


def _unavailable(reason: str, message: str, **extra) -> dict[str, Any]:
    return {"ok": False, "degraded": True, "degradedReason": reason, "message": message, **extra}


QUERY_REQUEST = RequestSpec(
    Field("query", TEXT, "The question or words to retrieve passages for.", required=True),
    Field("mode", CHOICE, "LightRAG retrieval mode.", default="mix", choices=MODES),
    Field(
        "topK",
        INTEGER,
        "How many LightRAG chunks to retrieve and cite at most.",
        default=10,
        lo=1,
        hi=MAX_TOP_K,
    ),
)
STATUS_REQUEST = RequestSpec()
ASK_REQUEST = QUERY_REQUEST  # the same fields: the answer comes with the citations of the same retrieval


def _query_args(request: dict) -> tuple[str, str, int]:
    args = QUERY_REQUEST.parse(request)
    return args["query"], args["mode"], args["topK"]


def query(request: dict, ctx: Context) -> dict:
    args = _query_args(request)
    result = _query(ctx, *args)
    return result if result["ok"] else _with_passages(ctx, result, args[0], args[2])


MAX_PASSAGES = 10


def _with_passages(ctx: Context, body: dict, text: str, top_k: int) -> dict:
    """A question LightRAG does not answer still gets evidence: `passages` holds what evidence search
    finds for it (any-term matching, `matchMode: any`, when no block holds every word)."""
    try:
        found = search({"query": text, "topK": min(top_k, MAX_PASSAGES)}, ctx)
    except BadRequest:  # nothing to search for (only stopwords or punctuation)
        return {"query": text, **body, "passages": {"matchMode": "all", "total": 0, "results": []}}
    keep = ("matchMode", "total", "totalIsLowerBound", "results")
    return {"query": text, **body, "passages": {k: found[k] for k in keep}}


def _query(ctx: Context, text: str, mode: str, top_k: int) -> dict:
    if ctx.lightrag is None and mode != "graph":
        return _unavailable(
            "knowledge_rag_unconfigured",
            "no LightRAG server configured (set LIGHTRAG_URL)",
            citations=[],
            references=[],
        )
    try:
        mapped = graph(ctx, text, top_k) if mode == "graph" else retrieve(ctx, text, mode, top_k)[1]
    except LightRagError as exc:
        if exc.reason == "knowledge_rag_rejected":
            raise BadRequest(exc.message) from None
        if mode == "graph":  # the notes' own mentions still answer
            notes = graph(replace(ctx, lightrag=None), text, top_k)
            return {**_unavailable(exc.reason, exc.message), "ok": True, "query": text, "mode": mode, **notes}
        return _unavailable(exc.reason, exc.message, citations=[], references=[])
    return {"ok": True, "query": text, "mode": mode, "degraded": False, "degradedReason": None, **mapped}


def status(request: dict, ctx: Context) -> dict:
    STATUS_REQUEST.parse(request)
    if ctx.lightrag is None:
        return {"ok": True, "healthy": False, "reason": "knowledge_rag_unconfigured"}
    try:
        with LightRag(ctx.lightrag) as client:
            health = client.health()
    except LightRagError as exc:
        return {"ok": True, "healthy": False, "reason": exc.reason, "message": exc.message}
    conf = health.get("configuration") or {}
    rerank_binding = conf.get("rerank_binding")
    healthy = health.get("status") == "healthy"
    extra = (
        {}
        if healthy
        else {"reason": "knowledge_rag_unhealthy", "message": f"status {health.get('status')!r}"}
    )
    return {
        "ok": True,
        "healthy": healthy,
        **extra,
        "coreVersion": health.get("core_version"),
        "embeddingModel": conf.get("embedding_model"),
        "llmModel": conf.get("llm_model"),
        "rerankEnabled": bool(conf.get("enable_rerank")),
        "rerankAvailable": bool(
            rerank_binding
            and rerank_binding != "null"
            and (health.get("rerank_queue_status") or {}).get("available", True)
        ),
        "rerankModel": conf.get("rerank_model"),
        "pipelineBusy": bool(health.get("pipeline_busy")),
    }


def _answer(ctx: Context, text: str, mode: str, top_k: int) -> dict | LightRagError:
    try:
        with LightRag(ctx.lightrag) as client:
            return client.answer(text, GRAPH_MODE if mode == "graph" else mode, top_k)
    except LightRagError as exc:
        return exc


def ask(request: dict, ctx: Context) -> dict:
    """LightRAG's answer text, with `[n]` markers turned into our citation ids (only ids we mapped).

    The answer (`/query`) is requested while the retrieval (`/query/data`) is mapped: the two LightRAG
    calls overlap, so `ask` costs about one LightRAG call plus mapping, not two."""
    args = _query_args(request)
    if ctx.lightrag is None:
        return _with_passages(ctx, {**_query(ctx, *args), "answer": None, "segments": []}, args[0], args[2])
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(_answer, ctx, *args)
        result = _query(ctx, *args)
        answered = pending.result()
    if not result["ok"]:
        return _with_passages(ctx, {**result, "answer": None, "segments": []}, args[0], args[2])
    if isinstance(answered, LightRagError):
        failed = {
            **result,
            "degraded": True,
            "degradedReason": answered.reason,
            "message": answered.message,
            "answer": None,
            "segments": [],
        }
        return _with_passages(ctx, failed, args[0], args[2])
    by_path: dict[str, str] = {}
    for c in result["citations"]:
        by_path.setdefault(c["sourcePath"], c["citationId"])
    mapper = CitationMapper(ctx.db.connect(), result["query"], ctx.site_base)
    ref_to_cite = {}
    for ref in answered.get("references") or []:
        path = mapper.source_path(str(ref.get("file_path")))
        if path in by_path:
            ref_to_cite[str(ref.get("reference_id"))] = by_path[path]
    answer = str(answered.get("response") or "")
    segments, dropped, pos = [], [], 0
    for m in _MARKER.finditer(answer):
        segments.append({"text": answer[pos : m.start()]})
        cite = ref_to_cite.get(m.group(1))
        if cite:
            segments.append({"citationId": cite})
        else:
            dropped.append(m.group(0))  # a marker the model produced that maps to no citation of ours
        pos = m.end()
    segments.append({"text": answer[pos:]})
    result["diagnostics"]["droppedMarkers"] = dropped
    return {**result, "answer": answer, "segments": [s for s in segments if s.get("text") != ""]}
