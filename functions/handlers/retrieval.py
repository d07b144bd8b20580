"""LightRAG's retrieval mapped to citations of the exact blocks (`knowledge.query`, `ask`) and, for
`evidence.search` with `includeOcr`, to hits on OCR'd sources. Raw LightRAG data stays under `diagnostics`."""

from __future__ import annotations

from mnote_evidence.build.knowledge.lightrag import LightRag, LightRagError
from mnote_evidence.functions.citations.mapper import CitationMapper
from mnote_evidence.functions.core.contracts import Context, SearchResult


def retrieve(ctx: Context, query: str, mode: str, top_k: int) -> tuple[dict, dict]:
    """(LightRAG data, mapped result) or raises LightRagError."""
    with LightRag(ctx.lightrag) as client:
        data = client.query_data(query, mode, top_k)
    mapper = CitationMapper(ctx.db.connect(), query, ctx.site_base)
    citations = [
        c
        for rank, chunk in enumerate(data.get("chunks") or [])
        if isinstance(chunk, dict) and (c := mapper.citation(chunk, rank))
    ]
    references = [
        {
            "referenceId": str(r.get("reference_id")),
            "filePath": r.get("file_path"),
            "sourcePath": mapper.source_path(str(r.get("file_path"))),
        }
        for r in data.get("references") or []
        if isinstance(r, dict)
    ]
    return data, {
        "citations": citations,
        "references": references,
        "diagnostics": {
            **mapper.diagnostics,
            "chunkCount": len(data.get("chunks") or []),
            "provider": {
                "entities": len(data.get("entities") or []),
                "relationships": len(data.get("relationships") or []),
            },
        },
    }


def ocr_results(
    ctx: Context, query_text: str, top_k: int, have: set[str]
) -> tuple[list[SearchResult], str | None]:
    """For evidence.search includeOcr: LightRAG hits on OCR'd sources (images, scanned pages)."""
    if ctx.lightrag is None:
        return [], "knowledge_rag_unconfigured"
    try:
        _, mapped = retrieve(ctx, query_text, "naive", top_k)
    except LightRagError as exc:
        return [], exc.reason
    out: list[SearchResult] = []
    for c in mapped["citations"]:
        if not c["diagnostics"]["ocrTextExposed"] and c["resourceKind"] != "image":
            continue
        if "blockId" not in c or c["blockId"] in have:
            continue
        out.append(
            {
                "evidenceId": c["blockId"],
                "quote": c["locatorEvidenceText"],
                "score": c["relevanceScore"],
                "matchSource": "knowledge_ocr",
                "source": c["source"],
            }
        )
    return out, None
