"""Filling `evidence_fts` from empty (a fresh index, a re-segmentation: `writer.py`) so that the one
segment it ends as sits at a high FTS5 level, out of reach of the merges of later in-place writes.

Why (FTS5's merge policy, fts5_index.c): each write transaction flushes its new terms as a segment into
level 0; `layout.merge_step` ('merge' N) picks the level holding the most segments (4 or more) and merges
ALL of that level's segments into one on the level above. A fill flushed as one segment lands on level 0
and 'optimize' leaves a lone segment where it is, so from the third edit after a full build the edits'
merges rewrote the whole index: measured at 10,000 notes (8,659 pages), 20 of the first 30 edits wrote
256 pages of it (15-88 ms each; into level 1 over edits 3-15, into level 2 from edit 23), and at 1,000
notes it was rewritten at edits 3-6, 15-18 and 63-66 (levels 1, 2, 3), 4 times further apart each time.
A segment on level L waits for three others to reach L, about 4^L edits apart, so one on `LEVEL` meets
the edits' segments only after some 3,000 edits (simulated at 1,000 notes: none in 1,500); until then the
edits merge only their own small segments (at 10,000 notes: at most 178 rows written, 3 ms, 30 edits).

How, with FTS5's public commands only (nothing writes its structure record): 'optimize' of segments on
different levels writes its output one level above a new top level (nLevel + 1), and empty levels stay.
`begin` builds, from a few dummy rows (negative rowids: no block has one; the content table never holds
them), an incremental merge left half done on level 2 (output on level 3). That unfinished merge is what
keeps the lift: a flush promotes every smaller segment of the levels above down to level 0 unless a level
on the way is mid-merge, and automerge (off until `end`) would finish it. `end` deletes the dummy rows
('delete' markers, newer than the rows) and runs the 'optimize' that rewrites everything once into level
5; it is the oldest segment then, so the markers and the rows they delete cancel: the index holds exactly
what the fill inserted (tests/test_fts_fill.py, tests/test_fts_content.py). Cost: that one rewrite (the
fill alone, one segment, needed none): +0.4 s CPU at 10,000 notes (0.18 -> 0.56 s for the flush and
'optimize'; the full build VACUUMs the pages it frees). A re-segmentation, filled with FTS5's defaults
before, gets cheaper: 3.3 -> 2.7 s CPU (the 64 MiB hash, no automerge). An FTS5 that flushes or promotes
otherwise only leaves the segment on another level: the answers are the same rows either way.
"""

from __future__ import annotations

import sqlite3

BULK_FTS_HASH = 64 * 2**20  # FTS5 'hashsize' while filled from empty: terms pending before a flush
FTS_HASH_DEFAULT = 2**20  # FTS5's own default, what incremental writes work with
AUTOMERGE_DEFAULT = 4  # FTS5's own default
LEVEL = 5  # where `end` leaves the index's segment (with SQLite 3.40-3.47's FTS5)
# (rowid, text): one row of ~6 leaf pages (a half-done merge needs more than 2 pages of output), and
# one-term rows, each smaller than it (a larger segment above is not promoted down by their flush)
_WIDE = (-1, " ".join(f"zzfill{i:04d}" for i in range(1500)))
_NARROW = [(-2, "zzfill"), (-3, "zzfill")]

_INSERT = "INSERT INTO evidence_fts (rowid, text, block_id) VALUES (?, ?, '')"
_DELETE = "INSERT INTO evidence_fts (evidence_fts, rowid, text, block_id) VALUES ('delete', ?, ?, '')"


def _command(conn: sqlite3.Connection, name: str, value: int | None = None) -> None:
    if value is None:
        conn.execute("INSERT INTO evidence_fts (evidence_fts) VALUES (?)", [name])
    else:
        conn.execute("INSERT INTO evidence_fts (evidence_fts, rank) VALUES (?, ?)", [name, value])


def _flushed(conn: sqlite3.Connection, row: tuple[int, str]) -> None:
    """Insert `row` as a segment of its own (opening a savepoint flushes FTS5's pending terms)."""
    conn.execute("SAVEPOINT fts_fill")
    conn.execute(_INSERT, row)
    conn.execute("RELEASE fts_fill")


def begin(conn: sqlite3.Connection) -> None:
    """On an empty `evidence_fts`, inside the caller's transaction: a large hash (`_set_hash_size`), no
    automerge, and the half-done merge of dummy rows that `end`'s 'optimize' lifts the index over."""
    _set_hash_size(conn, BULK_FTS_HASH)
    _command(conn, "automerge", 0)
    _flushed(conn, _WIDE)
    _flushed(conn, _NARROW[0])
    _command(conn, "optimize")  # both on level 0: merged into one segment on level 1
    _flushed(conn, _NARROW[1])  # level 0, under the larger one on level 1
    _command(conn, "merge", -1)  # two levels: moved to level 2, merged into level 3 for ~1 page, then stopped


def end(conn: sqlite3.Connection) -> None:
    """Every row inserted, inside the same transaction: the dummy rows deleted, one 'optimize' (one
    segment, at `LEVEL`), FTS5's defaults back for the incremental writes of this file."""
    conn.executemany(_DELETE, sorted([_WIDE, *_NARROW]))  # rowids going up: one flush of them, not three
    _command(conn, "optimize")
    _command(conn, "automerge", AUTOMERGE_DEFAULT)
    _set_hash_size(conn, FTS_HASH_DEFAULT)


def _set_hash_size(conn: sqlite3.Connection, size: int) -> None:
    """FTS5 keeps new terms in a hash of this size and writes them out as a new segment when it is full;
    with its default 1 MiB an index filled from empty is flushed and merged (automerge) over and over
    before 'optimize' merges it once more. The 470,109 blocks of the 10,000-note index, inserted alone:
    FTS CPU 2.6 -> 1.9 s, 'optimize' 0.46 -> 0.16 s with 64 MiB. Kept in the FTS config: `end` sets it
    back to the default, so incremental writes work as before."""
    _command(conn, "hashsize", size)
