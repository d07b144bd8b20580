"""`evidence.sqlite` tables (SPEC §6). Columns may grow, never shrink."""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = "5"  # 2: evidence_block.role; 3: evidence_block.box_holds_text; 4: evidence_block.anchor, evidence_resource.title
# 5: evidence_link.label (a link's words, for backlinks without re-parsing),
#    evidence_resource.source_size, source_mtime_ns (change detection without re-hashing, build/scan.py),
#    evidence_resource.links_hash (a note's links and link edges, compared instead of rewriting them all),
#    index evidence_link_target

LINK_EDGE_TYPES = ("document_contains_resource", "markdown_links_to", "resource_refers_to")

DDL = """
CREATE TABLE IF NOT EXISTS evidence_resource (
    resource_id TEXT PRIMARY KEY,
    owner_document_path TEXT,
    source_root_relative_path TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    provider TEXT,
    provider_version TEXT,
    source_hash TEXT,
    artifact_path TEXT,
    source_map_path TEXT,
    status TEXT NOT NULL CHECK (status IN ('ok', 'stale', 'error', 'unsupported')),
    error_code TEXT,
    error_message TEXT,
    page_count INTEGER,
    block_count INTEGER NOT NULL DEFAULT 0,
    warnings_json TEXT NOT NULL DEFAULT '[]',
    updated_at_ms INTEGER NOT NULL,
    title TEXT,                       -- notes: front matter title, else the first heading; NULL: none
    source_size INTEGER,              -- size and st_mtime_ns when source_hash was computed; NULL: hash again
    source_mtime_ns INTEGER,          -- next build (refused, or written too recently to trust, build/scan.py)
    links_hash TEXT                   -- notes: hash of its evidence_link rows and link edges as last written
);
CREATE TABLE IF NOT EXISTS evidence_block (
    id INTEGER PRIMARY KEY,           -- also the rowid of evidence_fts
    block_id TEXT NOT NULL UNIQUE,
    resource_id TEXT NOT NULL REFERENCES evidence_resource(resource_id),
    ordinal INTEGER NOT NULL,         -- position in the resource, for neighbours
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    section_id TEXT,
    section_path_json TEXT NOT NULL DEFAULT '[]',
    page INTEGER,
    bbox_json TEXT,
    char_range_json TEXT,
    line_range_json TEXT,
    paragraph_index INTEGER,
    para_id TEXT,
    locator_json TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT 'body', -- body | furniture (running header, footer, page number)
    box_holds_text INTEGER,           -- PDF text blocks: 1 the text PyMuPDF reads in bbox holds the block's
                                      -- words, 0 it does not (locator at page precision); NULL not checked
    anchor TEXT                       -- Markdown: the author's block id (`^id`), unique in its resource
);
CREATE INDEX IF NOT EXISTS evidence_block_resource ON evidence_block(resource_id, ordinal);
CREATE INDEX IF NOT EXISTS evidence_block_section ON evidence_block(section_id);
CREATE VIRTUAL TABLE IF NOT EXISTS evidence_fts USING fts5(
    text, block_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS evidence_section (
    section_id TEXT PRIMARY KEY,
    resource_id TEXT NOT NULL REFERENCES evidence_resource(resource_id),
    title TEXT NOT NULL,
    level INTEGER NOT NULL,
    path_json TEXT NOT NULL,
    page_start INTEGER,
    page_end INTEGER,
    parent_section_id TEXT,
    block_count INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS evidence_section_resource ON evidence_section(resource_id);
CREATE TABLE IF NOT EXISTS evidence_edge (
    edge_id TEXT PRIMARY KEY,
    from_id TEXT NOT NULL,
    to_id TEXT NOT NULL,
    edge_type TEXT NOT NULL,
    source_block_id TEXT NOT NULL REFERENCES evidence_block(block_id),
    confidence REAL NOT NULL,
    created_by TEXT NOT NULL,
    resource_id TEXT NOT NULL         -- whose artifact produced it (replaced with it)
);
CREATE INDEX IF NOT EXISTS evidence_edge_from ON evidence_edge(from_id, edge_type);
CREATE INDEX IF NOT EXISTS evidence_edge_to ON evidence_edge(to_id, edge_type);
CREATE INDEX IF NOT EXISTS evidence_edge_resource ON evidence_edge(resource_id);
CREATE TABLE IF NOT EXISTS evidence_link (
    resource_id TEXT NOT NULL,        -- the note
    source_block_id TEXT NOT NULL,
    target TEXT NOT NULL,             -- as written in the note
    kind TEXT NOT NULL,               -- link | image | wikilink | embed | tag | alias
    target_path TEXT,                 -- resolved root-relative path, NULL if unresolved
    problem TEXT,                     -- outside_root | missing | NULL
    label TEXT                        -- the link's words as written (backlinks mark them); NULL: none
);
CREATE INDEX IF NOT EXISTS evidence_link_resource ON evidence_link(resource_id);
CREATE INDEX IF NOT EXISTS evidence_link_target ON evidence_link(target_path);  -- who links here (build/linkgraph.py)
CREATE TABLE IF NOT EXISTS knowledge_source (
    source_root_relative_path TEXT PRIMARY KEY,
    lightrag_doc_id TEXT,
    lightrag_file_path TEXT,
    source_hash TEXT,
    status TEXT,
    ocr_text_exposed INTEGER NOT NULL DEFAULT 0,
    updated_at_ms INTEGER
);
CREATE TABLE IF NOT EXISTS evidence_anchor (
    old_block_id TEXT PRIMARY KEY,    -- a block id some earlier build published
    resource_id TEXT NOT NULL,
    successor_block_id TEXT,          -- where it lands now; NULL = removed, land on the page
    similarity REAL NOT NULL,
    retired_at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS evidence_anchor_resource ON evidence_anchor(resource_id);
CREATE INDEX IF NOT EXISTS knowledge_source_name ON knowledge_source(lightrag_file_path);
CREATE TABLE IF NOT EXISTS knowledge_text (
    source_root_relative_path TEXT PRIMARY KEY,
    text_hash TEXT NOT NULL,          -- sha256 of the exact text sent to LightRAG
    text TEXT NOT NULL                -- that text: chunks are located in it by offset (SPEC §10)
);
CREATE TABLE IF NOT EXISTS build_meta (
    key TEXT PRIMARY KEY,
    value TEXT
);
"""


def create_schema(conn: sqlite3.Connection) -> None:
    conn.executescript(DDL)
