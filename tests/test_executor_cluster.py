"""The parse stage on a real Dask cluster (`build --executor tcp://...`): the same sidecars, index rows
and site as a local build; workers that cannot see the workspace; a worker killed mid-task; an
unreachable scheduler."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from functools import cache
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from mnote_evidence.build.parse.ocr.settings import OcrSettings  # noqa: E402
from tests.conftest import REPO, SHARED_OCR, copy_workspace, run_build  # noqa: E402
from tests.test_parallel import _files, _rows, _sidecars  # noqa: E402

MANUALS = REPO / "tests" / "real_documents" / "manuals"
STAMP_COLUMNS = {"updated_at_ms", "source_mtime_ns", "source_size"}
SCAN = REPO / "tests" / "real_documents" / "scans" / "shared-mime-info-spec-p2.png"


@cache
def _scanned_pdf(pages: int) -> bytes:
    """An image-only PDF of the scanned page, `pages` times (made once: a save stamps its time)."""
    import pymupdf

    pdf = pymupdf.open()
    for _ in range(pages):
        page = pdf.new_page(width=612, height=792)
        page.insert_image(page.rect, filename=str(SCAN))
    return pdf.tobytes()


def _workspace(dest: Path, scanned_pages: int = 1, fixtures: bool = True) -> Path:
    """The sample workspace, a real manual, a scanned page as an image and as an image-only PDF."""
    root = copy_workspace(dest) if fixtures else dest
    docs = root / "Manuals"
    docs.mkdir(parents=True)
    shutil.copy2(MANUALS / "shared-mime-info-spec.pdf", docs / "shared-mime-info-spec.pdf")
    shutil.copy2(SCAN, docs / "scan.png")
    (docs / "scanned.pdf").write_bytes(_scanned_pdf(scanned_pages))
    (root / "Manuals.md").write_text(
        "# Manuals\n\n![[Manuals/shared-mime-info-spec.pdf]]\n![[Manuals/scan.png]]\n"
        "![[Manuals/scanned.pdf]]\n",
        "utf-8",
    )
    return root


def _ocr(base: Path) -> OcrSettings:
    return OcrSettings(cache_dir=str(base / "ocr-cache"))  # a build that runs its own OCR


def _same_outputs(a: Path, b: Path) -> None:
    """Every sidecar, site file and index row of the build under `a` and of the one under `b`."""
    fa, fb = _files(a / "out"), _files(b / "out")
    assert fa.keys() == fb.keys() and [k for k in fa if fa[k] != fb[k]] == []
    sa, sb = _sidecars(a / "ws"), _sidecars(b / "ws")
    assert sa.keys() == sb.keys() and [k for k in sa if sa[k] != sb[k]] == []
    assert any(k.endswith("scanned.pdf.ocr.md") for k in sa)
    ra, rb = _rows(a / "out"), _rows(b / "out")
    ra["evidence_resource"], rb["evidence_resource"] = _resources(a / "out"), _resources(b / "out")
    assert {t: len(r) for t, r in rb.items() if r != ra[t]} == {}


def _resources(out: Path) -> list[tuple]:
    """The resource rows without their (size, mtime) stamp: a stamp too recent to trust is not kept,
    which depends on when the file was copied, not on where it was parsed."""
    with sqlite3.connect(out / "evidence.sqlite") as conn:
        cur = conn.execute("SELECT * FROM evidence_resource")
        keep = [i for i, d in enumerate(cur.description) if d[0] not in STAMP_COLUMNS]
        return sorted(tuple(r[i] for i in keep) for r in cur)


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """A local build of the workspace (workspace under `base/ws`, output `base/out`) and its report."""
    base = tmp_path_factory.mktemp("local")
    root = _workspace(base / "ws")
    # the session's OCR cache: the cluster builds read it here and ship its entries to their workers
    report = run_build(root, base / "out", jobs=2, site=True, ocr=SHARED_OCR)
    assert {e["path"].split("/")[0] for e in report.errors} == {"Inbox"}  # the broken files only
    return base, report


def test_a_cluster_build_writes_what_a_local_build_writes(local, tmp_path):
    base, expected = local
    root = _workspace(tmp_path / "ws")
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        local_directory=tempfile.mkdtemp(prefix="mnote-workers-"),  # their cwd and temp are not ours
    ) as cluster:
        address = cluster.scheduler_address
        report = run_build(root, tmp_path / "out", site=True, ocr=SHARED_OCR, executor=address)
    assert report.errors == expected.errors and report.parsed == expected.parsed
    _same_outputs(base, tmp_path)


def _can_hide(path: Path) -> bool:
    """True where this process may start one with its own view of the file system (Linux, root)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "mount", "-t", "tmpfs", "none", str(path)],
        capture_output=True,
    )
    return probe.returncode == 0


