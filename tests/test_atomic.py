"""A build killed with SIGKILL at any point leaves the previous evidence.sqlite complete.

Real processes, real kills: the first kills land while files are being parsed,
the last ones the moment the working copy of the database appears (i.e. while
the index is being written). An incremental build writes the index in place inside
one rollback-journal transaction (build/index/writer.py): those kills land once its
`-journal` exists, at several delays, so some fall mid-transaction and some during
the commit. A kill there leaves a hot journal: a plain `mode=ro` reader then fails
(SQLITE_READONLY_ROLLBACK), our readers roll it back (build/core/sqlite_ro.py) and read
the previous index, and the handlers answer from it (or a 503 where they may not
roll back), never a 500.
"""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnote_evidence.build.core.sqlite_ro import SQLITE_READONLY_ROLLBACK, connect_ro
from mnote_evidence.build.pipeline import DB_NAME
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.evidence import search
from tests.conftest import SPEC_PDF, run_build

COPIES = 40


def _grow(workspace: Path, generation: int) -> None:
    """Many distinct PDFs, so a build takes long enough to be killed mid-way."""
    spec = (workspace / SPEC_PDF).read_bytes()
    folder = workspace / "Bulk"
    folder.mkdir(exist_ok=True)
    for i in range(COPIES):
        # appended bytes after %%EOF change the hash, not the content
        (folder / f"copy-{i:02d}.pdf").write_bytes(spec + f"\n% gen {generation} copy {i}\n".encode())


def _content(db: Path) -> tuple[int, int, str]:
    conn = connect_ro(db)  # rolls back a killed in-place build's hot journal first
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return (
            conn.execute("SELECT count(*) FROM evidence_resource").fetchone()[0],
            conn.execute("SELECT count(*) FROM evidence_block").fetchone()[0],
            conn.execute(
                "SELECT group_concat(source_hash) FROM (SELECT source_hash FROM evidence_resource ORDER BY 1)"
            ).fetchone()[0],
        )
    finally:
        conn.close()


