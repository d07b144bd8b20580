"""The static site's search index: what the search box reads on a static host (SPEC §9), beside the site.

`_search/` holds a copy of only the tables the box queries (`search_query.js`: the FTS index, the block
rows, their resources and sections, and the `evidence_block` view that derives locators), split into
files of at most `max_file_bytes` (`_search/db.000`, `db.001`, …) for hosts with a per-file limit, and
`manifest.json`: sql.js-httpvfs's "chunked" configuration plus the copy's hash (its `cacheBust`, so a
browser never mixes files of two builds). The copy keeps the rows, rowids and FTS segments of
`evidence.sqlite` as they are, so the box ranks with the same bm25 statistics as the API: same answers.
Invariants: every file is written atomically and only when its bytes changed (a small edit rewrites only
the files whose pages it moved); files past the new end are removed; the manifest is written last.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from mnote_evidence.build.core.defaults import DEFAULT_SEARCH_FILE_MIB
from mnote_evidence.build.index.layout import PAGE_SIZE
from mnote_evidence.build.render import site_files

SEARCH_DIR = "_search"
MANIFEST = f"{SEARCH_DIR}/manifest.json"
CHUNK_PREFIX = "db."
SUFFIX_LENGTH = 3  # db.000 … db.999: 1,000 files of 8 MiB are 8 GiB of index
DEFAULT_MAX_FILE_BYTES = int(DEFAULT_SEARCH_FILE_MIB * (1 << 20))
FORMAT = "mnote-search-sqlite-1"

# The tables the box reads, in the order they are laid out; their indexes come along (the box's
# queries use each: blocks of a resource by (resource_id, ordinal), a resource by its path).
TABLES = ("evidence_resource", "evidence_section", "evidence_block_row")
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


def write(out: Path, db_path: Path, max_file_bytes: int) -> SearchIndexReport:
    """Write `_search/` for `db_path` into the site `out` (see the module docstring)."""
    max_file_bytes = max(PAGE_SIZE, max_file_bytes // PAGE_SIZE * PAGE_SIZE)  # whole pages per file
    with tempfile.TemporaryDirectory(prefix="mnote-search-") as tmp:
        copy = Path(tmp) / "search.sqlite"
        _copy_search_tables(db_path, copy)
        data = copy.read_bytes()
    report = SearchIndexReport(bytes=len(data))
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
        "cacheBust": hashlib.sha256(data).hexdigest()[:16],
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
                conn.execute(schema[table])
                conn.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table} ORDER BY rowid")
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
