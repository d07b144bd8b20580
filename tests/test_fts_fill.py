"""build/index/fts_fill.py: an FTS index filled from empty holds exactly the rows inserted (the dummy rows
that lift its segment leave no term, size row or statistic behind), ends as one segment, and the bounded
merges of later in-place writes (`layout.merge_step`) leave that segment alone. Asserted by counts: the
segment's id and the rows each merge step writes."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from mnote_evidence.build.index import fts_fill, layout
from mnote_evidence.build.index.schema import create_schema

WORDS = [f"w{i:05d}" for i in range(20000)]
INSERT = "INSERT INTO evidence_fts (rowid, text, block_id) VALUES (?, ?, ?)"
DELETE = "INSERT INTO evidence_fts (evidence_fts, rowid, text, block_id) VALUES ('delete', ?, ?, ?)"


def _rows(first: int, n: int, rng: random.Random) -> list[tuple[int, str, str]]:
    return [(i, " ".join(rng.choices(WORDS, k=20)), f"b{i}") for i in range(first, first + n)]


def _filled(path: Path, lifted: bool, rows: list[tuple[int, str, str]]) -> sqlite3.Connection:
    """A new index filled with `rows` in one transaction, as `FreshIndex` does (`lifted`), or as it did
    before: the same large hash (one segment, on level 0), no lift."""
    conn = sqlite3.connect(path, isolation_level=None)
    create_schema(conn)
    conn.execute("BEGIN")
    hashsize = "INSERT INTO evidence_fts (evidence_fts, rank) VALUES ('hashsize', ?)"
    if lifted:
        fts_fill.begin(conn)
    else:
        conn.execute(hashsize, [fts_fill.BULK_FTS_HASH])
    conn.executemany(INSERT, rows)
    if lifted:
        fts_fill.end(conn)
    else:
        conn.execute(hashsize, [fts_fill.FTS_HASH_DEFAULT])
    conn.execute("COMMIT")
    layout.lay_out(conn)
    return conn


def _largest_segment(conn: sqlite3.Connection) -> int:
    return conn.execute(
        "SELECT segid FROM evidence_fts_idx GROUP BY segid ORDER BY count(*) DESC, segid LIMIT 1"
    ).fetchone()[0]


def _contents(conn: sqlite3.Connection) -> tuple:
    """Every token instance, the size rows and the bm25 statistics (FTS5's averages record)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, evidence_fts, instance)"
    )
    return (
        conn.execute("SELECT term, doc, col, offset FROM temp.vocab ORDER BY 1, 2, 3, 4").fetchall(),
        conn.execute("SELECT * FROM evidence_fts_docsize ORDER BY id").fetchall(),
        conn.execute("SELECT block FROM evidence_fts_data WHERE id = 1").fetchone(),
    )


def test_a_lifted_fill_holds_exactly_what_a_plain_one_does(tmp_path):
    rows = _rows(1, 2000, random.Random(1))
    plain, lifted = (
        _filled(tmp_path / "plain.sqlite", False, rows),
        _filled(tmp_path / "lifted.sqlite", True, rows),
    )
    assert layout.segments(lifted) == 1 == layout.segments(plain)
    assert _contents(lifted) == _contents(plain)
    assert lifted.execute("SELECT count(*) FROM evidence_fts_docsize WHERE id < 0").fetchone()[0] == 0
    config = dict(lifted.execute("SELECT k, v FROM evidence_fts_config"))
    assert (
        config["automerge"] == fts_fill.AUTOMERGE_DEFAULT and config["hashsize"] == fts_fill.FTS_HASH_DEFAULT
    )
    match = "SELECT rowid, bm25(evidence_fts) FROM evidence_fts WHERE evidence_fts MATCH ? ORDER BY rowid"
    for word in ("w00001", "w12345", "zzfill", "zzfill0001"):
        assert lifted.execute(match, [word]).fetchall() == plain.execute(match, [word]).fetchall()


def _write(conn: sqlite3.Connection, old: list[tuple[int, str, str]], new: list[tuple[int, str, str]]) -> int:
    """One in-place write (`writer._write_in_place`'s FTS part): a note's rows replaced, then the merge
    step. Returns the rows the merge step wrote."""
    conn.execute("BEGIN")
    conn.executemany(DELETE, old)
    conn.executemany(INSERT, new)
    conn.execute("SAVEPOINT flushed")  # FTS5 writes its pending terms out here: the count is the merge's
    conn.execute("RELEASE flushed")
    before = conn.total_changes
    layout.merge_step(conn)
    written = conn.total_changes - before
    conn.execute("COMMIT")
    return written


def test_incremental_merges_leave_the_filled_segment_alone(tmp_path):
    """Without the lift, the third write's merge takes the whole index (its one segment is on level 0
    with theirs) and writes `MERGE_PAGES` pages per write until it is rewritten; with it, 3 * MAX_SEGMENTS
    writes merge only their own small segments, and their count stays bounded."""
    rng = random.Random(2)
    rows = _rows(1, 4000, rng)
    for lifted in (False, True):
        conn = _filled(tmp_path / f"{lifted}.sqlite", lifted, rows)
        largest, note, next_id = _largest_segment(conn), rows[:40], len(rows) + 1
        merged, counts = [], []
        for _ in range(3 * layout.MAX_SEGMENTS):
            new = _rows(next_id, 40, rng)
            merged.append(_write(conn, note, new))
            note, next_id = new, next_id + 40
            counts.append(layout.segments(conn))
        if lifted:
            assert _largest_segment(conn) == largest
            assert max(merged) < layout.MERGE_PAGES / 4 and max(counts) <= layout.MAX_SEGMENTS, (
                merged,
                counts,
            )
        else:  # the control: what the lift avoids
            assert _largest_segment(conn) != largest and max(merged) >= layout.MERGE_PAGES, merged
        conn.close()
