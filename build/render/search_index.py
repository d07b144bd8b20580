"""The static site's search index: what the search box reads on a static host (SPEC §9), beside the site.

`_search/` holds a copy of only the tables the box queries (`search_query.js`: the FTS index, the block
rows, their resources and sections, and the `evidence_block` view that derives locators), split into
files of at most `max_file_bytes` (`_search/db.000`, `db.001`, …) for hosts with a per-file limit, and
`manifest.json`: sql.js-httpvfs's "chunked" configuration plus the copy's hash (its `cacheBust`, so a
browser never mixes files of two builds). The copy holds the rows and rowids of `evidence.sqlite` and an
FTS index of the same segmented text, so the box ranks with the same bm25 statistics as the API: same
answers.

A build that changed a few files updates the previous copy in place (the files the build names, the
render's `dirty_since`), so only the pages those rows live on change and only the files holding them are
written again; the previous copy is the `_search/` files themselves, used only when their hash is the
one the site's sealed state recorded. Anything else, or a copy whose row count or FTS statistics then
differ from `evidence.sqlite`'s, is copied whole (compact, FTS segments as built); so is a build that
left a source out (`.mnoteignore`, `publish: false`), whose text no freed page or FTS segment may keep.
Invariants: every file is written atomically and only when its bytes changed; files past the new end are
removed; the manifest is written last.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from mnote_evidence.build.core.defaults import DEFAULT_SEARCH_FILE_MIB
from mnote_evidence.build.core.fsutil import read_inside
from mnote_evidence.build.core.text import segment_for_index
from mnote_evidence.build.core.urls import SEARCH_DIR
from mnote_evidence.build.index.layout import PAGE_SIZE, merge_step, wants_vacuum
from mnote_evidence.build.render import site_files

MANIFEST = f"{SEARCH_DIR}/manifest.json"
CHUNK_PREFIX = "db."
SUFFIX_LENGTH = 3  # db.000 … db.999: 1,000 files of 8 MiB are 8 GiB of index
DEFAULT_MAX_FILE_BYTES = int(DEFAULT_SEARCH_FILE_MIB * (1 << 20))
FORMAT = "mnote-search-sqlite-1"

# The tables the box reads, in the order they are laid out; their indexes come along (the box's
# queries use each: blocks of a resource by (resource_id, ordinal), a resource by its path).
TABLES = ("evidence_resource", "evidence_section", "evidence_block_row")
# Of a resource, the columns the box and the `evidence_block` view read (`build/core/locator.py`): not its
# hashes, times or counts, which change on a rebuild of an unchanged file and would move pages for nothing.
RESOURCE = """CREATE TABLE evidence_resource (
    resource_id TEXT PRIMARY KEY,
    owner_document_path TEXT,
    source_root_relative_path TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    source_map_path TEXT,
    page_url TEXT
)"""
COLUMNS = {
    "evidence_resource": "resource_id, owner_document_path, source_root_relative_path, kind, status, "
    "source_map_path, page_url"
}
INDEXES = ("evidence_block_resource", "evidence_section_resource")
VIEWS = ("evidence_block",)
FTS = "evidence_fts"
FTS_SHADOWS = ("data", "idx", "docsize", "config")


@dataclass
class SearchIndexReport:
    files: int = 0  # database files in `_search/`
    files_written: int = 0  # of those, written by this build (the rest were unchanged)
    bytes: int = 0  # the database's size
    largest_file: int = 0
    updated: bool = False  # the previous copy was updated in place (else: copied whole)
    sha256: str = ""  # the copy's (the site state records it: the next build's `previous`)

    @classmethod
    def unchanged(cls, recorded: object) -> SearchIndexReport:
        """The report of the index the site state recorded (`asdict` of one), nothing written."""
        fields = (
            {k: v for k, v in recorded.items() if k in cls.__dataclass_fields__}
            if isinstance(recorded, dict)
            else {}
        )
        try:
            return cls(**fields | {"files_written": 0, "updated": False})
        except TypeError:
            return cls()


def write(
    out: Path,
    db_path: Path,
    max_file_bytes: int,
    previous: str | None = None,
    changed: Iterable[str] | None = None,
) -> SearchIndexReport:
    """Write `_search/` for `db_path` into the site `out` (see the module docstring). `previous`: the hash
    of the copy the last render wrote; `changed`: the source paths whose rows may differ since (None:
    unknown, copied whole)."""
    max_file_bytes = max(PAGE_SIZE, max_file_bytes // PAGE_SIZE * PAGE_SIZE)  # whole pages per file
    updated = False
    with tempfile.TemporaryDirectory(prefix="mnote-search-") as tmp:
        copy = Path(tmp) / "search.sqlite"
        base = _previous_copy(out, previous, max_file_bytes) if previous and changed is not None else None
        if base is not None:
            copy.write_bytes(base)
            updated = _update(copy, db_path, sorted(set(changed or ())))
        if not updated:
            copy.unlink(missing_ok=True)
            _copy_search_tables(db_path, copy)
        data = copy.read_bytes()
    report = SearchIndexReport(bytes=len(data), updated=updated, sha256=hashlib.sha256(data).hexdigest())
    chunks = [data[at : at + max_file_bytes] for at in range(0, len(data), max_file_bytes)]
    for n, chunk in enumerate(chunks):
        report.files_written += site_files.write_bytes(out, chunk_name(n), chunk)
    report.files = len(chunks)
    report.largest_file = max(map(len, chunks), default=0)
    n = len(chunks)
    while (out / chunk_name(n)).exists() or (out / chunk_name(n)).is_symlink():
        site_files.unlink(out, chunk_name(n))
        n += 1
    manifest = {
        "format": FORMAT,
        "serverMode": "chunked",
        "urlPrefix": CHUNK_PREFIX,
        "suffixLength": SUFFIX_LENGTH,
        "serverChunkSize": max_file_bytes,
        "databaseLengthBytes": len(data),
        "requestChunkSize": PAGE_SIZE,
        "files": len(chunks),
        "cacheBust": report.sha256[:16],
    }
    site_files.write_text(out, MANIFEST, json.dumps(manifest, indent=1) + "\n")
    return report


def chunk_name(n: int) -> str:
    return f"{SEARCH_DIR}/{CHUNK_PREFIX}{n:0{SUFFIX_LENGTH}d}"


def _copy_search_tables(db_path: Path, dest: Path) -> None:
    """A compact database at `dest` holding `TABLES`, `INDEXES`, `VIEWS` and the FTS index of `db_path`,
    row for row (same rowids, the FTS index's own b-trees copied, not rebuilt)."""
    conn = sqlite3.connect(f"file:{quote(str(dest))}", uri=True)
    try:
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("ATTACH DATABASE ? AS src", [f"file:{quote(str(db_path))}?mode=ro"])
        names = [*TABLES, *INDEXES, *VIEWS, FTS]
        marks = ",".join("?" * len(names))
        schema = dict(
            conn.execute(f"SELECT name, sql FROM src.sqlite_schema WHERE name IN ({marks})", names).fetchall()
        )
        with conn:
            for table in TABLES:
                conn.execute(RESOURCE if table == "evidence_resource" else schema[table])
                columns = COLUMNS.get(table, "*")
                conn.execute(f"INSERT INTO main.{table} SELECT {columns} FROM src.{table} ORDER BY rowid")
            for name in (*INDEXES, *VIEWS):
                conn.execute(schema[name])
            conn.execute(schema[FTS])
            for shadow in FTS_SHADOWS:  # the index as built: same segments, same bm25 statistics
                table = f"{FTS}_{shadow}"
                conn.execute(f"DELETE FROM main.{table}")
                conn.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table}")
        conn.execute("DETACH DATABASE src")
        conn.execute("VACUUM")
    finally:
        conn.close()


