"""`evidence.sqlite` tables (SPEC §6). Columns may grow, never shrink.

SPEC §6's `evidence_block` and `evidence_edge` are views with every column they ever had: what is
derivable per block is not stored: a block's locator, section path and JSON ranges are computed from
`evidence_block_row` and its resource and section (`build/core/locator.py`), its
`page_contains_block` / `section_contains_block` edges from its page and section; block text is stored
once (`evidence_fts` is an external-content index over `evidence_block_row`). Writers write the `_row`
tables; readers may read either (a view's unused joins cost nothing).
"""

from __future__ import annotations

import sqlite3

from mnote_evidence.build.core.locator import CHAR_RANGE_SQL, LINE_RANGE_SQL, LOCATOR_SQL, SECTION_PATH_SQL

SCHEMA_VERSION = "8"  # what each schema version added: docs/architecture.md
# English word forms match (Porter stems: homolog, homologs; depend, depends, depending); Porter leaves the
# CJK bigrams and unigrams as they are. Built into FTS5: any SQLite, Datasette and sql.js read it.
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"

LINK_EDGE_TYPES = ("document_contains_resource", "markdown_links_to", "resource_refers_to")
STORED_EDGE_TYPES = ("resource_contains_page", "block_mentions_entity")
CREATED_BY = "mnote-evidence build"
# a link edge's type, as linkgraph's `_edge_type` computes it in Python
LINK_TYPE_SQL = (
    "(CASE WHEN t.kind = 'markdown' AND t.status = 'ok' THEN 'markdown_links_to' "
    "WHEN t.owner_document_path = (SELECT o.source_root_relative_path FROM evidence_resource o "
    "WHERE o.resource_id = l.resource_id) THEN 'document_contains_resource' "
    "ELSE 'resource_refers_to' END)"
)
# each is a partial index's WHERE, used only by queries whose WHERE holds the same term (`{l}`: the alias)
ALIAS_LINKS = "{l}kind = 'alias'"
TAG_LINKS = "{l}kind = 'tag'"  # render/tag_pages.py (its tag: lower(target), the index's first column)
MENTION_LINKS = "{l}kind = 'mention'"  # the entity pages (render/tag_pages.py; target: the entity's key)
# links the build summary may report (LinkTargets.report_links): a problem, or a fragment to look up
REPORT_LINKS = (
    "{l}problem IN ('missing', 'outside_root') OR ({l}kind IN ('wikilink', 'embed') AND {l}target LIKE '%#%')"
)
NOT_OK = "{l}status != 'ok'"
WARNED = "{l}warnings_json != '[]'"

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
    source_mtime_ns INTEGER,          -- next build (refused, or written too recently to trust, build/workspace/scan.py)
    links_hash TEXT,                  -- notes: hash of its evidence_link rows and link edges as last written
    page_url TEXT                     -- site-relative URL of its page (build/core/urls.py page_url): openAction
);
CREATE TABLE IF NOT EXISTS evidence_block_row (  -- stored blocks; read them through the evidence_block view
    id INTEGER PRIMARY KEY,           -- also the rowid of evidence_fts
    block_id TEXT NOT NULL,           -- unique: evidence_block_id (an index of its own, so a database
                                      -- written from empty fills the table first, writer.py BULK_INDEXES)
    resource_id TEXT NOT NULL REFERENCES evidence_resource(resource_id),
    ordinal INTEGER NOT NULL,         -- position in the resource, for neighbours
    kind TEXT NOT NULL,
    text TEXT NOT NULL,               -- also the content of evidence_fts (external content)
    section_id TEXT,
    page INTEGER,
    bbox_json TEXT,
    char_start INTEGER,               -- charRange [char_start, char_end)
    char_end INTEGER,
    line_start INTEGER,               -- lineRange [line_start, line_end], 1-based, inclusive
    line_end INTEGER,
    paragraph_index INTEGER,
    para_id TEXT,
    role TEXT NOT NULL DEFAULT 'body', -- body | furniture (running header, footer, page number)
    box_holds_text INTEGER,           -- PDF text blocks: 1 the text PyMuPDF reads in bbox holds the block's
                                      -- words, 0 it does not (locator at page precision); NULL not checked
    anchor TEXT                       -- Markdown: the author's block id (`^id`), unique in its resource
);
CREATE UNIQUE INDEX IF NOT EXISTS evidence_block_id ON evidence_block_row(block_id);
CREATE INDEX IF NOT EXISTS evidence_block_resource ON evidence_block_row(resource_id, ordinal);
-- no index on section_id: a section's blocks are found through their resource's (resource_id, section_id)
-- SPEC §6's evidence_block: the stored columns, and those derived from them and from the block's
-- resource and section (section_path_json, the JSON ranges, locator_json: build/core/locator.py). LEFT JOINs
-- on unique keys: a query that reads no derived column never touches the joined tables.
CREATE VIEW IF NOT EXISTS evidence_block AS SELECT
    b.id, b.block_id, b.resource_id, b.ordinal, b.kind, b.text, b.section_id,
    {section_path} AS section_path_json,
    b.page, b.bbox_json,
    {char_range} AS char_range_json,
    {line_range} AS line_range_json,
    b.paragraph_index, b.para_id,
    {locator} AS locator_json,
    b.role, b.box_holds_text, b.anchor
