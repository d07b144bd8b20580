"""Stage 4: write `evidence.sqlite`, atomically and incrementally.

Three ways, each all-or-nothing for every reader:
- in place (an index of this schema, segmentation unchanged): ONE transaction under SQLite's rollback
  journal (`synchronous=FULL`, `cache_spill` off): a kill leaves the old file or the new one, and
  readers read the old state until the commit. O(change);
- from empty, as the build goes (`FreshIndex`, `starts_empty`): a working copy filled as each resource
  is recorded, laid out (`layout.lay_out`) and renamed over the old file. O(index), beside the parse;
- copy and rename (a re-segmentation; a damaged or empty previous file): the changes applied to a copy
  with no journal, laid out and renamed. O(index).
A changed resource replaces only its own rows (`rows.insert_update`, every way); a note's links are
replaced only when they changed (`IndexChanges.links`). Details: docs/architecture.md.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnote_evidence.build.core import text
from mnote_evidence.build.core.errors import IndexDamaged
from mnote_evidence.build.core.fsutil import fsync_path
from mnote_evidence.build.core.model import LinkRow
from mnote_evidence.build.core.sqlite_ro import connect_ro
from mnote_evidence.build.core.urls import MOVED_PAGES_DIR, Pages
from mnote_evidence.build.index import anchors, fts_fill, layout
from mnote_evidence.build.index.knowledge_text import pack_text
from mnote_evidence.build.index.rows import ResourceUpdate, insert, insert_update, sql_value
from mnote_evidence.build.index.schema import create_schema


@dataclass
class IndexChanges:
    updates: list[ResourceUpdate] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    # note resource id -> (its evidence_link rows, their hash): replaces the note's links; ([], None) drops
    # them
    links: dict[str, tuple[list[LinkRow], str | None]] = field(default_factory=dict)
    stamps: list[tuple[int | None, int | None, str]] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    knowledge: list[dict[str, Any]] | None = None  # the whole knowledge_source table; None = leave as is
    rebuild: bool = False  # start from an empty database (the previous one is of another schema)
    resegment: bool = False  # re-segment the FTS rows of resources not updated (segmentation changed)
    knowledge_texts: dict[str, str] = field(default_factory=dict)
    # a resource left the output (an ignore file, `publish: false`): written as a compact copy, so none of
    # its text stays in free pages or in an FTS segment
    purge: bool = False

    def resource_ids_written(self) -> set[str]:
        """Every resource id whose `evidence_resource` row `_apply` inserts, updates or deletes: the
        other rows stay as they were read before the write (`render/data.py` `FromBuild`)."""
        return (
            {u.row.resource_id for u in self.updates}
            | set(self.stale)
            | set(self.removed)
            | {rid for _, _, rid in self.stamps}
            | set(self.links)
        )


def now_ms() -> int:
    return int(time.time() * 1000)


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


def is_valid_db(path: Path, thorough: bool = False, conn: sqlite3.Connection | None = None) -> bool:
    """An SQLite file with our resource table (a hot journal of a killed build is rolled back by
    `connect_ro`). `thorough` adds `PRAGMA quick_check`, O(file): only where the file is read whole
    anyway (the copy path); an in-place write that meets a damaged page fails and falls back to it.
    `conn`: a read-only connection to `path` the caller has open (and closes)."""
    try:
        own = conn is None
        conn = connect_ro(path) if own else conn
        try:
            conn.execute("SELECT count(*) FROM evidence_resource").fetchone()
            return not thorough or conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        finally:
            if own:
                conn.close()
    except sqlite3.DatabaseError:
        return False


def _fts_rows(conn: sqlite3.Connection, where: str, params: list) -> Iterable[tuple[str, int, str, str]]:
    """('delete', rowid, indexed text, block_id) of the FTS rows of the blocks `where` selects: the values
    an external-content index removes a row by (what it indexed: the segmented text)."""
    for rowid, body, block_id in conn.execute(
        f"SELECT id, text, block_id FROM evidence_block_row WHERE {where}", params
    ):
        yield "delete", rowid, text.segment_for_index(body), block_id


def _delete_resource_rows(conn: sqlite3.Connection, resource_id: str) -> None:
    conn.executemany(
        "INSERT INTO evidence_fts (evidence_fts, rowid, text, block_id) VALUES (?, ?, ?, ?)",
        list(_fts_rows(conn, "resource_id = ?", [resource_id])),
    )
    for table in ("evidence_edge_row", "evidence_block_row", "evidence_section", "evidence_resource"):
        conn.execute(f"DELETE FROM {table} WHERE resource_id = ?", [resource_id])


def _replace_links(conn: sqlite3.Connection, changes: IndexChanges) -> None:
    """Replace the links of each note in `changes.links` (and record their hash). Its link edges follow:
    the `evidence_link_edge` view derives them from these rows (an edge whose source block is not one of
    the note's blocks is left out there, SPEC §6)."""
    for rid, (rows, digest) in sorted(changes.links.items()):
        conn.execute("DELETE FROM evidence_link WHERE resource_id = ?", [rid])
        conn.execute("UPDATE evidence_resource SET links_hash = ? WHERE resource_id = ?", [digest, rid])
        insert(conn, "evidence_link", rows)


def _resegment(conn: sqlite3.Connection) -> int:
    """Rewrite every FTS row from its block's stored text with the current segmentation. 'delete-all'
    empties the index without reading what it held (rows indexed by another segmentation: the 'delete'
    of a resource's rows before this, with this segmentation's values, is undone here too); it is then
    filled like a fresh one (`fts_fill`)."""
    rows = conn.execute("SELECT id, text, block_id FROM evidence_block_row ORDER BY id").fetchall()
    conn.execute("INSERT INTO evidence_fts (evidence_fts) VALUES ('delete-all')")
    fts_fill.begin(conn)
    conn.executemany(
        "INSERT INTO evidence_fts(rowid, text, block_id) VALUES (?, ?, ?)",
        ((i, text.segment_for_index(t), b) for i, t, b in rows),
    )
    return len(rows)


def starts_empty(db_path: Path, rebuild: bool, valid: bool | None = None) -> bool:
    """Whether `write_index` writes `db_path` from empty: a rebuild for another schema, or no usable
    index there (the build then streams its rows into a `FreshIndex` as it goes). `valid`: what
    `is_valid_db` said of the file this build read (`PreviousBuild.valid`); None: ask it."""
    if valid is None:
        valid = db_path.exists() and is_valid_db(db_path)
    return rebuild or not valid


def write_index(
    db_path: Path, changes: IndexChanges, fresh: FreshIndex | None = None, valid: bool | None = None
) -> int:
    """Apply `changes` (in place, or on a copy renamed into place; into `fresh` if the build opened one,
    which holds the rows of `changes.updates` it was given already); returns how many FTS rows were
    re-segmented from stored text. `valid`: as `starts_empty`'s (the build holds its lock from the read
    to this write: no other build changed the file meanwhile; a damaged page still fails the write)."""
    if fresh is not None:
        return fresh.finish(changes)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    if valid is None:
        valid = db_path.exists() and is_valid_db(db_path)
    if not (changes.rebuild or changes.resegment or changes.purge) and valid:
        try:
            return _write_in_place(db_path, changes)
        except sqlite3.DatabaseError as exc:
            if "malformed" not in str(exc) and "not a database" not in str(exc):
                raise
            # damaged: the changes are only a delta, so the file is moved aside and the next build rebuilds it
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
        create_schema(
            conn
        )  # IF NOT EXISTS: writes nothing to an index of this schema (executescript commits)
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
    if conn.execute("SELECT count(*) FROM evidence_resource").fetchone()[0] == 0:
        return FreshIndex(db_path, tmp, conn).finish(changes)  # nothing copied (or nothing in it)
    try:
        conn.execute("BEGIN")
        resegmented = _apply(conn, changes)
        if changes.resegment:
            fts_fill.end(conn)
        conn.execute("COMMIT")
        _lay_out_and_replace(conn, tmp, db_path, compact=changes.purge)
        return resegmented
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise


def _lay_out_and_replace(conn: sqlite3.Connection, tmp: Path, db_path: Path, compact: bool) -> None:
    """A committed working copy: laid out for range-request readers (the static site's search box),
    closed and renamed over `db_path`."""
    layout.lay_out(conn, compact=compact)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    replace_file(tmp, db_path)


class FreshIndex:
    """An index written from empty on a working copy next to `db_path` (`starts_empty`). The build opens
    it before the parse and `add`s each resource's rows as it records the resource, in the build's order
    (block ids follow it), so the inserts overlap the parse; `finish(changes)` writes the rest of `changes`
    (the updates after those added, links, knowledge, meta), builds the deferred indexes, lays the file
    out and renames it into place. Until then the previous file is untouched: on any error (`add` and
    `finish` alike) or a build that ends otherwise, `discard` (or leaving the `with`) closes and removes
    the copy; a killed build leaves a stray temp file that `cleanup_stray_temps` removes."""

    def __init__(self, db_path: Path, tmp: Path, conn: sqlite3.Connection):
        self.db_path, self.tmp, self.conn = db_path, tmp, conn
        self.next_id = 1
        self.added: list[str] = []  # resource ids added, in order: a prefix of `changes.updates`
        try:
            conn.execute("BEGIN")
            self.deferred = _defer_indexes(conn)
            fts_fill.begin(conn)
        except BaseException:
            self.discard()
            raise

    @classmethod
    def open(cls, db_path: Path) -> FreshIndex:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        return cls(db_path, *_open_working_copy(db_path, fresh=True))

    def __enter__(self) -> FreshIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()

    def add(self, update: ResourceUpdate) -> None:
        """Insert `update`'s rows (the caller records it in `changes.updates` in the same order)."""
        if self.conn is None:
            raise RuntimeError("this index was finished or discarded")
        try:
            self.next_id = insert_update(self.conn, update, self.next_id)
        except BaseException:
            self.discard()
            raise
        self.added.append(update.row.resource_id)

    def finish(self, changes: IndexChanges) -> int:
        """Write the rest of `changes` and rename the index into place; returns 0 (nothing to re-segment)."""
        try:
            if [u.row.resource_id for u in changes.updates[: len(self.added)]] != self.added:
                raise ValueError(
                    "the updates added are not the first of changes.updates: block ids would differ"
                )
            resegmented = _apply(self.conn, changes, self)
            # built once over the filled tables: a sort, not a b-tree insert per row
            for ddl in self.deferred:
                self.conn.execute(ddl)
            fts_fill.end(self.conn)
            self.conn.execute("COMMIT")
            _lay_out_and_replace(self.conn, self.tmp, self.db_path, compact=True)
            self.conn = None
            return resegmented
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Close and remove the working copy (nothing once it is renamed into place)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        self.tmp.unlink(missing_ok=True)


BULK_TABLES = (
    "evidence_block_row",
    "evidence_section",
    "evidence_edge_row",
)
# indexes of other tables that only readers after the write use
BULK_INDEXES = (
    "evidence_link_alias",
    "evidence_link_mention",
    "evidence_link_report",
    "evidence_link_tag",
    "evidence_resource_not_ok",
    "evidence_resource_warned",
)
BULK_CACHE_KIB = 64 * 1024  # page cache of a write from empty (SQLite's default: 2 MiB)


def _defer_indexes(conn: sqlite3.Connection) -> list[str]:
    """A write from empty (inside its transaction): drop the secondary indexes of `BULK_TABLES` and
    `BULK_INDEXES` and return their DDL (schema.py's) to create once the rows are in; a larger page
    cache for the load. `_apply` from empty never looks rows of these tables up nor reads through those
    indexes; a duplicate block id fails the unique index's creation instead of an insert, the build alike."""
    conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
    tables, names = ", ".join("?" * len(BULK_TABLES)), ", ".join("?" * len(BULK_INDEXES))
    rows = conn.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
        f"AND (tbl_name IN ({tables}) OR name IN ({names})) ORDER BY name",
        BULK_TABLES + BULK_INDEXES,
    ).fetchall()
    for name, _ in rows:
        conn.execute(f"DROP INDEX {name}")
    return [ddl for _, ddl in rows]


