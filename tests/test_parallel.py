"""Parallelism that pays: notes parsed in the pool, pages rendered in the pool,
link labels stored at index time, file writes synced per batch.

Real builds of the sample workspace with real worker processes; the pool thresholds are lowered
so a small workspace goes through the pool, and the output is compared byte for byte with a
build that does everything in one process.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import pytest

from mnote_evidence.build import pipeline
from mnote_evidence.build.core import fsutil, text
from mnote_evidence.build.index.schema import FTS_TOKENIZE
from mnote_evidence.build.parse import run as parse
from mnote_evidence.build.render import page_pool
from mnote_evidence.build.render.site import STATE_FILE, RenderOptions, render_site
from tests.conftest import SHARED_OCR, copy_workspace, run_build

SKIP = {"evidence.sqlite", STATE_FILE}
STAMP = re.compile(rb"last change \d{4}-\d\d-\d\d \d\d:\d\d UTC")


def _files(out: Path) -> dict[str, bytes]:
    """The site's files; the front page's "last change" minute (the build's clock) left out."""
    return {
        p.relative_to(out).as_posix(): STAMP.sub(b"", p.read_bytes())
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name not in SKIP and not p.name.endswith(".lock")
    }


def _sidecars(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.name.endswith((".source-map.json", ".parse.md", ".ocr.md"))
    }


def _rows(out: Path) -> dict[str, list[tuple]]:
    """The index's rows (the build's timestamps left out), and what its FTS index holds: every indexed
    token with its block and position (fts5vocab), i.e. the segmented values the workers computed."""
    conn = sqlite3.connect(out / "evidence.sqlite")
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, evidence_fts, instance)")
        stamps = {"updated_at_ms", "source_mtime_ns"}
        tables = [
            "evidence_resource",
            "evidence_block_row",
            "evidence_section",
            "evidence_edge_row",
            "evidence_link",
            "temp.vocab",
        ]
        rows = {}
        for table in tables:
            cur = conn.execute(f"SELECT * FROM {table}")
            keep = [i for i, d in enumerate(cur.description) if d[0] not in stamps]
            rows[table] = sorted(tuple(r[i] for i in keep) for r in cur)
        return rows
    finally:
        conn.close()


def test_pool_build_writes_the_same_site_and_sidecars_as_one_process(tmp_path, monkeypatch):
    serial_ws, pool_ws = copy_workspace(tmp_path / "a" / "ws"), copy_workspace(tmp_path / "b" / "ws")
    serial = run_build(serial_ws, tmp_path / "a" / "out", jobs=1, site=True, ocr=SHARED_OCR)
    monkeypatch.setattr(pipeline, "NOTES_FOR_POOL", 1)
    monkeypatch.setattr(page_pool, "PAGES_FOR_POOL", 1)
    monkeypatch.setattr(page_pool, "PAGE_BATCH", 3)  # several tasks per worker
    monkeypatch.setattr(pipeline, "NOTE_BATCH", 2)
    pooled = run_build(pool_ws, tmp_path / "b" / "out", jobs=2, site=True, ocr=SHARED_OCR)
    assert pooled.site.pages_written == serial.site.pages_written > 10
    assert pooled.parsed == serial.parsed and pooled.errors == serial.errors
    assert pooled.site.problems == serial.site.problems
    a, b = _files(tmp_path / "a" / "out"), _files(tmp_path / "b" / "out")
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    assert _sidecars(serial_ws) == _sidecars(pool_ws)
    assert any(k.endswith(".parse.md") for k in _sidecars(pool_ws))  # attachments' text too
    serial_rows, pooled_rows = _rows(tmp_path / "a" / "out"), _rows(tmp_path / "b" / "out")
    assert len(pooled_rows["temp.vocab"]) > 1000 and len(pooled_rows["evidence_block_row"]) > 100
    assert {t: r for t, r in pooled_rows.items() if r != serial_rows[t]} == {}
    assert pooled_rows["temp.vocab"] == _segmented_here(tmp_path / "b" / "out")
    assert not [p for p in (tmp_path / "b").rglob("*.tmp")]  # every batch committed


