"""Stage 4: write `evidence.sqlite`, atomically and incrementally (README "What a build does").

Two ways, each all-or-nothing for every reader:
- in place (an index of this schema exists, segmentation unchanged): the changes are
  applied to the file itself inside ONE transaction with SQLite's rollback journal
  (`journal_mode=DELETE`, `synchronous=FULL`; never WAL, see `layout.py`). Each page's
  old content is in the fsynced `-journal` before the page is overwritten, and deleting
  the journal is the commit. A kill at any moment leaves the old file (no journal, or a
  hot journal that the next read-write open rolls back: `sqlite_ro.connect_ro` does so
  for readers) or the new one. The writer's page cache holds every change until COMMIT
  (`cache_spill` off), so readers keep reading the old state until the commit's
  exclusive lock, which they wait out (busy timeout). Cost: O(what changed);
- copy and rename (no usable index, a rebuild for another schema, or a re-segmentation
  that rewrites every FTS row): the previous file (if any) is copied to a temporary file
  next to it, the changes are applied there with no journal, laid out (`layout.lay_out`)
  and renamed over the old file. Cost: O(index).
A changed resource replaces only its own rows; a note's links are replaced only when they
changed (`IndexChanges.links`, keyed by the note); its link edges are the `evidence_link_edge` view's.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from itertools import chain
from operator import methodcaller
from pathlib import Path
from typing import Any, Iterable


from mnote_evidence.build.errors import IndexDamaged
from mnote_evidence.build.ids import edge_id
from mnote_evidence.build.fsutil import fsync_path
from mnote_evidence.build.index import anchors, layout
from mnote_evidence.build.index.schema import CREATED_BY, STORED_EDGE_TYPES, create_schema
from mnote_evidence.build.knowledge.texts import pack_text
from mnote_evidence.build.model import EdgeRow, LinkRow, ParsedResourceArtifact, ResourceRow
from mnote_evidence.build import text
from mnote_evidence.build.sqlite_ro import connect_ro
from mnote_evidence.build.urls import page_url


@dataclass
class ResourceUpdate:
    """A resource whose rows are (re)written: its evidence_resource row and, if ok, its artifact."""

    row: ResourceRow
    artifact: ParsedResourceArtifact | None = None
    # (SEGMENTATION_VERSION, the FTS value of each block), computed where it was parsed (build/prepare.py);
    # None, or of another version: segmented here
    segmented: tuple[str, list[str]] | None = None


@dataclass
class IndexChanges:
    updates: list[ResourceUpdate] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # resource ids to mark stale
    removed: list[str] = field(default_factory=list)  # resource ids to delete
    # note resource id -> (its evidence_link rows, their and its link edges' hash): replaces what the note had;
    # ([], None) drops it. Only notes whose links, their resolutions or edge types changed (or were re-parsed)
    # are here. Link edges are not stored: the evidence_link_edge view derives them (schema.py).
    links: dict[str, tuple[list[LinkRow], str | None]] = field(default_factory=dict)
    stamps: list[tuple[int | None, int | None, str]] = field(default_factory=list)  # (size, mtime_ns, id): unchanged
    meta: dict[str, str] = field(default_factory=dict)
    knowledge: list[dict[str, Any]] | None = None  # the whole knowledge_source table; None = leave as is
    rebuild: bool = False  # start from an empty database (the previous one is of another schema)
    resegment: bool = False  # re-segment the FTS rows of resources not updated (segmentation changed)
    knowledge_texts: dict[str, str] = field(default_factory=dict)  # path -> text just sent to LightRAG

    def resource_ids_written(self) -> set[str]:
        """Every resource id whose `evidence_resource` row `_apply` inserts, updates or deletes: the
        other rows stay as they were read before the write (`render/data.py` `FromBuild`)."""
        return ({u.row.resource_id for u in self.updates} | set(self.stale) | set(self.removed)
                | {rid for _, _, rid in self.stamps} | set(self.links))


def now_ms() -> int:
    return int(time.time() * 1000)


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _open_working_copy(db_path: Path, fresh: bool = False) -> tuple[Path, sqlite3.Connection]:
    tmp = db_path.with_name(f".{db_path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        if not fresh and db_path.exists() and is_valid_db(db_path, thorough=True):
            shutil.copyfile(db_path, tmp)
        conn = sqlite3.connect(tmp, isolation_level=None)
        # The working copy is thrown away on any failure, so no journal is needed while writing.
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        create_schema(conn)
    except BaseException:  # disk full while copying: leave no working copy behind
        tmp.unlink(missing_ok=True)
        raise
    return tmp, conn


def is_valid_db(path: Path, thorough: bool = False) -> bool:
    """An SQLite file with our resource table (a hot journal of a killed build is rolled back by
    `connect_ro`). `thorough` adds `PRAGMA quick_check`, O(file): only where the file is read whole
    anyway (the copy path); an in-place write that meets a damaged page fails and falls back to it."""
    try:
        conn = connect_ro(path)
        try:
            conn.execute("SELECT count(*) FROM evidence_resource").fetchone()
            return not thorough or conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False


def _fts_rows(conn: sqlite3.Connection, where: str, params: list) -> Iterable[tuple[str, int, str, str]]:
    """('delete', rowid, indexed text, block_id) of the FTS rows of the blocks `where` selects: the values
    an external-content index removes a row by (what it indexed: the segmented text)."""
    for rowid, body, block_id in conn.execute(f"SELECT id, text, block_id FROM evidence_block_row WHERE {where}",
                                              params):
        yield "delete", rowid, text.segment_for_index(body), block_id


def _delete_resource_rows(conn: sqlite3.Connection, resource_id: str) -> None:
    conn.executemany("INSERT INTO evidence_fts (evidence_fts, rowid, text, block_id) VALUES (?, ?, ?, ?)",
                     list(_fts_rows(conn, "resource_id = ?", [resource_id])))
    for table in ("evidence_edge_row", "evidence_block_row", "evidence_section", "evidence_resource"):
        conn.execute(f"DELETE FROM {table} WHERE resource_id = ?", [resource_id])


def _block_rows(artifact: ParsedResourceArtifact, row: ResourceRow, first_id: int):
    """`evidence_block_row` rows: what the `evidence_block` view and its locator are computed from."""
    for ordinal, block in enumerate(artifact.blocks):
        chars, lines = block.char_range or (None, None), block.line_range or (None, None)
        yield {
            "id": first_id + ordinal, "block_id": block.id, "resource_id": row.resource_id,
            "ordinal": ordinal, "kind": block.type, "text": block.text, "section_id": block.section_id,
            "page": block.page, "bbox_json": _json(block.bbox),
            "char_start": chars[0], "char_end": chars[1], "line_start": lines[0], "line_end": lines[1],
            "paragraph_index": block.paragraph_index, "para_id": block.para_id, "role": block.role,
            "box_holds_text": None if block.box_holds_text is None else int(block.box_holds_text),
            "anchor": block.anchor,
        }


def structural_edges(artifact: ParsedResourceArtifact, resource_id: str) -> Iterable[EdgeRow]:
    """resource_contains_page, from each page's first block. A block's page_contains_block and
    section_contains_block edges are not stored: the `evidence_edge` view derives them (schema.py)."""
    first_on_page: set[int] = set()
    for block in artifact.blocks:
        if block.page is not None and block.page not in first_on_page:
            first_on_page.add(block.page)
            yield edge_row(resource_id, f"{resource_id}:page-{block.page}", "resource_contains_page", block.id,
                           resource_id)


def edge_row(frm: str, to: str, kind: str, source_block_id: str, resource_id: str) -> EdgeRow:
    return {"edge_id": edge_id(frm, to, kind, source_block_id), "from_id": frm, "to_id": to,
            "edge_type": kind, "source_block_id": source_block_id, "confidence": 1.0,
            "created_by": CREATED_BY, "resource_id": resource_id}


def _edge_rows(edges: Iterable[EdgeRow]) -> Iterable[dict]:
    """`evidence_edge_row` rows: `created_by` is the view's constant (every stored edge is the build's);
    the per-block edge types are the view's, never stored."""
    for e in edges:
        if e["created_by"] != CREATED_BY or e["edge_type"] not in STORED_EDGE_TYPES:
            raise ValueError(f"evidence_edge_row holds the build's {STORED_EDGE_TYPES}, not {e['edge_type']!r} "
                             f"by {e['created_by']!r}")
        yield {k: v for k, v in e.items() if k != "created_by"}