def _start(workspace: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mnote_evidence", "build", str(workspace), "--out", str(out), "--jobs", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_for_working_copy(out: Path, proc: subprocess.Popen, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if any(out.glob(f".{DB_NAME}.*.tmp")):
            return True
        time.sleep(0.002)
    return False


@pytest.mark.parametrize("kill_at", ["0.3s", "0.8s", "1.5s", "index-write", "index-write+20ms"])
def test_sigkill_leaves_previous_database_intact(workspace, tmp_path, kill_at):
    out = tmp_path / "out"
    _grow(workspace, 1)
    run_build(workspace, out)
    before = _content(out / DB_NAME)
    # this test covers the copy-and-rename write, which rebuilds an index of another schema version
    # (an incremental build writes in place: test_sigkill_inside_the_in_place_write_... below)
    with sqlite3.connect(out / DB_NAME) as conn:
        conn.execute("UPDATE build_meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()
    shutil.rmtree(workspace / ".mnote")  # the sidecars: force real parsing work in the killed build
    _grow(workspace, 2)
    proc = _start(workspace, out)
    if kill_at.startswith("index-write"):
        assert _wait_for_working_copy(out, proc), "build never reached the index write"
        if kill_at.endswith("20ms"):
            time.sleep(0.02)
    else:
        time.sleep(float(kill_at[:-1]))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    after = _content(out / DB_NAME)
    # The next build cleans up and completes.
    report = run_build(workspace, out)
    assert report.status_counts["ok"] > COPIES
    assert not list(out.glob(f".{DB_NAME}.*.tmp"))
    complete_new = _content(out / DB_NAME)
    assert complete_new != before
    # Never a partial state: the old database, or (if the build won the race) the complete new one.
    assert after in (before, complete_new)
    if kill_at.startswith("index-write"):
        assert proc.returncode == -signal.SIGKILL and after == before


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists():
            return True
        time.sleep(0.001)
    return False


def _search_status(db: Path) -> tuple[int, dict]:
    return call(lambda r: search(r, Context(EvidenceDB(db))), {"query": "evidence", "topK": 3})


def _wait_for_commit(db: Path, proc: subprocess.Popen, timeout: float = 120) -> bool:
    """True once the database file itself is being written while the journal exists (the commit)."""
    journal, mtime = Path(f"{db}-journal"), db.stat().st_mtime_ns
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and db.stat().st_mtime_ns != mtime:
            return True
        time.sleep(0.0002)
    return False


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.03, 0.08, 0.2, "commit"])
def test_sigkill_inside_the_in_place_write_leaves_the_previous_index(workspace, tmp_path, delay):
    out = tmp_path / "out"
    _grow(workspace, 1)
    run_build(workspace, out)
    before = _content(out / DB_NAME)
    inode = (out / DB_NAME).stat().st_ino
    _grow(workspace, 2)  # 40 changed PDFs: an incremental build, written in place in one transaction
    proc = _start(workspace, out)
    journal = out / f"{DB_NAME}-journal"
    if delay == "commit":
        committing = _wait_for_commit(out / DB_NAME, proc)
        assert committing or proc.returncode == 0, "the build neither committed nor finished"
    else:
        assert _wait_for(journal, proc), "the build never began writing the index in place"
        time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (out / DB_NAME).stat().st_ino == inode  # written in place, not renamed
    hot = False
    if journal.exists():  # killed inside the transaction: a plain read-only reader reads the old file
        plain = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True)  # untouched, or cannot read past
        try:  # a hot journal (pages of the commit were written)
            assert plain.execute("SELECT count(*) FROM evidence_resource").fetchone()[0] == before[0]
        except sqlite3.OperationalError as err:
            assert err.sqlite_errorcode == SQLITE_READONLY_ROLLBACK
            hot = True
        finally:
            plain.close()
    status, body = _search_status(out / DB_NAME)  # the handlers roll it back and answer
    assert status == 200 and body["results"], body
    after = _content(out / DB_NAME)
    report = run_build(workspace, out)
    assert not journal.exists()  # a journal that was not hot (nothing written yet) goes with the next commit
    assert report.status_counts["ok"] > COPIES
    complete_new = _content(out / DB_NAME)
    assert complete_new != before
    assert after in (before, complete_new)  # never a partial state
    if hot:
        assert after == before  # rolled back


def test_a_reader_that_may_not_roll_back_a_hot_journal_answers_503(workspace, tmp_path):
    """A killed writer's journal, and a reader with no right to undo it (an immutable deployment copy
    is read-only): the handler says the index is unavailable, not a 500."""
    out = tmp_path / "out"
    run_build(workspace, out)
    db = out / DB_NAME
    script = (
        "import os, sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "conn.execute('PRAGMA cache_size=1')\n"  # pages reach the file mid-transaction
        "conn.execute('BEGIN IMMEDIATE')\n"
        "conn.execute('DELETE FROM evidence_block_row')\n"  # schema 5: evidence_block is a view over it
        "conn.execute(\"INSERT INTO evidence_fts (evidence_fts) VALUES ('delete-all')\")\n"
        "os.kill(os.getpid(), 9)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db)], check=False)
    assert (out / f"{DB_NAME}-journal").exists()
    ro = sqlite3.connect(f"file:{db}?mode=ro", uri=True)

    def handler(_request):
        return {"blocks": ro.execute("SELECT count(*) FROM evidence_block").fetchone()[0]}

    try:
        status, body = call(handler, {})
    finally:
        ro.close()
    assert status == 503 and body["error"]["code"] == "index_unavailable", body
    assert "Traceback" not in str(body) and str(out) not in str(body)
    # our own readers roll it back: every block is there again
    conn = connect_ro(db)
    try:
        assert conn.execute("SELECT count(*) FROM evidence_block").fetchone()[0] > 0
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
