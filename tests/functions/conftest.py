"""A fixture build with one deleted (stale) file, and real server processes on free ports."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import copy_workspace, run_build

STALE_PDF = "Unfiled/orphan-report.pdf"


@pytest.fixture(scope="session")
def stale_site(tmp_path_factory):
    """(workspace, out): fixtures built with the site, then orphan-report.pdf deleted and rebuilt (stale)."""
    base = tmp_path_factory.mktemp("query")
    root = copy_workspace(base / "ws")
    out = base / "out"
    run_build(root, out, site=True)
    (root / STALE_PDF).unlink()
    run_build(root, out, site=True)
    return root, out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(url)


def start(cmd: list[str], url: str, cwd: Path | None = None) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    wait_until_up(url, proc)
    return proc


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


@pytest.fixture(scope="session")
def datasette_server(stale_site):
    """A real `datasette` process (plugin found by entry point) on the stale-site database."""
    _, out = stale_site
    port = free_port()
    datasette = shutil.which("datasette") or str(Path(sys.executable).with_name("datasette"))
    proc = start([datasette, "-i", str(out / "evidence.sqlite"), "--port", str(port)],
                 f"http://127.0.0.1:{port}/-/versions.json")
    yield f"http://127.0.0.1:{port}"
    stop(proc)