def replace_file(tmp: Path, db_path: Path) -> None:
    """fsync `tmp`, rename it over `db_path`, fsync the folder: readers see the old file or the new one."""
    fsync_path(tmp)
    os.replace(tmp, db_path)
    fsync_path(db_path.parent)


def _apply(conn: sqlite3.Connection, changes: IndexChanges, fresh: FreshIndex | None = None) -> int:
    """Every change, inside the caller's transaction (into `fresh`: from empty, so no old rows to read,
    delete or re-segment); returns the FTS rows re-segmented."""
    resegmented = 0
    stamp = now_ms()
    previous = (
        {}
        if fresh
        else {u.row.resource_id: anchors.old_blocks(conn, u.row.resource_id) for u in changes.updates}
    )
    for rid in changes.removed + list(previous):
        _delete_resource_rows(conn, rid)
    for rid in changes.removed:
        changes.links.setdefault(rid, ([], None))
    conn.executemany(
        "UPDATE evidence_resource SET status = 'stale', updated_at_ms = ? WHERE resource_id = ?",
        [(stamp, rid) for rid in changes.stale],
    )
    conn.executemany(
        "UPDATE evidence_resource SET source_size = ?, source_mtime_ns = ? WHERE resource_id = ?",
        changes.stamps,
    )
    if (
        changes.resegment and fresh is None
    ):  # before the updates: their new rows are segmented as they are inserted
        resegmented = _resegment(conn)
    if fresh is not None:
        for update in changes.updates[len(fresh.added) :]:
            fresh.add(update)
    else:
        next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM evidence_block_row").fetchone()[0]
        for update in changes.updates:
            next_id = insert_update(conn, update, next_id)
            rid = update.row.resource_id
            if previous.get(rid):
                anchors.retire(conn, rid, previous[rid], anchors.old_blocks(conn, rid), stamp)
    _replace_links(conn, changes)
    _place_pages(conn)
    if changes.knowledge is not None:
        conn.execute("DELETE FROM knowledge_source")
        insert(conn, "knowledge_source", changes.knowledge)
    _write_knowledge_texts(conn, changes)
    conn.executemany(
        "INSERT INTO build_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(k, sql_value(v)) for k, v in changes.meta.items()],
    )
    return resegmented


