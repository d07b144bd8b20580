"""`EvidenceLocator` (schema `mnote.evidence_locator.v1`, SPEC §7): defined here and only here.

`evidence.sqlite` does not store locators: the `evidence_block` view's `locator_json` is `LOCATOR_SQL`
over columns the index stores anyway (`index/schema.py`). Every reader (the handlers, Datasette, the
search box in the browser) reads that column and gets the same locator, computed by plain SQLite with
its built-in JSON functions (3.35 in the browser): no code of ours is needed.
Invariants (`tests/test_locator.py` keeps stored locators as the oracle): keys in schema order; absent
things are absent (`json_patch` drops NULL members), except `ownerDocumentPath`, `null` for a resource
no note owns; a PDF box that does not hold its block's words (`box_holds_text = 0`) is left out and
the precision is `page`; numbers are the stored JSON tokens (`json()` copies them as written).
"""

from __future__ import annotations

from mnote_evidence.build.core.model import KIND_MARKDOWN, KIND_OFFICE, LOCATOR_SCHEMA

OPEN_ACTION = "mnote.open_resource_locator"

# aliases: b = evidence_block_row, r = its evidence_resource, s = its evidence_section (LEFT JOIN)
SECTION_PATH_SQL = "COALESCE(s.path_json, '[]')"
CHAR_RANGE_SQL = "CASE WHEN b.char_start IS NOT NULL THEN json_array(b.char_start, b.char_end) END"
LINE_RANGE_SQL = "CASE WHEN b.line_start IS NOT NULL THEN json_array(b.line_start, b.line_end) END"

PRECISION_SQL = f"""CASE
    WHEN b.bbox_json IS NOT NULL AND b.page IS NOT NULL THEN
        CASE WHEN b.box_holds_text = 0 THEN 'page' ELSE 'bbox' END
    WHEN r.kind = '{KIND_OFFICE}' OR b.paragraph_index IS NOT NULL THEN 'paragraph'
    WHEN b.line_start IS NOT NULL THEN 'line'
    ELSE 'file' END"""

LOCATOR_SQL = f"""json_insert(
    json_patch(
        json_object('schema', '{LOCATOR_SCHEMA}',
                    'ownerDocumentPath', COALESCE(r.owner_document_path,
                        CASE WHEN r.kind = '{KIND_MARKDOWN}' THEN r.source_root_relative_path END),
                    'resourcePath', r.source_root_relative_path,
                    'resourceKind', r.kind),
        json_object('blockId', b.block_id,
                    'page', b.page,
                    'bbox', CASE WHEN b.box_holds_text IS NOT 0 THEN json(b.bbox_json) END,
                    'lineRange', {LINE_RANGE_SQL},
                    'charRange', {CHAR_RANGE_SQL},
                    'paragraphIndex', b.paragraph_index)),
    '$.sectionPath', json({SECTION_PATH_SQL}),
    '$.sourceMapPath', r.source_map_path,
    '$.precision', {PRECISION_SQL},
    '$.openAction', json_object('type', '{OPEN_ACTION}', 'url', r.page_url || '#' || b.block_id))"""
