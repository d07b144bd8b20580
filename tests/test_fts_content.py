"""The full-text index keeps no copy of block text (schema 5): `evidence_fts` is an
external-content FTS5 index over `evidence_block_row`, indexing the segmented text. Its rows are removed
with the same segmented values ('delete'), so after any sequence of builds (edits, deletions, a
segmentation change) it must hold exactly what a fresh index of the stored text holds: compared here
token by token (fts5vocab 'instance': term, row, column, offset) on real builds of the fixtures."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mnote_evidence.build.core import text
from mnote_evidence.build.index.schema import FTS_TOKENIZE
from tests.conftest import connect, run_build

NOTE = "Daily/2026-11-03.md"


def instances(out: Path) -> tuple[list[tuple], list[tuple]]:
    """(every token instance the index holds, those a fresh index of the stored text would hold)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("ATTACH ? AS ev", [f"file:{out / 'evidence.sqlite'}?mode=ro"])
    conn.execute("CREATE VIRTUAL TABLE temp.got USING fts5vocab(ev, evidence_fts, instance)")
    conn.execute(f"CREATE VIRTUAL TABLE temp.fresh USING fts5(text, tokenize = '{FTS_TOKENIZE}')")
    rows = conn.execute("SELECT id, text FROM ev.evidence_block_row").fetchall()
    conn.executemany(
        "INSERT INTO temp.fresh (rowid, text) VALUES (?, ?)",
        [(i, text.segment_for_index(t)) for i, t in rows],
    )
    conn.execute("CREATE VIRTUAL TABLE temp.want USING fts5vocab(temp, fresh, instance)")
    got = conn.execute("SELECT term, doc, offset FROM temp.got ORDER BY 1, 2, 3").fetchall()
    want = conn.execute("SELECT term, doc, offset FROM temp.want ORDER BY 1, 2, 3").fetchall()
    conn.close()
    return got, want


def assert_fresh(out: Path) -> int:
    got, want = instances(out)
    assert got == want
    conn = connect(out)
    try:  # and bm25's statistics: one size row per block, the same row count
        rows = conn.execute("SELECT count(*) FROM evidence_block_row").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM evidence_fts_docsize").fetchone()[0] == rows
    finally:
        conn.close()
    return len(got)


def test_index_holds_no_text_and_reads_the_stored_text(built):
    _, out, _ = built
    conn = connect(out)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "evidence_fts_content" not in names and "evidence_block_row" in names
        row = conn.execute(
            "SELECT f.rowid, f.text, f.block_id, b.text, b.block_id FROM evidence_fts f "
            "JOIN evidence_block_row b ON b.id = f.rowid WHERE evidence_fts MATCH ? LIMIT 1",
            [text.fts_query("线程作用域")],
        ).fetchone()
        assert row is not None and row[1] == row[3] and row[2] == row[4]  # the block's own, unsegmented
    finally:
        conn.close()
    assert assert_fresh(out) > 1000


def test_edits_and_deletions_leave_the_index_a_fresh_one(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    note = workspace / NOTE
    note.write_text(note.read_text("utf-8") + "\n\nA new paragraph about 吗啉 and zzedited words.\n", "utf-8")
    (workspace / "Inbox" / "new.md").write_text("# 新的笔记\n\nzzadded 线程作用域 text.\n", "utf-8")
    run_build(workspace, out)
    assert_fresh(out)
    note.unlink()  # stale, then removed by the next build
    run_build(workspace, out)
    run_build(workspace, out)
    assert_fresh(out)
    conn = connect(out)
    try:
        match = "SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH ?"
        assert conn.execute(match, ["zzedited"]).fetchone()[0] == 0
        assert conn.execute(match, ["zzadded"]).fetchone()[0] == 1
    finally:
        conn.close()


def test_a_segmentation_change_with_a_deletion_leaves_a_fresh_index(workspace, tmp_path, monkeypatch):
    """The deleted resource's rows are 'delete'd with the new segmentation's values before 'delete-all'
    re-segments everything: the result is still exactly a fresh index."""
    out = tmp_path / "out"
    run_build(workspace, out)
    (workspace / NOTE).unlink()
    run_build(workspace, out)  # stale: removed by the next build, which also re-segments
    original = text.segment_for_index
    monkeypatch.setattr(text, "SEGMENTATION_VERSION", "test-3")
    monkeypatch.setattr(text, "segment_for_index", lambda t: f"{original(t)} zzseg")
    report = run_build(workspace, out)
    assert report.removed == 1 and "segmentation" in report.redone
    assert_fresh(out)