def _place_pages(conn: sqlite3.Connection) -> None:
    """Every row's `page_url` as `urls.Pages` places it over all rows' paths (the site's placement): a
    new or removed file can move the page of a row this build did not write (`page_collision`). Rows
    are written with their own `page_path`, so only the moved ones and the ones under `_page/` (moved
    before, or reserved names) can differ."""
    pages = Pages(path for (path,) in conn.execute("SELECT source_root_relative_path FROM evidence_resource"))
    placed = conn.execute(
        "SELECT source_root_relative_path, page_url FROM evidence_resource WHERE page_url LIKE ? ESCAPE '\\'",
        (MOVED_PAGES_DIR.replace("_", "\\_") + "/%",),
    ).fetchall()
    moved = {path: None for path in pages.moved} | dict(placed)
    if pages.moved:
        marks = ",".join("?" * len(pages.moved))
        moved |= dict(
            conn.execute(
                "SELECT source_root_relative_path, page_url FROM evidence_resource "
                f"WHERE source_root_relative_path IN ({marks})",
                list(pages.moved),
            ).fetchall()
        )
    conn.executemany(
        "UPDATE evidence_resource SET page_url = ? WHERE source_root_relative_path = ?",
        [(pages.url(path), path) for path, url in moved.items() if pages.url(path) != url],
    )


def _write_knowledge_texts(conn: sqlite3.Connection, changes: IndexChanges) -> None:
    """The text each LightRAG document was made from; rows of files LightRAG does not hold go."""
    conn.executemany(
        "INSERT OR REPLACE INTO knowledge_text VALUES (?, ?, ?)",
        [(path, *pack_text(text)) for path, text in sorted(changes.knowledge_texts.items())],
    )
    if changes.knowledge is not None:
        conn.execute(
            "DELETE FROM knowledge_text WHERE source_root_relative_path NOT IN "
            "(SELECT source_root_relative_path FROM knowledge_source WHERE lightrag_doc_id IS NOT NULL)"
        )


def cleanup_stray_temps(db_path: Path) -> None:
    """Remove working copies left by builds that were killed."""
    for stray in db_path.parent.glob(f".{db_path.name}.*.tmp"):
        stray.unlink(missing_ok=True)
