"""The page layout of `evidence.sqlite` for browsers that read it over HTTP range requests (SPEC §9, §6).

The static site's search box reads the file the API reads, a few 4 KiB pages at a time: a query reads
one b-tree per FTS5 segment, and free pages between the tables cost it reads too. A copy-and-rename
write (`writer.py`) ends with `lay_out`: one FTS segment, and VACUUM for a file written from empty or
with more than `VACUUM_FREE_SHARE` free. An in-place write stays O(change): it appends a segment and
`merge_step` merges the writes' own small segments a bounded amount (the full build's segment sits out
of reach: `fts_fill.py`); `wants_vacuum` asks for a VACUUM INTO a renamed copy once too much is free.
Invariants: rollback journal (never WAL: a range reader cannot see a -wal file); 4096-byte pages (the
chunk size the search box asks for). Costs: docs/performance.md.
"""

from __future__ import annotations

import sqlite3

PAGE_SIZE = 4096  # = search.js's requestChunkSize on hosts that serve byte ranges
VACUUM_FREE_SHARE = 0.2
MAX_SEGMENTS = 8  # the segment count 3 * MAX_SEGMENTS small in-place writes stay within (tests)
MERGE_PAGES = 256  # pages of FTS merge work per in-place write (1 MiB)


def lay_out(conn: sqlite3.Connection, compact: bool = False) -> bool:
    """Merge the FTS index into one segment; rewrite the file compactly if `compact` (written from empty),
    a fifth free pages or another page size (outside a transaction). Returns whether it vacuumed."""
    conn.execute("INSERT INTO evidence_fts(evidence_fts) VALUES ('optimize')")
    if not compact and not wants_vacuum(conn):
        return False
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    conn.execute("VACUUM")
    return True


def wants_vacuum(conn: sqlite3.Connection) -> bool:
    """More than a fifth of the file is free pages, or its page size is not `PAGE_SIZE`."""
    free, pages = (
        conn.execute("PRAGMA freelist_count").fetchone()[0],
        conn.execute("PRAGMA page_count").fetchone()[0],
    )
    return free > pages * VACUUM_FREE_SHARE or conn.execute("PRAGMA page_size").fetchone()[0] != PAGE_SIZE


def segments(conn: sqlite3.Connection) -> int:
    """FTS5 segments (b-trees) a query reads: the distinct segids of the %_idx table."""
    return conn.execute("SELECT count(DISTINCT segid) FROM evidence_fts_idx").fetchone()[0]


def merge_step(conn: sqlite3.Connection) -> None:
    """Inside an in-place write: a bounded FTS5 merge (about `MERGE_PAGES` pages of work) of the level
    holding the most segments, if four or more; O(1) in the index's size."""
    conn.execute("INSERT INTO evidence_fts(evidence_fts, rank) VALUES ('merge', ?)", [MERGE_PAGES])
