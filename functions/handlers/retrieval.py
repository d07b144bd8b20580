"""LightRAG's retrieval mapped to citations of the exact blocks (`knowledge.query`, `ask`), to entities
and relationships with their evidence (mode=graph: `graph`, with the notes' `@` mentions) and, for
`evidence.search` with `includeOcr`, to hits on OCR'd sources. Raw LightRAG data stays under `diagnostics`."""

from __future__ import annotations

import json
from typing import Any

from mnote_evidence.build.core.ids import ENTITY_PREFIX, entity_id, entity_key
from mnote_evidence.build.knowledge.lightrag import LightRag, LightRagError
from mnote_evidence.functions.citations.block_choice import meaning_terms, occurrences
from mnote_evidence.functions.citations.mapper import CitationMapper
from mnote_evidence.functions.citations.model import Citation
from mnote_evidence.functions.core.cleaning import quote_window
from mnote_evidence.functions.core.contracts import Context, SearchResult
from mnote_evidence.functions.search.results import with_base


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


GRAPH_MODE = "hybrid"  # LightRAG's mode for mode=graph: its entities (local) and relationships (global)
SEP = "<SEP>"  # LightRAG joins an entity's chunk ids (source_id) with it
NOTES = "mnote-evidence build"  # createdBy of a mention an author wrote (`@Name`, evidence_edge's)


def _notes_entities(conn, query: str, top_k: int, base: str) -> list[dict[str, Any]]:
    """The entities the notes' `@` mentions name whose names hold the query's terms (most terms first),
    each with the blocks mentioning it (its block_mentions_entity edges)."""
    terms = meaning_terms(query)
    found = []
    for (entity,) in conn.execute(
        "SELECT DISTINCT to_id FROM evidence_edge_row WHERE edge_type = 'block_mentions_entity'"
    ):
        name = entity[len(ENTITY_PREFIX) :]
        hits = sum(1 for t in terms if occurrences(name, t))
        if hits:
            found.append((-hits, len(name), entity))
    out = []
    for _, _, entity in sorted(found)[:top_k]:
        rows = conn.execute(
            "SELECT b.block_id, b.text, b.locator_json, r.source_root_relative_path, "
            "(SELECT l.label FROM evidence_link l WHERE l.kind = 'mention' AND lower(l.target) = ? "
            "AND l.source_block_id = b.block_id) FROM evidence_edge_row e "
            "JOIN evidence_block b ON b.block_id = e.source_block_id "
            "JOIN evidence_resource r ON r.resource_id = e.resource_id "
            "WHERE e.edge_type = 'block_mentions_entity' AND e.to_id = ? AND r.status = 'ok' "
            "ORDER BY r.source_root_relative_path, b.ordinal LIMIT ?",
            [entity[len(ENTITY_PREFIX) :], entity, top_k],
        ).fetchall()
        if not rows:
            continue
        name = rows[0][4] or entity[len(ENTITY_PREFIX) :]
        mentions = [
            {
                "evidenceId": block_id,
                "sourcePath": path,
                "quote": quote_window(text, [label or name]),
                "quoteVerified": True,  # cut from the block's own text
                "source": with_base(json.loads(locator), base),
                "createdBy": NOTES,
                "confidence": 1.0,
            }
            for block_id, text, locator, path, label in rows
        ]
        out.append({"entityId": entity, "name": name, "mentions": mentions})
    return out


def _from_citation(c: Citation, names: list[str]) -> dict[str, Any]:
    """A mention read from a LightRAG chunk: the cited block, its quote and locator; confidence 1.0 when
    the quote holds every name as written, 0.5 when it holds only some of their words."""
    quote = entity_key(c["displayQuote"])
    return {
        "evidenceId": c["blockId"],
        "sourcePath": c["sourcePath"],
        "quote": c["displayQuote"],
        "quoteVerified": c["quoteVerified"],
        "source": c["source"],
        "createdBy": "lightrag",
        "confidence": 1.0 if all(entity_key(n) in quote for n in names) else 0.5,
        "citationId": c["citationId"],
    }


def graph(ctx: Context, query: str, top_k: int) -> dict[str, Any]:
    """`knowledge.query` mode=graph: "where is X mentioned". Entities (and, with LightRAG, relationships),
    each with its evidence: the notes' `@` mentions (their edges), and LightRAG's extracted entities
    mapped to the blocks of the chunks they came from (the citations' chunk -> span -> block mapping,
    keeping a block only where the name's words are). An entity or relationship without a locatable
    block is left out (counted in diagnostics): never a bare relation. Raises LightRagError."""
    conn = ctx.db.connect()
    entities = {e["entityId"]: e for e in _notes_entities(conn, query, top_k, ctx.site_base)}
    diagnostics: dict[str, Any] = {"graphSources": ["notes"]}
    out = {"citations": [], "references": [], "relationships": [], "diagnostics": diagnostics}
    if ctx.lightrag is None:
        return {**out, "entities": list(entities.values())}
    with LightRag(ctx.lightrag) as client:
        data = client.query_data(query, GRAPH_MODE, top_k)
    chunks = {str(c.get("chunk_id")): c for c in data.get("chunks") or [] if isinstance(c, dict)}
    cited: dict[str, Citation] = {}

    def evidence(names: list[str], source_id: Any) -> list[dict[str, Any]]:
        mapper = CitationMapper(conn, " ".join(names), ctx.site_base)
        found = []
        for rank, chunk_id in enumerate(dict.fromkeys(str(source_id or "").split(SEP))):
            c = mapper.citation(chunks[chunk_id], rank) if chunk_id in chunks else None
            if c is None or "blockId" not in c or c["diagnostics"]["blockMatch"] != "term":
                continue  # not located, or a block of the chunk that does not hold the name
            cited.setdefault(c["citationId"], c)
            found.append(_from_citation(c, names))
        return found

    unlocated = {"entities": 0, "relationships": 0}
    for raw in (data.get("entities") or [])[:top_k]:
        name = str(raw.get("entity_name") or "") if isinstance(raw, dict) else ""
        mentions = evidence([name], raw.get("source_id")) if name.strip() else []
        if not mentions:
            unlocated["entities"] += 1
            continue
        entity = entities.setdefault(
            entity_id(name), {"entityId": entity_id(name), "name": name, "mentions": []}
        )
        entity.update({"type": raw.get("entity_type"), "description": raw.get("description")})
        seen = {m["evidenceId"] for m in entity["mentions"]}
        entity["mentions"] += [m for m in mentions if m["evidenceId"] not in seen]
    for raw in (data.get("relationships") or [])[:top_k]:
        if not isinstance(raw, dict):
            continue
        ends = [str(raw.get("src_id") or ""), str(raw.get("tgt_id") or "")]
        found = evidence(ends, raw.get("source_id")) if all(e.strip() for e in ends) else []
        if not found:
            unlocated["relationships"] += 1
            continue
        out["relationships"].append(
            {
                "source": ends[0],
                "target": ends[1],
                "sourceEntityId": entity_id(ends[0]),
                "targetEntityId": entity_id(ends[1]),
                "description": raw.get("description"),
                "keywords": raw.get("keywords"),
                "evidence": found,
            }
        )
    diagnostics.update(
        {
            "graphSources": ["notes", "lightrag"],
            "lightragMode": GRAPH_MODE,
            "chunkCount": len(chunks),
            "provider": {
                "entities": len(data.get("entities") or []),
                "relationships": len(data.get("relationships") or []),
            },
            "withoutEvidence": unlocated,
        }
    )
    return {**out, "entities": list(entities.values()), "citations": list(cited.values())}
