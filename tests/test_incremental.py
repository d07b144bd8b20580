"""Incremental builds cost what changed (docs/performance.md): files are hashed only
when their size or mtime changed (`--rehash`: all), a touched file with the same bytes is not parsed,
a no-op writes nothing at all, and the index is updated in place."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mnote_evidence.build.pipeline import DB_NAME
from tests.conftest import connect, run_build

DAY_AGO = time.time() - 86400


def _age(root: Path) -> None:
    """Give every file an mtime a day old: stamps the build can trust (younger than 2 s are hashed again)."""
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (DAY_AGO, DAY_AGO))


def _snapshot(out: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(out).as_posix(): (p.stat().st_mtime_ns, p.stat().st_ino)
        for p in out.rglob("*")
        if p.is_file()
    }


def test_unchanged_files_are_not_read_and_touched_ones_not_parsed(workspace, tmp_path):
    out = tmp_path / "out"
    _age(workspace)
    first = run_build(workspace, out)
    assert first.hashed == sum(
        1 for _ in connect(out).execute("SELECT 1 FROM evidence_resource WHERE source_hash IS NOT NULL")
    )
    again = run_build(workspace, out)
    assert again.hashed == 0 and again.parsed == 0 and not again.changed
    note = workspace / "Archive/Old Ideas.md"
    os.utime(note, (DAY_AGO + 60, DAY_AGO + 60))  # touched: same bytes, new mtime
    touched = run_build(workspace, out)
    assert touched.hashed == 1 and touched.parsed == 0 and not touched.changed
    assert run_build(workspace, out).hashed == 0  # its new stamp was recorded
    # a change that keeps size and mtime is invisible to the stamp; --rehash finds it
    text = note.read_text("utf-8")
    note.write_text(text.replace("Text PDFs", "TEXT pdfs"), "utf-8")
    os.utime(note, (DAY_AGO + 60, DAY_AGO + 60))
    assert note.stat().st_size == len(text.encode())
    assert run_build(workspace, out).parsed == 0
    rehashed = run_build(workspace, out, rehash=True)
    assert rehashed.parsed == 1 and rehashed.hashed == first.hashed
    assert (
        connect(out)
        .execute("SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH 'TEXT'")
        .fetchone()[0]
    )


def test_a_file_written_just_now_is_hashed_again_next_time(workspace, tmp_path):
    out = tmp_path / "out"
    _age(workspace)
    run_build(workspace, out)
    note = workspace / "Inbox/Fresh.md"
    note.write_text("# Fresh\n\nJust written.\n", "utf-8")  # mtime: now, inside the racy window
    assert run_build(workspace, out).parsed == 1
    conn = connect(out)
    assert (
        conn.execute(
            "SELECT source_mtime_ns FROM evidence_resource WHERE source_root_relative_path = 'Inbox/Fresh.md'"
        ).fetchone()[0]
        is None
    )
    os.utime(note, (DAY_AGO, DAY_AGO))
    later = run_build(workspace, out)
    assert later.hashed == 1 and later.parsed == 0  # hashed (no trusted stamp), same bytes: not parsed


def test_a_no_op_writes_nothing_and_an_edit_updates_the_index_in_place(workspace, tmp_path):
    out = tmp_path / "out"
    _age(workspace)
    run_build(workspace, out, site=True)
    before = _snapshot(out)
    report = run_build(workspace, out, site=True)
    assert not report.changed and report.site.pages_written == 0 and not report.site.front_page_written
    after = _snapshot(out)
    assert after == before, {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)}
    note = workspace / "Archive/Old Ideas.md"
    note.write_text(note.read_text("utf-8") + "\nOne more line.\n", "utf-8")
    report = run_build(workspace, out, site=True)
    assert report.changed and report.parsed == 1
    assert (out / DB_NAME).stat().st_ino == before[DB_NAME][1]  # the same file, updated in place
    assert not list(out.glob(f".{DB_NAME}.*.tmp")) and not (out / f"{DB_NAME}-journal").exists()
    conn = connect(out)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert (
        conn.execute("SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH 'more'").fetchone()[0] == 1
    )
