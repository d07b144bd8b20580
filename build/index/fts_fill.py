"""Filling `evidence_fts` from empty (a fresh index, a re-segmentation: `writer.py`) so that the one
segment it ends as sits at a high FTS5 level, out of reach of the merges of later in-place writes.

FTS5 merges ALL of a level's segments once it holds four, so a segment on level L meets the edits'
segments only after about 4^L edits. With FTS5's public commands only: `begin` leaves an incremental
merge of dummy rows (negative rowids, which no block has) half done, which keeps the fill's flushes
from being promoted down; `end` deletes the dummy rows and runs the 'optimize' that writes everything
once onto `LEVEL`. Invariant: the index holds exactly the rows the fill inserted (the dummy rows and
their delete markers cancel). Mechanism and costs: docs/performance.md.
"""

from __future__ import annotations

import sqlite3

BULK_FTS_HASH = 64 * 2**20  # FTS5 'hashsize' while filled from empty: terms pending before a flush
FTS_HASH_DEFAULT = 2**20
AUTOMERGE_DEFAULT = 4
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
    """FTS5's 'hashsize': how many new terms it holds before writing them out as a segment. Large while
    filling from empty (fewer flushes and automerges); `end` sets the default back for incremental writes."""
    _command(conn, "hashsize", size)
