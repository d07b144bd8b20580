"""The page layout of `evidence.sqlite` for browsers that read it over HTTP range requests (SPEC §9, §6).

The static site's search box (`site_templates/_static/search.js`) opens the same file the API reads, a
few 4 KiB pages at a time. Two things decide how many pages a query touches: how many FTS5 segments
the index has (every query reads each segment's b-tree; every write transaction appends one), and free
pages between the tables. The policy, by the way the build writes (`writer.py`):
- a copy-and-rename write (a fresh or rebuilt index) ends with `lay_out`: FTS 'optimize' (one segment)
  and VACUUM when more than `VACUUM_FREE_SHARE` of the file is free (at 60,000 blocks, 94 MB,
  bench/static_search.py measured `optimize` at 0.2-1.0 s and VACUUM at 1.6-1.8 s: O(index));
- an in-place write (an incremental build) must cost O(change), so it never optimizes: it appends one
  segment, and `merge_step` does a bounded FTS5 'merge' (at most about `MERGE_PAGES` pages written,
  merging levels that hold `automerge`=4 or more segments) inside the same transaction. Measured on
  the 1,000-note index over 40 small writes: segments stay at 2-4 (automerge alone: 2-16; a negative,
  cross-level 'merge' grew them to 74 as each write restarted a merge of the large segment), at
  20 ms per write against 13 ms with no merge. `MAX_SEGMENTS` is the bound tests hold it to. When incremental writes have freed more than
  `VACUUM_FREE_SHARE`, `wants_vacuum` says so and the writer rewrites the file with VACUUM INTO a
  copy that is renamed into place (rare: deleted rows' pages are reused by the rows that replace them).
A copy-and-rename write of a database written from empty also VACUUMs (`compact`): its indexes were
filled in hash order (block ids, resource ids), pages 70-85 % full, and the FTS merge freed pages; at
10,000 notes that is ~1.5 s of a ~250 s build and a 6 % smaller file (bench/index_size.py).
The query cost of a few extra segments: README "What a build does".
Invariants: rollback journal (never WAL: a range reader cannot see a -wal file), 4096-byte pages
(the chunk size the search box asks for). Cost and effect: bench/static_search.py, README "Search on a
static host".
"""

from __future__ import annotations

import sqlite3

PAGE_SIZE = 4096  # = search.js's requestChunkSize on hosts that serve byte ranges
VACUUM_FREE_SHARE = 0.2
MAX_SEGMENTS = 8  # what incremental writes keep the FTS segment count at or under (tests/test_db_layout.py)
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
    free, pages = conn.execute("PRAGMA freelist_count").fetchone()[0], conn.execute("PRAGMA page_count").fetchone()[0]
    return free > pages * VACUUM_FREE_SHARE or conn.execute("PRAGMA page_size").fetchone()[0] != PAGE_SIZE


def segments(conn: sqlite3.Connection) -> int:
    """FTS5 segments (b-trees) a query reads: the distinct segids of the %_idx table."""
    return conn.execute("SELECT count(DISTINCT segid) FROM evidence_fts_idx").fetchone()[0]


def merge_step(conn: sqlite3.Connection) -> None:
    """Inside an in-place write: a bounded FTS5 merge (about `MERGE_PAGES` pages of work) of the levels
    that hold four or more segments; O(1) in the index's size."""
    conn.execute("INSERT INTO evidence_fts(evidence_fts, rank) VALUES ('merge', ?)", [MERGE_PAGES])
