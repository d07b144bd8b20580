"""The rows of one resource, as `evidence.sqlite` stores them (SPEC §6; schema: `index/schema.py`).

`insert_update` inserts a `ResourceUpdate`'s rows: its `evidence_resource` row and, if it was parsed,
its blocks (`evidence_block_row`, integer ids from `first_id` on, in block order), their FTS rows
(segmented where it was parsed, `prepare.py`, if of this segmentation), its sections and its stored
structural edges. Every way the index is written (`writer.py`) inserts through it, so a resource's rows
are the same either way. Invariants: a block's integer id is `first_id` + its ordinal; no Python call
per value.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter, methodcaller
from typing import Any

from mnote_evidence.build.core import text
from mnote_evidence.build.core.ids import ENTITY_PREFIX, edge_id
from mnote_evidence.build.core.model import EdgeRow, ParsedResourceArtifact, ResourceRow
from mnote_evidence.build.core.urls import page_url
from mnote_evidence.build.index.schema import CREATED_BY, STORED_EDGE_TYPES


@dataclass
class ResourceUpdate:
    """A resource whose rows are (re)written: its evidence_resource row and, if ok, its artifact."""

    row: ResourceRow
    artifact: ParsedResourceArtifact | None = None
    # (SEGMENTATION_VERSION, each block's FTS value) from the parse; None or another version: segmented here
    segmented: tuple[str, list[str]] | None = None


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


BLOCK_COLUMNS = (
    "id",
    "block_id",
    "resource_id",
    "ordinal",
    "kind",
    "text",
    "section_id",
    "page",
    "bbox_json",
    "char_start",
    "char_end",
    "line_start",
    "line_end",
    "paragraph_index",
    "para_id",
    "role",
    "box_holds_text",
    "anchor",
)
_INSERT_BLOCKS = (
    f"INSERT INTO evidence_block_row ({', '.join(BLOCK_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(BLOCK_COLUMNS))})"
)


def _block_values(artifact: ParsedResourceArtifact, row: ResourceRow, first_id: int) -> list[tuple]:
    """`evidence_block_row` rows (`BLOCK_COLUMNS`): what the `evidence_block` view and its locator are
    computed from. One tuple per block, no dict: a large workspace has hundreds of thousands."""
    rid, none2 = row.resource_id, (None, None)
    return [
        (
            first_id + ordinal,
            b.id,
            rid,
            ordinal,
            b.type,
            b.text,
            b.section_id,
            b.page,
            None if b.bbox is None else _json(b.bbox),
            *(b.char_range or none2),
            *(b.line_range or none2),
            b.paragraph_index,
            b.para_id,
            b.role,
            None if b.box_holds_text is None else int(b.box_holds_text),
            b.anchor,
        )
        for ordinal, b in enumerate(artifact.blocks)
    ]


def structural_edges(artifact: ParsedResourceArtifact, resource_id: str) -> Iterable[EdgeRow]:
    """resource_contains_page, from each page's first block; block_mentions_entity, from each block to
    each entity its `@` mentions name (once per block; to `ids.entity_id`). A block's page_contains_block
    and section_contains_block edges are not stored: the `evidence_edge` view derives them (schema.py)."""
    first_on_page: set[int] = set()
    for block in artifact.blocks:
        for entity in dict.fromkeys(link["target"] for link in block.links if link["kind"] == "mention"):
            yield edge_row(block.id, ENTITY_PREFIX + entity, "block_mentions_entity", block.id, resource_id)
        if block.page is not None and block.page not in first_on_page:
            first_on_page.add(block.page)
            yield edge_row(
                resource_id,
                f"{resource_id}:page-{block.page}",
                "resource_contains_page",
                block.id,
                resource_id,
            )


def edge_row(frm: str, to: str, kind: str, source_block_id: str, resource_id: str) -> EdgeRow:
    return {
        "edge_id": edge_id(frm, to, kind, source_block_id),
        "from_id": frm,
        "to_id": to,
        "edge_type": kind,
        "source_block_id": source_block_id,
        "confidence": 1.0,
        "created_by": CREATED_BY,
        "resource_id": resource_id,
    }


def _edge_rows(edges: Iterable[EdgeRow]) -> Iterable[dict]:
    """`evidence_edge_row` rows: `created_by` is the view's constant (every stored edge is the build's);
    the per-block edge types are the view's, never stored."""
    for e in edges:
        if e["created_by"] != CREATED_BY or e["edge_type"] not in STORED_EDGE_TYPES:
            raise ValueError(
                f"evidence_edge_row holds the build's {STORED_EDGE_TYPES}, not {e['edge_type']!r} "
                f"by {e['created_by']!r}"
            )
        yield {k: v for k, v in e.items() if k != "created_by"}


