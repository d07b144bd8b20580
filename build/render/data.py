"""What the renderer reads from `evidence.sqlite`, as plain records (no HTML here).

A resource is the build's own `model.ResourceRow` (named `Resource` here); nothing re-declares its
columns. The build hands the renderer the rows it already read (`FromBuild`): only the rows its
write touched are read again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from mnote_evidence.build.core.model import ResourceRow as Resource
from mnote_evidence.build.core.sqlite_ro import connect_ro  # noqa: F401  (the renderer opens the index as data.connect_ro)

# The resource fields a page shows: its key hashes these (not build times).
PAGE_FIELDS = (
    "resource_id",
    "path",
    "kind",
    "status",
    "owner",
    "source_hash",
    "provider_version",
    "error_code",
    "error_message",
    "warnings",
    "page_count",
    "source_map_path",
)


@dataclass
class SectionNode:
    section_id: str
    title: str
    level: int
    target: str | None
    children: list[SectionNode] = field(default_factory=list)


@dataclass
class Backlink:
    from_path: str
    block_id: str
    text: str


@dataclass
class Alias:
    old_id: str
    successor: str | None


@dataclass(frozen=True)
class FromBuild:
    """What the build that just wrote the index already holds, so the renderer need not redo it: the
    resource rows it read before writing (by path) and the ids of the rows it wrote since
    (`IndexChanges.resource_ids_written`: only those are read again); its link resolver, used when built
    over the same paths and aliases as the renderer's would be; and the alias map of the link rows it
    wrote (`LinkStage.aliases`)."""

    rows: Mapping[str, Resource]
    written: set[str]
    resolver: Any = None
    aliases: dict[str, str] | None = None  # alias (lower case) -> note path; None: read them


def resources(conn: sqlite3.Connection, known: FromBuild | None = None) -> list[Resource]:
    """`resources`, and the rows read again (path -> the row `known` held for that path, None: a new
    row; None: no `known`, every row read): what changed since the build's read, without comparing
    every row (a resource's id is its path's, so a path names the same row before and after)."""
    return read_resources(conn, known)[0]


def read_resources(
    conn: sqlite3.Connection, known: FromBuild | None = None
) -> tuple[list[Resource], dict[str, Resource | None] | None]:
    """`resources`, and the rows read again (path -> the row `known` held for that path, None: a new
    row; None: no `known`, every row read): what changed since the build's read, without comparing
    10,000 rows (a resource's id is its path's, so a path names the same row before and after)."""
    if known is None:
        return [Resource.from_values(r) for r in Resource.select(conn, by_path=True)], None
    rows = [r for r in known.rows.values() if r.resource_id not in known.written]
    again: dict[str, Resource | None] = {}
    for r in Resource.select(conn, known.written):
        rows.append(Resource.from_values(r))
        again[rows[-1].path] = known.rows.get(rows[-1].path)
    rows.sort(key=attrgetter("path"))  # code point order: SQLite's BINARY order of UTF-8
    return rows, again


def page_fields(res: Resource) -> tuple[Any, ...]:
    """What of the row a page shows (`PAGE_FIELDS`): a page's key hashes these."""
    return tuple(getattr(res, k) for k in PAGE_FIELDS)


def section_tree(conn: sqlite3.Connection, resource_id: str) -> list[SectionNode]:
    """A resource's outline; each section links its first block. Two ordered reads of the resource's
    rows (its sections, then its blocks by position), so the work is in proportion to them."""
    rows = conn.execute(
        "SELECT section_id, title, level, parent_section_id FROM evidence_section "
        "WHERE resource_id = ? ORDER BY rowid",
        [resource_id],
    ).fetchall()
    if not rows:
        return []
    first: dict[str, str] = {}
    for section_id, block_id in conn.execute(
        "SELECT section_id, block_id FROM evidence_block_row WHERE resource_id = ? ORDER BY ordinal",
        [resource_id],
    ):
        if section_id is not None:
            first.setdefault(section_id, block_id)
    nodes = {r[0]: SectionNode(r[0], r[1], r[2], first.get(r[0])) for r in rows}
    roots = []
    for r in rows:
        parent = nodes.get(r[3])
        (parent.children if parent else roots).append(nodes[r[0]])
    return roots


def backlinks(conn: sqlite3.Connection, resource_id: str) -> list[Backlink]:
    return [
        Backlink(r[0], r[1], r[2])
        for r in conn.execute(
            "SELECT src.source_root_relative_path, e.source_block_id, b.text FROM evidence_link_edge e "
            "JOIN evidence_block_row b ON b.block_id = e.source_block_id "
            "JOIN evidence_resource src ON src.resource_id = b.resource_id "
            "WHERE e.to_id = ? ORDER BY 1, b.ordinal",
            [resource_id],
        )
    ]


def aliases(conn: sqlite3.Connection, resource_id: str) -> list[Alias]:
    return [
        Alias(r[0], r[1])
        for r in conn.execute(
            "SELECT old_block_id, successor_block_id FROM evidence_anchor WHERE resource_id = ? ORDER BY 1",
            [resource_id],
        )
    ]


def page_key(res: Resource, extra: list[Any]) -> str:
    """Changes whenever anything a resource's page shows may have changed."""
    payload = json.dumps([dict(zip(PAGE_FIELDS, page_fields(res))), extra], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def dependency_fingerprint(conn: sqlite3.Connection, resource_id: str) -> list[Any]:
    """Backlinks and aliases: what other resources' changes can alter on this page."""
    return fingerprint_of(backlinks(conn, resource_id), aliases(conn, resource_id))


def fingerprint_of(links: list[Backlink], old_ids: list[Alias]) -> list[Any]:
    """`dependency_fingerprint` of backlinks and aliases read already (a page rendered with its key)."""
    return [[b.__dict__ for b in links], [a.__dict__ for a in old_ids]]
