"""An index written from empty as the build goes (`writer.FreshIndex`): each resource's
rows are inserted as the build records it, during the parse, and the result is the database a write at
the end makes, row for row and byte for byte; a failure anywhere leaves the previous index and no
working copy.

Real builds of the sample workspace (notes, PDFs, a DOCX, an image, broken files) plus notes the scan
refuses and a note that fails to parse (it is gone when the parser reads it), with real worker
processes for the streamed build (out-of-order arrivals) and one process, writing at the end, for the
other.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from mnote_evidence.build import pipeline
from mnote_evidence.build.core.progress import Stage
from mnote_evidence.build.index import writer
from mnote_evidence.build.parse.run import InOrder
from tests.conftest import copy_workspace, run_build

VANISHING = "Inbox/Legacy Note.md"  # scanned, then gone when its parser reads it: a note parse error
STAMP_MS = 1_764_547_200_000  # both builds' clock, so `updated_at_ms` and `built_at_ms` compare


def _workspace(root: Path) -> Path:
    copy_workspace(root)
    os.mkfifo(root / "pipe.md")  # refused by the scan: a screened note error
    os.symlink("/etc/passwd", root / "escape.md")  # outside the root: another
    for i in range(12):  # enough notes for several pool tasks
        (root / "Extra" / f"n{i:02d}.md").parent.mkdir(exist_ok=True)
        (root / "Extra" / f"n{i:02d}.md").write_text(
            f"# Extra {i}\n\n中文段落 {i} links [[Evidence Kernel]].\n\n## Part\n\nMore text {i}.\n", "utf-8"
        )
    return root


def _build(root: Path, out: Path, **kw):
    def remove_note(event) -> None:
        if event.stage == Stage.NOTES and event.done == 0 and (root / VANISHING).exists():
            (root / VANISHING).unlink()

    return run_build(root, out, on_progress=remove_note, **kw)


def _dump(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_streamed_build_writes_the_database_a_write_at_the_end_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "now_ms", lambda: STAMP_MS)
    monkeypatch.setattr(writer, "now_ms", lambda: STAMP_MS)
    opened = []
    monkeypatch.setattr(
        writer.FreshIndex,
        "open",
        classmethod(lambda cls, db: opened.append(db) or cls(db, *writer._open_working_copy(db, fresh=True))),
    )
    # streamed: notes through the pool one per task, so they arrive out of order
    monkeypatch.setattr(pipeline, "NOTES_FOR_POOL", 1)
    monkeypatch.setattr(pipeline, "NOTE_BATCH", 1)
    streamed = _build(_workspace(tmp_path / "a" / "ws"), tmp_path / "a" / "out", jobs=2)
    assert opened == [tmp_path / "a" / "out" / "evidence.sqlite"]
    # at the end: one process, and the index written after everything was recorded
    monkeypatch.setattr(pipeline, "starts_empty", lambda db, rebuild, valid=None: False)
    at_end = _build(_workspace(tmp_path / "b" / "ws"), tmp_path / "b" / "out", jobs=1)
    assert len(opened) == 1
    errors = {e["path"]: e["code"] for e in streamed.errors}
    assert errors == {e["path"]: e["code"] for e in at_end.errors}
    assert errors[VANISHING] == "unreadable" and errors["pipe.md"] == "not_regular_file"
    assert errors["escape.md"] == "outside_root"
    assert streamed.status_counts == at_end.status_counts and streamed.status_counts["ok"] > 20
    a, b = (
        _dump(tmp_path / "a" / "out" / "evidence.sqlite"),
        _dump(tmp_path / "b" / "out" / "evidence.sqlite"),
    )
    assert len(a) > 500 and any("evidence-kernel-spec.pdf" in line for line in a)
    assert [x for x, y in zip(a, b) if x != y] == [] and len(a) == len(b)
    # the rows in the build's order: block ids follow the resources' (path order of the notes)
    conn = sqlite3.connect(tmp_path / "a" / "out" / "evidence.sqlite")
    notes = [
        p
        for (p,) in conn.execute(
            "SELECT r.source_root_relative_path FROM evidence_block_row b "
            "JOIN evidence_resource r USING (resource_id) "
            "WHERE r.kind = 'markdown' GROUP BY r.resource_id ORDER BY min(b.id)"
        )
    ]
    conn.close()
    assert notes == sorted(notes) and len(notes) > 15
    assert (tmp_path / "a" / "out" / "evidence.sqlite").read_bytes() == (
        tmp_path / "b" / "out" / "evidence.sqlite"
    ).read_bytes()
    assert not list((tmp_path / "a" / "out").glob(".evidence.sqlite.*.tmp"))


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failure_while_streaming_leaves_the_previous_index_and_no_working_copy(
    tmp_path, monkeypatch, failure
):
    root, out = copy_workspace(tmp_path / "ws"), tmp_path / "out"
    run_build(root, out)
    db = out / "evidence.sqlite"
    with sqlite3.connect(db) as conn:  # another schema: the next build rebuilds it from empty
        conn.execute("UPDATE build_meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()
    before = db.read_bytes()
    calls = []
    real = writer.insert_update

    def failing(conn, update, next_id):
        calls.append(update.row.path)
        if len(calls) == 3:  # while the notes are parsed
            raise failure
        return real(conn, update, next_id)

    monkeypatch.setattr(writer, "insert_update", failing)
    with pytest.raises(type(failure)):
        run_build(root, out)
    assert len(calls) == 3
    assert db.read_bytes() == before
    assert not list(out.glob(".evidence.sqlite.*.tmp"))
    monkeypatch.setattr(writer, "insert_update", real)
    report = run_build(root, out)  # and the next build completes
    assert report.redone["schema"]["from"] == "4" and report.status_counts["ok"] > 5
    assert not list(out.glob(".evidence.sqlite.*.tmp"))


def test_in_order_emits_the_contiguous_prefix_in_the_given_order():
    got: list[tuple[str, int]] = []
    in_order = InOrder(["a", "b", "c", "d"], lambda path, result: got.append((path, result)))
    for path, result in [("c", 3), ("b", 2), ("a", 1), ("d", 4)]:
        in_order(path, result)
        if path == "c":
            assert got == []  # held until a and b are in
    assert got == [("a", 1), ("b", 2), ("c", 3), ("d", 4)]