def _segmented_here(out: Path) -> list[tuple]:
    """The FTS index of the blocks' text segmented in this process (`text.segment_for_index`)."""
    conn = sqlite3.connect(out / "evidence.sqlite")
    try:
        blocks = conn.execute("SELECT id, text FROM evidence_block_row").fetchall()
    finally:
        conn.close()
    mem = sqlite3.connect(":memory:")
    mem.execute(f"CREATE VIRTUAL TABLE f USING fts5(text, block_id UNINDEXED, tokenize = '{FTS_TOKENIZE}')")
    mem.executemany(
        "INSERT INTO f (rowid, text) VALUES (?, ?)", [(i, text.segment_for_index(t)) for i, t in blocks]
    )
    mem.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, f, instance)")
    return sorted(mem.execute("SELECT * FROM temp.vocab"))


def test_batches_cut_by_count_and_bytes():
    class F:
        def __init__(self, size):
            self.size = size

    files = [F(10), F(10), F(10), F(900), F(10)]
    assert [len(b) for b in parse.batches(files, 2, max_bytes=500)] == [2, 1, 1, 1]
    assert [len(b) for b in parse.batches(files, 32, max_bytes=500)] == [3, 1, 1]
    assert [len(b) for b in parse.batches(files, 32, max_bytes=1000)] == [5]
    assert parse.batches([], 4) == []


