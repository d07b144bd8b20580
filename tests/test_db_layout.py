"""build/index/layout.py: the index a build leaves is laid out for range-request readers (one FTS segment,
4 KiB pages, rollback journal) and stays a file Datasette and the API read as before."""

from __future__ import annotations

import sqlite3

from mnote_evidence.build.index import layout
from tests.conftest import connect, run_build


def segments(conn) -> int:
    return conn.execute("SELECT count(DISTINCT segid) FROM evidence_fts_idx").fetchone()[0]


def test_build_leaves_one_fts_segment_and_4k_pages(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    (workspace / "Inbox/Extra.md").write_text("# Extra\n\nA quokka note about 吗啉.\n", "utf-8")
    run_build(workspace, out)  # an incremental build appends a segment; the layout merges it
    conn = connect(out)
    assert segments(conn) == 1
    assert conn.execute("PRAGMA page_size").fetchone()[0] == layout.PAGE_SIZE
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH '\"quokka\"'").fetchone()[0] == 1


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
