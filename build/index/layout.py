"""The page layout of `evidence.sqlite` for browsers that read it over HTTP range requests (SPEC §9, §6).

The static site's search box (`site_templates/_static/search.js`) opens the same file the API reads, a
few 4 KiB pages at a time. Two things decide how many pages a query touches: an FTS5 index that is one
merged segment (an incremental build appends segments; every query reads each segment's b-tree), done on
every write, and tables without free pages in between, which VACUUM restores once incremental builds have
freed more than `VACUUM_FREE_SHARE` of the file (a VACUUM rewrites the whole file; at 60,000 blocks,
94 MB, bench/static_search.py measured `optimize` at 0.2-1.0 s and VACUUM at 1.6-1.8 s). Both run on the build's private working copy,
before it is renamed into place, so a build stays atomic and Datasette reads the same file as before.
Invariants: rollback journal (never WAL: a range reader cannot see a -wal file), 4096-byte pages
(the chunk size the search box asks for). Cost and effect: bench/static_search.py, README "Search on a
static host".
"""

from __future__ import annotations

import sqlite3

PAGE_SIZE = 4096  # = search.js's requestChunkSize on hosts that serve byte ranges
VACUUM_FREE_SHARE = 0.2


def lay_out(conn: sqlite3.Connection) -> bool:
    """Merge the FTS index into one segment; rewrite the file compactly if it is a fifth free pages or has
    another page size (outside a transaction). Returns whether it vacuumed."""
    conn.execute("INSERT INTO evidence_fts(evidence_fts) VALUES ('optimize')")
    free, pages = conn.execute("PRAGMA freelist_count").fetchone()[0], conn.execute("PRAGMA page_count").fetchone()[0]
    if free <= pages * VACUUM_FREE_SHARE and conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE:
        return False
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    conn.execute("VACUUM")
    return True