def insert(conn: sqlite3.Connection, table: str, rows: Iterable[dict], ignore: bool = False) -> None:
    """INSERT dict rows into one of our tables (its schema is `index/schema.py`'s); a list or dict value
    is stored as JSON. Plain sqlite3: sqlite-utils would import pandas and numpy when they are installed,
    slowing every build's start-up."""
    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    batch: list[dict] = []
    for row in rows:
        batch.append(row)
        if len(batch) == 500:
            _insert_batch(conn, f"{verb} INTO {table}", batch)
            batch = []
    if batch:
        _insert_batch(conn, f"{verb} INTO {table}", batch)


def _insert_batch(conn: sqlite3.Connection, into: str, batch: list[dict]) -> None:
    """One executemany of `batch`; a row without a column stores NULL there. Column by column with
    C-level loops (`map`, `zip`): a Python call per value costs seconds on a large workspace."""
    columns = list(dict.fromkeys(chain.from_iterable(batch)))
    cols = [list(map(methodcaller("get", c), batch)) for c in columns]
    for i, col in enumerate(cols):
        if not _PLAIN_TYPES.issuperset(map(type, col)):
            cols[i] = [sql_value(v) for v in col]
    values = list(zip(*cols))
    conn.executemany(f"{into} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values)


_PLAIN_TYPES = frozenset((str, int, float, bytes, type(None)))


def sql_value(value: object) -> object:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list, tuple)) else value


def insert_update(conn: sqlite3.Connection, update: ResourceUpdate, next_id: int) -> int:
    row = update.row
    insert(conn, "evidence_resource", [{**row.to_sql(), "page_url": page_url(row.path)}])
    artifact = update.artifact
    if artifact is None:
        return next_id
    blocks = _block_values(artifact, row, next_id)
    conn.executemany(_INSERT_BLOCKS, blocks)
    conn.executemany(
        "INSERT INTO evidence_fts(rowid, text, block_id) VALUES (?, ?, ?)",
        zip(map(itemgetter(0), blocks), fts_values(update), map(itemgetter(1), blocks)),
    )
    insert(
        conn,
        "evidence_section",
        (
            {
                "section_id": s.id,
                "resource_id": row.resource_id,
                "title": s.title,
                "level": s.level,
                "path_json": _json(s.path),
                "page_start": s.page_start,
                "page_end": s.page_end,
                "parent_section_id": s.parent_id,
                "block_count": len(s.block_ids),
            }
            for s in artifact.sections
        ),
    )
    insert(conn, "evidence_edge_row", _edge_rows(structural_edges(artifact, row.resource_id)), ignore=True)
    return next_id + len(blocks)


def fts_values(update: ResourceUpdate) -> list[str]:
    """The FTS value of each block of `update`: the ones segmented with it, if by this segmentation."""
    blocks = update.artifact.blocks if update.artifact else []
    if (
        update.segmented
        and update.segmented[0] == text.SEGMENTATION_VERSION
        and len(update.segmented[1]) == len(blocks)
    ):
        return update.segmented[1]
    return [text.segment_for_index(b.text) for b in blocks]
