"""A build killed with SIGKILL at any point leaves the previous evidence.sqlite complete.

Real processes, real kills: the first kills land while files are being parsed,
the last ones the moment the working copy of the database appears (i.e. while
the index is being written).
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

from mnote_evidence.build.pipeline import DB_NAME
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
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return (conn.execute("SELECT count(*) FROM evidence_resource").fetchone()[0],
                conn.execute("SELECT count(*) FROM evidence_block").fetchone()[0],
                conn.execute("SELECT group_concat(source_hash) FROM (SELECT source_hash FROM evidence_resource "
                             "ORDER BY 1)").fetchone()[0])
    finally:
        conn.close()


def _start(workspace: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mnote_evidence", "build", str(workspace), "--out", str(out),
                             "--jobs", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


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
    for rel in (workspace / "Projects/Evidence Kernel.ocr", workspace / ".mnote"):
        shutil.rmtree(rel)  # force real parsing work in the killed build
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
