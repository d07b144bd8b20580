"""build/index/layout.py: the index a build leaves is laid out for range-request readers (one FTS segment,
4 KiB pages, rollback journal) and is an ordinary SQLite file that Datasette and the API read."""

from __future__ import annotations

import sqlite3

from mnote_evidence.build.index import fts_fill, layout
from tests.conftest import connect, run_build


def segments(conn) -> int:
    return conn.execute("SELECT count(DISTINCT segid) FROM evidence_fts_idx").fetchone()[0]


def largest_segment(conn) -> tuple[int, int]:
    """(segid, %_idx rows) of the FTS segment with the most b-tree entries: the one a full build wrote."""
    return tuple(
        conn.execute(
            "SELECT segid, count(*) FROM evidence_fts_idx GROUP BY segid ORDER BY 2 DESC, 1 LIMIT 1"
        ).fetchone()
    )


def test_full_build_leaves_one_fts_segment_and_4k_pages_incremental_ones_a_bounded_few(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    conn = connect(out)
    assert segments(conn) == 1  # a fresh index is laid out whole
    # filled with a large FTS hash (fts_fill.BULK_FTS_HASH), left with FTS5's default for the writes below
    assert dict(conn.execute("SELECT k, v FROM evidence_fts_config"))["hashsize"] == fts_fill.FTS_HASH_DEFAULT
    full = largest_segment(conn)
    conn.close()
    counts, largest = [], []
    for i in range(3 * layout.MAX_SEGMENTS):  # each in-place build appends a segment; merges bound the count
        (workspace / "Inbox/Extra.md").write_text(
            f"# Extra\n\nA quokka note about 吗啉, take {i}.\n", "utf-8"
        )
        run_build(workspace, out)
        conn = connect(out)
        counts.append(segments(conn))
        largest.append(largest_segment(conn))
        conn.close()
    assert counts[0] == 2 and max(counts) <= layout.MAX_SEGMENTS + 1, counts
    # the full build's segment is never merged with theirs (fts_fill.py): no build rewrote the whole index
    assert set(largest) == {full}, largest
    conn = connect(out)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == layout.PAGE_SIZE
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert (
        conn.execute("SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH '\"quokka\"'").fetchone()[0]
        == 1
    )
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_vacuum_only_when_a_fifth_of_the_file_is_free(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    conn.execute("CREATE VIRTUAL TABLE evidence_fts USING fts5(text)")
    conn.execute("CREATE TABLE filler (x)")
    conn.executemany("INSERT INTO filler VALUES (?)", [("x" * 2000,)] * 200)
    conn.executemany("INSERT INTO evidence_fts VALUES (?)", [("alpha beta",)] * 10)
    assert layout.lay_out(conn) is False
    conn.execute("DELETE FROM filler")
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] > 0
    assert layout.lay_out(conn) is True
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0


def test_a_database_written_from_empty_is_compacted(tmp_path):
    """Written from empty (hash-ordered index pages part full, pages freed by the FTS merge), a file is
    rewritten compactly by `compact` even with less than a fifth of it free."""
    conn = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    conn.execute("CREATE VIRTUAL TABLE evidence_fts USING fts5(text)")
    conn.execute("CREATE TABLE t (k TEXT UNIQUE)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO t VALUES (?)", [(f"{(i * 7919) % 10007:05d}" * 8,) for i in range(10007)])
    conn.executemany("INSERT INTO evidence_fts VALUES (?)", [("alpha beta",)] * 10)
    conn.execute("DELETE FROM t WHERE rowid <= 1000")
    conn.execute("COMMIT")
    before = conn.execute("PRAGMA page_count").fetchone()[0]
    assert 0 < conn.execute("PRAGMA freelist_count").fetchone()[0] < before * layout.VACUUM_FREE_SHARE
    assert layout.lay_out(conn) is False  # an incremental build's file is left as it is
    assert layout.lay_out(conn, compact=True) is True
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert conn.execute("PRAGMA page_count").fetchone()[0] < before