def _insert(conn: sqlite3.Connection, table: str, rows: Iterable[dict], ignore: bool = False) -> None:
    """INSERT dict rows into one of our tables (its schema is `index/schema.py`'s); a list or dict value
    is stored as JSON. Plain sqlite3: sqlite-utils would import pandas and numpy when they are installed,
    a quarter of a second on every build's start-up (issue 17)."""
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
    C-level loops (`map`, `zip`): at 10,000 notes a per-value Python call cost seconds (issue 17)."""
    columns = list(dict.fromkeys(chain.from_iterable(batch)))
    cols = [list(map(methodcaller("get", c), batch)) for c in columns]
    for i, col in enumerate(cols):
        if not _PLAIN_TYPES.issuperset(map(type, col)):
            cols[i] = [_sql_value(v) for v in col]
    values = list(zip(*cols))
    conn.executemany(f"{into} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values)


_PLAIN_TYPES = frozenset((str, int, float, bytes, type(None)))  # stored as they are; any other: `_sql_value`


def _sql_value(value: object) -> object:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list, tuple)) else value


def _insert_update(conn: sqlite3.Connection, update: ResourceUpdate, next_id: int) -> int:
    row = update.row
    _insert(conn, "evidence_resource", [{**row.to_sql(), "page_url": page_url(row.path)}])
    artifact = update.artifact
    if artifact is None:
        return next_id
    blocks = list(_block_rows(artifact, row, next_id))
    _insert(conn, "evidence_block_row", blocks)
    conn.executemany("INSERT INTO evidence_fts(rowid, text, block_id) VALUES (?, ?, ?)",
                     zip((b["id"] for b in blocks), _fts_values(update), (b["block_id"] for b in blocks)))
    _insert(conn, "evidence_section", ({
        "section_id": s.id, "resource_id": row.resource_id, "title": s.title, "level": s.level,
        "path_json": _json(s.path), "page_start": s.page_start, "page_end": s.page_end,
        "parent_section_id": s.parent_id, "block_count": len(s.block_ids),
    } for s in artifact.sections))
    _insert(conn, "evidence_edge_row", _edge_rows(structural_edges(artifact, row.resource_id)), ignore=True)
    return next_id + len(blocks)


def _fts_values(update: ResourceUpdate) -> list[str]:
    """The FTS value of each block of `update`: the ones segmented with it, if by this segmentation."""
    blocks = update.artifact.blocks if update.artifact else []
    if update.segmented and update.segmented[0] == text.SEGMENTATION_VERSION and len(update.segmented[1]) == len(blocks):
        return update.segmented[1]
    return [text.segment_for_index(b.text) for b in blocks]


def _replace_links(conn: sqlite3.Connection, changes: IndexChanges) -> None:
    """Replace the links of each note in `changes.links` (and record their hash). Its link edges follow:
    the `evidence_link_edge` view derives them from these rows (an edge whose source block is not one of
    the note's blocks is left out there, SPEC §6)."""
    for rid, (rows, digest) in sorted(changes.links.items()):
        conn.execute("DELETE FROM evidence_link WHERE resource_id = ?", [rid])
        conn.execute("UPDATE evidence_resource SET links_hash = ? WHERE resource_id = ?", [digest, rid])
        _insert(conn, "evidence_link", rows)


def _resegment(conn: sqlite3.Connection) -> int:
    """Rewrite every FTS row from its block's stored text with the current segmentation. 'delete-all'
    empties the index without reading what it held (rows indexed by another segmentation: the 'delete'
    of a resource's rows before this, with this segmentation's values, is undone here too)."""
    rows = conn.execute("SELECT id, text, block_id FROM evidence_block_row ORDER BY id").fetchall()
    conn.execute("INSERT INTO evidence_fts (evidence_fts) VALUES ('delete-all')")
    conn.executemany("INSERT INTO evidence_fts(rowid, text, block_id) VALUES (?, ?, ?)",
                     ((i, text.segment_for_index(t), b) for i, t, b in rows))
    return len(rows)


def write_index(db_path: Path, changes: IndexChanges) -> int:
    """Apply `changes` (in place, or on a copy renamed into place); returns how many FTS rows were
    re-segmented from stored text."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    if not (changes.rebuild or changes.resegment) and db_path.exists() and is_valid_db(db_path):
        try:
            return _write_in_place(db_path, changes)
        except sqlite3.DatabaseError as exc:
            if "malformed" not in str(exc) and "not a database" not in str(exc):
                raise
            # damaged (no quick_check reads the whole file first): the changes are only a delta, so
            # the file is moved aside and the next build, finding no index, rebuilds it whole
            aside = db_path.with_name(f"{db_path.name}.damaged")
            os.replace(db_path, aside)
            Path(f"{db_path}-journal").unlink(missing_ok=True)
            raise IndexDamaged(db_path, aside, str(exc)) from None
    return _write_copy(db_path, changes)


def _write_in_place(db_path: Path, changes: IndexChanges) -> int:
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=60)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")  # the range readers need a rollback journal (layout.py)
        conn.execute("PRAGMA synchronous=FULL")  # the journal is on disk before any page is overwritten
        conn.execute("PRAGMA cache_spill=OFF")  # no page reaches the file before COMMIT: readers read on
        create_schema(conn)  # IF NOT EXISTS: writes nothing to an index of this schema (executescript commits)
        conn.execute("BEGIN IMMEDIATE")
        try:
            resegmented = _apply(conn, changes)
            layout.merge_step(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
    _compact(db_path)
    return resegmented


def _compact(db_path: Path) -> None:
    """After an in-place write: if a fifth of the file is free (`layout.wants_vacuum`), VACUUM INTO a
    working copy renamed into place (atomic like the copy path; readers of the old file read on)."""
    conn = connect_ro(db_path)
    try:
        if not layout.wants_vacuum(conn):
            return
    finally:
        conn.close()
    tmp = db_path.with_name(f".{db_path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("VACUUM INTO ?", [str(tmp)])
        replace_file(tmp, db_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        conn.close()


def _write_copy(db_path: Path, changes: IndexChanges) -> int:
    tmp, conn = _open_working_copy(db_path, fresh=changes.rebuild)
    try:
        conn.execute("BEGIN")
        from_empty = conn.execute("SELECT count(*) FROM evidence_resource").fetchone()[0] == 0
        deferred = _defer_indexes(conn) if from_empty else []
        resegmented = _apply(conn, changes, from_empty)
        for ddl in deferred:  # built once over the filled tables: a sort, not 470,000 b-tree inserts
            conn.execute(ddl)
        conn.execute("COMMIT")
        layout.lay_out(conn, compact=from_empty)  # for range-request readers (the static site's search box)
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.close()
        replace_file(tmp, db_path)
        return resegmented
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise


BULK_TABLES = ("evidence_block_row", "evidence_section", "evidence_edge_row")  # written once per block / section
BULK_CACHE_KIB = 64 * 1024  # page cache of a write from empty (SQLite's default: 2 MiB)


def _defer_indexes(conn: sqlite3.Connection) -> list[str]:
    """A write from empty (inside its transaction): drop the secondary indexes of `BULK_TABLES` and
    return their DDL (schema.py's) to create once the rows are in; a larger page cache for the load.
    `_apply` from empty never looks rows of these tables up (no old rows to read or delete), so no
    query needs them meanwhile; a duplicate block id fails the unique index's creation instead of an
    insert, the build alike. At 10,000 notes (470,000 blocks) this halved the block inserts' time."""
    conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
    marks = ", ".join("?" * len(BULK_TABLES))
    rows = conn.execute(f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
                        f"AND tbl_name IN ({marks}) ORDER BY name", BULK_TABLES).fetchall()
    for name, _ in rows:
        conn.execute(f"DROP INDEX {name}")
    return [ddl for _, ddl in rows]


def replace_file(tmp: Path, db_path: Path) -> None:
    """fsync `tmp`, rename it over `db_path`, fsync the folder: readers see the old file or the new one."""
    fsync_path(tmp)
    os.replace(tmp, db_path)
    fsync_path(db_path.parent)


def _apply(conn: sqlite3.Connection, changes: IndexChanges, from_empty: bool = False) -> int:
    """Every change, inside the caller's transaction; returns the FTS rows re-segmented."""
    resegmented = 0
    stamp = now_ms()
    previous = {} if from_empty else {u.row.resource_id: anchors.old_blocks(conn, u.row.resource_id)
                                 for u in changes.updates}  # from empty: no old rows to read or delete
    for rid in changes.removed + list(previous):
        _delete_resource_rows(conn, rid)
    for rid in changes.removed:
        changes.links.setdefault(rid, ([], None))
    conn.executemany("UPDATE evidence_resource SET status = 'stale', updated_at_ms = ? "
                     "WHERE resource_id = ?", [(stamp, rid) for rid in changes.stale])
    conn.executemany("UPDATE evidence_resource SET source_size = ?, source_mtime_ns = ? WHERE resource_id = ?",
                     changes.stamps)
    if changes.resegment:  # before the updates: their new rows are segmented as they are inserted
        resegmented = _resegment(conn)
    next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM evidence_block_row").fetchone()[0]
    for update in changes.updates:
        next_id = _insert_update(conn, update, next_id)
        rid = update.row.resource_id
        if previous.get(rid):
            anchors.retire(conn, rid, previous[rid], anchors.old_blocks(conn, rid), stamp)
    _replace_links(conn, changes)
    if changes.knowledge is not None:
        conn.execute("DELETE FROM knowledge_source")
        _insert(conn, "knowledge_source", changes.knowledge)
    _write_knowledge_texts(conn, changes)
    conn.executemany("INSERT INTO build_meta (key, value) VALUES (?, ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                     [(k, _sql_value(v)) for k, v in changes.meta.items()])
    return resegmented


def _write_knowledge_texts(conn: sqlite3.Connection, changes: IndexChanges) -> None:
    """The text each LightRAG document was made from; rows of files LightRAG no longer holds go."""
    conn.executemany("INSERT OR REPLACE INTO knowledge_text VALUES (?, ?, ?)",
                     [(path, *pack_text(text)) for path, text in sorted(changes.knowledge_texts.items())])
    if changes.knowledge is not None:
        conn.execute("DELETE FROM knowledge_text WHERE source_root_relative_path NOT IN "
                     "(SELECT source_root_relative_path FROM knowledge_source WHERE lightrag_doc_id IS NOT NULL)")


def cleanup_stray_temps(db_path: Path) -> None:
    """Remove working copies left by builds that were killed."""
    for stray in db_path.parent.glob(f".{db_path.name}.*.tmp"):
        stray.unlink(missing_ok=True)
