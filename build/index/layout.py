"""The page layout of `evidence.sqlite` for browsers that read it over HTTP range requests (SPEC §9, §6).

The static site's search box (`site_templates/_static/search.js`) opens the same file the API reads, a
few 4 KiB pages at a time. Two things decide how many pages a query touches: an FTS5 index that is one
merged segment (an incremental build appends segments; every query reads each segment's b-tree) and
tables whose pages are contiguous and full (VACUUM). Both run on the build's private working copy,
before it is renamed into place, so a build stays atomic and Datasette reads the same file as before.
Invariants: rollback journal (never WAL: a range reader cannot see a -wal file), 4096-byte pages
(the chunk size the search box asks for). Cost and effect: bench/static_search.py, README "Search on a
static host".
"""

from __future__ import annotations

import sqlite3

PAGE_SIZE = 4096  # = search.js's requestChunkSize on hosts that serve byte ranges


def lay_out(conn: sqlite3.Connection) -> None:
    """Merge the FTS index into one segment and rewrite the file compactly (outside a transaction)."""
    conn.execute("INSERT INTO evidence_fts(evidence_fts) VALUES ('optimize')")
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    conn.execute("VACUUM")
