"""The page layout of `evidence.sqlite` for browsers that read it over HTTP range requests (SPEC §9, §6).

The static site's search box (`site_templates/_static/search.js`) opens the same file the API reads, a
few 4 KiB pages at a time. Two things decide how many pages a query touches: how many FTS5 segments
the index has (every query reads each segment's b-tree; every write transaction appends one), and free
pages between the tables. The policy, by the way the build writes (`writer.py`):
- a copy-and-rename write (a fresh or rebuilt index) ends with `lay_out`: FTS 'optimize' (one segment;
  an index filled from empty is one already, lifted to level 5 by `fts_fill.py`) and VACUUM when more
  than `VACUUM_FREE_SHARE` of the file is free (at 60,000 blocks, 94 MB, bench/static_search.py measured
  `optimize` at 0.2-1.0 s and VACUUM at 1.6-1.8 s: O(index));
- an in-place write (an incremental build) must cost O(change), so it never optimizes: it appends a
  segment (two when it re-inserts rowids it just deleted: FTS5 flushes when rowids go down), and
  `merge_step` does a bounded FTS5 'merge' (at most about `MERGE_PAGES` pages written) inside the same
  transaction, of the level holding the most segments if it holds 4 or more (`usermerge`). Such a merge
  takes ALL of a level's segments, so the full build's segment sits on a level the writes' segments
  reach only after some 3,000 writes (`fts_fill.py`; on level 0, where it sat before, the third edit
  after a full build began rewriting the whole index, 256 pages an edit). The merges combine the
  writes' own segments, which climb a level per 4 merges, 3 at most on each: after n writes since the
  full build about 1 + 3 * (floor(log4 n) + 1) segments at most (7 up to 15 writes, 10 up to 63, 13 up
  to 255), one or two more while a merge spans writes; each costs a range reader about one more page
  per query term. Measured: README "Incremental builds". (A cross-level, negative 'merge' grew the
  count to 74 on the 1,000-note index, each write restarting a merge of the large segment; automerge
  alone: 2-16.) `MAX_SEGMENTS` is the bound the tests hold 3 * `MAX_SEGMENTS`
  small writes to (they reach 4). When incremental writes have freed more than
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
MAX_SEGMENTS = 8  # what 3 * MAX_SEGMENTS small in-place writes keep the segment count at or under (tests)
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
    holding the most segments, if four or more; O(1) in the index's size (the full build's segment is
    out of its reach: `fts_fill.py`)."""
    conn.execute("INSERT INTO evidence_fts(evidence_fts, rank) VALUES ('merge', ?)", [MERGE_PAGES])