FROM evidence_block_row b
LEFT JOIN evidence_resource r ON r.resource_id = b.resource_id
LEFT JOIN evidence_section s ON s.section_id = b.section_id;
-- Block text is stored once: the index reads evidence_block_row (external content). What it indexes is
-- the segmented text (build/core/text.py segment_for_index), so rows are removed with the 'delete' command
-- and the same segmented values, re-segmented with 'delete-all' (build/index/writer.py); reading
-- text from evidence_fts gives the stored (unsegmented) text; snippet()/highlight() are not used.
CREATE VIRTUAL TABLE IF NOT EXISTS evidence_fts USING fts5(
    text, block_id UNINDEXED, content = 'evidence_block_row', content_rowid = 'id',
    tokenize = '{fts_tokenize}'
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
CREATE TABLE IF NOT EXISTS evidence_edge_row (  -- stored edges (STORED_EDGE_TYPES); all: the evidence_edge view
    edge_id TEXT PRIMARY KEY,
    from_id TEXT NOT NULL,
    to_id TEXT NOT NULL,
    edge_type TEXT NOT NULL,
    source_block_id TEXT NOT NULL REFERENCES evidence_block_row(block_id),
    confidence REAL NOT NULL,
    resource_id TEXT NOT NULL         -- whose artifact produced it (replaced with it)
);
CREATE INDEX IF NOT EXISTS evidence_edge_resource ON evidence_edge_row(resource_id);
-- the blocks that mention an entity (functions/handlers/retrieval.py, mode=graph), by the entity's id
CREATE INDEX IF NOT EXISTS evidence_edge_entity ON evidence_edge_row(to_id) WHERE edge_type = 'block_mentions_entity';
-- A note's link edges (LINK_EDGE_TYPES), derived from its evidence_link rows that resolved to another
-- resource: one per (linking block, target), edge_id '<edge_type>:<block_id>:<target resource_id>'. The
-- type is the target's: an indexed note (markdown, ok) -> markdown_links_to; a resource the linking note
-- owns -> document_contains_resource; else resource_refers_to (build/index/linkgraph.py hashes the same
-- classification into links_hash, so a note whose edges change is re-rendered). Readers filter on
-- to_id (evidence_link_target index) or source_block_id / from_id (evidence_link_resource).
-- t.resource_id <> l.resource_id: not a link to the note itself (paths and ids are one to one).
CREATE VIEW IF NOT EXISTS evidence_link_edge AS
SELECT {link_type} || ':' || l.source_block_id || ':' || t.resource_id AS edge_id,
       l.resource_id AS from_id, t.resource_id AS to_id, {link_type} AS edge_type,
       l.source_block_id, 1.0 AS confidence, '{created_by}' AS created_by, l.resource_id AS resource_id,
       l.rowid AS link_rowid          -- written order (schema 5's edge rowid order): readers ORDER BY it
FROM evidence_link l
JOIN evidence_resource t ON t.source_root_relative_path = l.target_path
JOIN evidence_block_row b ON b.block_id = l.source_block_id AND b.resource_id = l.resource_id
WHERE t.resource_id <> l.resource_id
  AND NOT EXISTS (SELECT 1 FROM evidence_link d WHERE d.target_path = l.target_path  -- first of repeats
                  AND d.source_block_id = l.source_block_id AND d.rowid < l.rowid);
-- SPEC §6's evidence_edge: the stored edges, the link edges, and one page_contains_block /
-- section_contains_block edge per block, derived from its page and section_id (edge_id:
-- '<edge_type>:<block_id>').
CREATE VIEW IF NOT EXISTS evidence_edge AS
SELECT edge_id, from_id, to_id, edge_type, source_block_id, confidence, '{created_by}' AS created_by, resource_id
FROM evidence_edge_row
UNION ALL
SELECT edge_id, from_id, to_id, edge_type, source_block_id, confidence, created_by, resource_id
FROM evidence_link_edge
UNION ALL
SELECT 'page_contains_block:' || block_id, resource_id || ':page-' || page, block_id, 'page_contains_block',
       block_id, 1.0, '{created_by}', resource_id
FROM evidence_block_row WHERE page IS NOT NULL
UNION ALL
SELECT 'section_contains_block:' || block_id, section_id, block_id, 'section_contains_block',
       block_id, 1.0, '{created_by}', resource_id
FROM evidence_block_row WHERE section_id IS NOT NULL;
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
-- who links here (build/index/linkgraph.py, backlinks), and a link's repeats in its block (evidence_link_edge)
CREATE INDEX IF NOT EXISTS evidence_link_target ON evidence_link(target_path, source_block_id);
-- an edit reads these few links without a scan of every link row (130,000 at 10,000 notes); a write from
-- empty builds them (and evidence_resource's below) once the rows are in (writer.py BULK_INDEXES)
-- (on kind, one value in it: its entries are in rowid order, the written order recorded_aliases reads)
CREATE INDEX IF NOT EXISTS evidence_link_alias ON evidence_link(kind) WHERE {alias_links};
CREATE INDEX IF NOT EXISTS evidence_link_tag ON evidence_link(lower(target), resource_id, source_block_id)
    WHERE {tag_links};
CREATE INDEX IF NOT EXISTS evidence_link_mention ON evidence_link(lower(target), resource_id, source_block_id)
    WHERE {mention_links};
CREATE INDEX IF NOT EXISTS evidence_link_report ON evidence_link(resource_id) WHERE {report_links};
-- the build summary's resources that are not ok, by status, and those with warnings (recorded.py); partial:
-- an index of every status would lead the planner to read a join's evidence_resource by status = 'ok'
CREATE INDEX IF NOT EXISTS evidence_resource_not_ok ON evidence_resource(status, source_root_relative_path)
    WHERE {not_ok};
CREATE INDEX IF NOT EXISTS evidence_resource_warned ON evidence_resource(source_root_relative_path) WHERE {warned};
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
-- an edit re-points the old ids that landed on a block it retires (index/anchors.py `retire`): by successor
CREATE INDEX IF NOT EXISTS evidence_anchor_successor ON evidence_anchor(successor_block_id);
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
""".format(  # noqa: E501 (the DDL's lines are stored in sqlite_master as written)
    link_type=LINK_TYPE_SQL,
    section_path=SECTION_PATH_SQL,
    char_range=CHAR_RANGE_SQL,
    line_range=LINE_RANGE_SQL,
    locator=LOCATOR_SQL,
    created_by=CREATED_BY,
    fts_tokenize=FTS_TOKENIZE,
    alias_links=ALIAS_LINKS.format(l=""),
    tag_links=TAG_LINKS.format(l=""),
    mention_links=MENTION_LINKS.format(l=""),
    report_links=REPORT_LINKS.format(l=""),
    not_ok=NOT_OK.format(l=""),
    warned=WARNED.format(l=""),
)


def create_schema(conn: sqlite3.Connection) -> None:
    conn.executescript(DDL)