def test_workers_that_cannot_see_the_workspace_build_the_same(local, tmp_path):
    """The worker runs in a mount namespace where the folder holding the workspace, its OCR cache and
    the output is an empty tmpfs: only the shipped bytes reach it."""
    if not _can_hide(tmp_path):
        pytest.skip("starting a worker with its own mount namespace needs unshare and root")
    base, expected = local
    root = _workspace(tmp_path / "ws")
    with distributed.LocalCluster(n_workers=0, dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        saw = Path(f"/dev/shm/mnote-worker-saw-{os.getpid()}")
        start = (
            f'mount -t tmpfs none "{tmp_path}" && ls -A "{tmp_path}" > {saw} && exec "{sys.executable}" '
            f"-m distributed.cli.dask_worker {address} --nthreads 1 --nworkers 1 --no-dashboard"
        )
        hidden = ["unshare", "--mount", "--propagation", "private", "sh", "-c", start]
        worker = subprocess.Popen(hidden, cwd="/")
        try:
            with distributed.Client(cluster) as client:
                client.wait_for_workers(1, timeout=60)
            report = run_build(root, tmp_path / "out", site=True, ocr=SHARED_OCR, executor=address)
        finally:
            worker.terminate()
            worker.wait(30)
    assert saw.read_text() == ""  # the worker's view of the build's folder: empty
    saw.unlink()
    assert report.errors == expected.errors
    _same_outputs(base, tmp_path)


def test_a_worker_killed_mid_task_is_retried_and_the_build_completes(tmp_path):
    """A scanned PDF keeps a worker busy (OCR of 3 pages, no cache); its process is killed while it
    parses: the scheduler hands the task to the other worker, the file is parsed once, and the OCR the
    worker ran is sealed into this machine's cache."""
    root = _workspace(tmp_path / "ws", scanned_pages=3, fixtures=False)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        import threading

        killed: list[int] = []
        pids = client.run(os.getpid)  # worker address -> its process

        def kill_the_busy_worker() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not killed:
                for address, keys in client.processing().items():
                    if any("run_shipment" in str(k) for k in keys):
                        time.sleep(1.0)  # well inside the OCR of the scanned pages
                        pid = pids[address]
                        os.kill(pid, 9)
                        killed.append(pid)
                        return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_the_busy_worker)
        killer.start()
        report = run_build(root, tmp_path / "out", ocr=_ocr(tmp_path), executor=cluster.scheduler_address)
        killer.join()
    assert killed and report.errors == [] and report.parsed == 4
    text = next(root.rglob("scanned.pdf.ocr.md")).read_text("utf-8")
    assert "shared" in text.lower()  # the scan's words, read by the worker's OCR
    assert len(list((tmp_path / "ocr-cache").rglob("*.json"))) == 4  # 3 pages and the image


def test_an_unreachable_scheduler_exits_2_saying_what_to_do(workspace, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free: nothing listens there
    result = subprocess.run(
        [sys.executable, "-m", "mnote_evidence", "build", str(workspace), "--out", str(tmp_path / "out"),
         "--executor", f"tcp://127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "MNOTE_CLUSTER_CONNECT_SECONDS": "2"},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"tcp://127.0.0.1:{port}" in result.stderr and "--executor local" in result.stderr
    assert not (tmp_path / "out" / "evidence.sqlite").exists()