def _previous_copy(out: Path, sha256: str, max_file_bytes: int) -> bytes | None:
    """The bytes of `_search/db.000`, `db.001`, … (regular files of at most `max_file_bytes` below `out`,
    never through a link) if they hash to `sha256`; None otherwise."""
    parts = []
    for n in range(10**SUFFIX_LENGTH):
        part = read_inside(out, out / chunk_name(n), max_file_bytes)
        if part is None:
            break
        parts.append(part)
    data = b"".join(parts)
    return data if data and hashlib.sha256(data).hexdigest() == sha256 else None


def _rows(conn: sqlite3.Connection, schema: str, table: str, path: str) -> list[tuple]:
    """The rows of `table` (a `TABLES` one) of the resource at source path `path`, by rowid."""
    return conn.execute(
        f"SELECT {_columns(table)} FROM {schema}.{table} t JOIN {schema}.evidence_resource r USING "
        "(resource_id) WHERE r.source_root_relative_path = ? ORDER BY t.rowid",
        [path],
    ).fetchall()


def _columns(table: str) -> str:
    """`table`'s columns in the copy, as `t.` columns of a join."""
    return ", ".join(f"t.{c.strip()}" for c in COLUMNS[table].split(",")) if table in COLUMNS else "t.*"


def _update(copy: Path, db_path: Path, paths: list[str]) -> bool:
    """Bring the copy at `copy` in line with `db_path` for the resources at `paths` (rows deleted and
    inserted, FTS rows with them); whether it then holds what `db_path` does (row counts, FTS totals)."""
    conn = sqlite3.connect(f"file:{quote(str(copy))}", uri=True)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("ATTACH DATABASE ? AS src", [f"file:{quote(str(db_path))}?mode=ro"])
        differ = [
            path
            for path in paths
            if any(_rows(conn, "main", t, path) != _rows(conn, "src", t, path) for t in TABLES)
        ]
        with conn:  # every old row out before any new one goes in: a rowid may pass from one file to another
            for path in differ:
                conn.executemany(
                    f"INSERT INTO {FTS} ({FTS}, rowid, text, block_id) VALUES ('delete', ?, ?, '')",
                    _fts_values(conn, "main", path),
                )
                for table in reversed(TABLES):
                    conn.execute(
                        f"DELETE FROM main.{table} WHERE resource_id IN (SELECT resource_id FROM "
                        "main.evidence_resource WHERE source_root_relative_path = ?)",
                        [path],
                    )
            for path in differ:
                for table in TABLES:
                    conn.execute(
                        f"INSERT INTO main.{table} SELECT {_columns(table)} FROM src.{table} t JOIN "
                        "src.evidence_resource r USING (resource_id) WHERE r.source_root_relative_path = ? "
                        "ORDER BY t.rowid",
                        [path],
                    )
                conn.executemany(
                    f"INSERT INTO {FTS} (rowid, text, block_id) VALUES (?, ?, '')",
                    _fts_values(conn, "main", path),
                )
            if differ:  # the segments small writes add stay few, as in evidence.sqlite (`layout.py`)
                merge_step(conn)
        same = all(
            conn.execute(f"SELECT count(*) FROM main.{t}").fetchone()
            == conn.execute(f"SELECT count(*) FROM src.{t}").fetchone()
            for t in TABLES
        ) and _fts_totals(conn, "main") == _fts_totals(conn, "src")
        conn.execute("DETACH DATABASE src")
        if same and wants_vacuum(conn):
            conn.execute("VACUUM")
        return same
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def _fts_values(conn: sqlite3.Connection, schema: str, path: str) -> list[tuple[int, str]]:
    """(rowid, indexed text) of the blocks of the resource at `path`: the segmented text the FTS index
    holds for each (`segment_for_index`, as the index writer indexes it)."""
    return [
        (rowid, segment_for_index(body))
        for rowid, body in conn.execute(
            f"SELECT b.id, b.text FROM {schema}.evidence_block_row b JOIN {schema}.evidence_resource r "
            "USING (resource_id) WHERE r.source_root_relative_path = ?",
            [path],
        ).fetchall()
    ]


def _fts_totals(conn: sqlite3.Connection, schema: str) -> bytes | None:
    """FTS5's averages record (rows and tokens per column: what bm25 reads besides the doclists)."""
    row = conn.execute(f"SELECT block FROM {schema}.{FTS}_data WHERE id = 1").fetchone()
    return row[0] if row else None
