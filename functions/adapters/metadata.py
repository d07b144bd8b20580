"""What Datasette shows about the evidence database: table descriptions and canned queries."""

from __future__ import annotations

DATABASE_DESCRIPTION = "mnote-evidence index: every block of every note and attachment, with its locator."

TABLES = {
    "evidence_resource": {
        "description": "One row per file in the workspace: its kind, owner note, provider, content hash, "
        "sidecar paths and status (ok, stale = deleted since the last build, error, unsupported).",
        "sort": "source_root_relative_path",
    },
    "evidence_block": {
        "description": "One row per evidence block (paragraph, heading, list item, table row, "
        "PDF text block...) with its page, bbox, line range or paragraph index and its full locator. "
        "Search box: CJK substrings and English words (bigram-segmented FTS5). "
        "A view: the locator and section path are computed from evidence_block_row, "
        "the block's resource and section.",
        "fts_table": "evidence_fts",
        "fts_pk": "id",
        "sort": "id",
    },
    "evidence_fts": {
        "description": "FTS5 index over block text (CJK runs stored as overlapping bigrams).",
        "hidden": True,
    },
    "evidence_block_row": {
        "description": "The stored block rows behind the evidence_block view.",
        "hidden": True,
    },
    "evidence_edge_row": {
        "description": "The stored edges behind the evidence_edge view (pages).",
        "hidden": True,
    },
    "evidence_link_edge": {
        "description": "Link edges between notes and resources, derived from evidence_link "
        "(one per linking block and target); part of evidence_edge.",
        "hidden": True,
    },
    "evidence_section": {"description": "Section tree of every resource (headings, PDF outline entries)."},
    "evidence_edge": {
        "description": "Deterministic graph: links between notes and resources, pages and sections "
        "containing blocks. Every edge names the block it comes from. A view: "
        "link edges are derived from evidence_link, the per-block edges from the "
        "blocks' pages and sections."
    },
    "evidence_link": {
        "description": "Every link written in a note, how it resolved, and problems (outside_root, missing)."
    },
    "evidence_anchor": {"description": "Block ids from earlier builds and the block each now lands on."},
    "knowledge_source": {"description": "LightRAG registry: which LightRAG document holds which file."},
    "build_meta": {"description": "Schema version, generator and time of the last build."},
}

CANNED_QUERIES = {
    "stale_resources": {
        "title": "Deleted files",
        "description": "Files deleted since the last build: kept one build, never returned by search.",
        "sql": "SELECT source_root_relative_path, kind, owner_document_path, block_count, updated_at_ms "
        "FROM evidence_resource WHERE status = 'stale' ORDER BY 1",
    },
    "build_errors": {
        "title": "Files that could not be indexed",
        "description": "Corrupt, encrypted, empty, oversized or refused files with the recorded reason.",
        "sql": "SELECT source_root_relative_path, kind, error_code, error_message, owner_document_path "
        "FROM evidence_resource WHERE status = 'error' ORDER BY 1",
    },
    "sections_of_resource": {
        "title": "Sections of a file",
        "description": "The section tree of one file (give its root-relative path).",
        "sql": "SELECT s.section_id, s.level, s.title, s.path_json, s.page_start, s.page_end, s.block_count "
        "FROM evidence_section s JOIN evidence_resource r USING (resource_id) "
        "WHERE r.source_root_relative_path = :path ORDER BY s.rowid",
    },
    "backlinks_of_note": {
        "title": "Backlinks of a note or file",
        "description": "Blocks of other notes that link to this path, with the linking text.",
        "sql": "SELECT src.source_root_relative_path AS from_note, b.block_id, b.text, e.edge_type "
        "FROM evidence_link_edge e JOIN evidence_resource dst ON dst.resource_id = e.to_id "
        "JOIN evidence_block b ON b.block_id = e.source_block_id "
        "JOIN evidence_resource src ON src.resource_id = b.resource_id "
        "WHERE dst.source_root_relative_path = :path ORDER BY 1, b.ordinal",  # link edges only
    },
}