def test_link_labels_are_stored_and_backlinks_need_no_note_source(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    out = tmp_path / "out"
    run_build(root, out, site=True)
    conn = sqlite3.connect(out / "evidence.sqlite")
    labels = dict(
        conn.execute("SELECT target, label FROM evidence_link WHERE kind = 'wikilink' AND label IS NOT NULL")
    )
    conn.close()
    assert labels and all(isinstance(v, str) for v in labels.values())
    page = (out / "Projects/Evidence Kernel.html").read_text("utf-8")
    marks = page.count("<mark>")
    assert marks > 0
    # the linking notes are gone from disk: the panel still marks the links (labels come from the index)
    for note in root.rglob("*.md"):
        if note.name != "Evidence Kernel.md":
            note.write_text("changed since the build\n", "utf-8")
    (out / STATE_FILE).unlink()
    (out / "Projects/Evidence Kernel.html").unlink()
    render_site(root, out, out / "evidence.sqlite", RenderOptions())
    assert (out / "Projects/Evidence Kernel.html").read_text("utf-8").count("<mark>") == marks


def test_a_batch_renames_only_after_its_commit(tmp_path):
    old = tmp_path / "old.txt"
    old.write_text("old")
    with fsutil.durable_batch():
        assert fsutil.atomic_write_text(old, "new")
        assert fsutil.atomic_write_text(tmp_path / "d" / "fresh.txt", "fresh")
        assert old.read_text() == "old" and not (tmp_path / "d" / "fresh.txt").exists()  # not yet in place
        assert len(list(tmp_path.rglob(".*.tmp"))) == 2
        with fsutil.durable_batch():  # joins the outer batch
            fsutil.atomic_write_text(tmp_path / "inner.txt", "inner")
        assert not (tmp_path / "inner.txt").exists()
        assert not fsutil.atomic_write_text(tmp_path / "inner.txt", "inner")  # same bytes: nothing to do
        assert (tmp_path / "inner.txt").exists()  # (a file written again: the batch went in first)
        assert fsutil.atomic_write_text(old, "newer")
    assert old.read_text() == "newer" and (tmp_path / "d" / "fresh.txt").read_text() == "fresh"
    assert (tmp_path / "inner.txt").read_text() == "inner"
    assert not list(tmp_path.rglob(".*.tmp"))
    assert os.stat(tmp_path / "inner.txt").st_mode & 0o777 == 0o666 & ~fsutil.current_umask()


def test_an_error_in_a_batch_still_commits_what_was_written_whole(tmp_path):
    with pytest.raises(RuntimeError), fsutil.durable_batch():
        fsutil.atomic_write_text(tmp_path / "a.txt", "a")
        raise RuntimeError("boom")
    assert (tmp_path / "a.txt").read_text() == "a" and not list(tmp_path.rglob(".*.tmp"))


def test_a_batch_commits_when_full(tmp_path, monkeypatch):
    monkeypatch.setattr(fsutil, "BATCH_FILES", 3)
    with fsutil.durable_batch():
        for i in range(4):
            fsutil.atomic_write_text(tmp_path / f"{i}.txt", str(i))
        assert [(tmp_path / f"{i}.txt").exists() for i in range(4)] == [True, True, True, False]
    assert (tmp_path / "3.txt").read_text() == "3"


def test_the_state_is_written_after_the_pages_are_committed(tmp_path, monkeypatch):
    from mnote_evidence.build.render import state as site_state

    root = copy_workspace(tmp_path / "ws")
    out = tmp_path / "out"
    run_build(root, out)
    order: list[str] = []
    commit, save = fsutil._Batch.commit, site_state.save

    def spy_commit(self):
        order.extend(p.name for _, p in self.moves)
        commit(self)

    def spy_save(*args):
        order.append(STATE_FILE)
        save(*args)

    monkeypatch.setattr(fsutil._Batch, "commit", spy_commit)
    monkeypatch.setattr(site_state, "save", spy_save)
    render_site(root, out, out / "evidence.sqlite", RenderOptions())
    assert STATE_FILE in order and "index.html" in order
    assert order.index(STATE_FILE) > max(i for i, name in enumerate(order) if name.endswith(".html"))


def test_default_jobs_are_the_usable_cpus(monkeypatch):
    from mnote_evidence.build.core import defaults

    monkeypatch.setattr(defaults.os, "sched_getaffinity", lambda pid: {0, 3}, raising=False)
    assert defaults.usable_cpus() == 2
    monkeypatch.setattr(defaults.os, "sched_getaffinity", lambda pid: set(), raising=False)
    assert defaults.usable_cpus() == 1
    assert 1 <= defaults.DEFAULT_JOBS <= (os.cpu_count() or 1)


_STAGE_UNDER_A_FULL_DISK = """
import multiprocessing.forkserver, resource, signal, sys
from pathlib import Path
from mnote_evidence.build.core import fsutil
from mnote_evidence.build.parse import executors as parse
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.prepare import Prepare, adopt_prepared
from mnote_evidence.build.workspace.scan import scan

root, jobs = Path(sys.argv[1]), int(sys.argv[2])
files = [f for f in scan(root) if f.path.endswith(".md")]
prepare = Prepare(str(root), "beside", {f.path: f.path for f in files})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (16, resource.RLIM_INFINITY))
if jobs > 1:  # only the workers (forked from the fork server) write under the limit
    multiprocessing.forkserver.ensure_running()
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
try:
    with fsutil.durable_batch():
        parse.parse_all(files, root, jobs, OcrSettings(), lambda n: None, batch=1, min_pool=1,
                        on_result=lambda _path, result: adopt_prepared(result), prepare=prepare)
except OSError as exc:
    print("raised", fsutil.storage_error_message(exc) is not None)
"""


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_sidecar_that_cannot_be_staged_fails_the_build_where_it_arrives(tmp_path, jobs):
    """A storage error while a worker stages sidecars (here: a file size limit of 16 bytes, as on a
    full disk, in a process of its own or only in its workers) is raised in the build process, not
    swallowed as a crashed worker or a parse error; nothing half-staged is left behind."""
    import subprocess
    import sys

    for i in range(3):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\nSome text {i}.\n", "utf-8")
    result = subprocess.run(
        [sys.executable, "-c", _STAGE_UNDER_A_FULL_DISK, str(tmp_path), str(jobs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.split() == ["raised", "True"], result.stderr
    assert not [p for p in tmp_path.rglob("*.tmp")]
