"""Real server processes on loopback for tests and benchmarks: free ports, start, wait, stop."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, proc: subprocess.Popen | None = None, timeout: float = 30) -> None:
    """Poll `url` until the server answers; fail early if its process `proc` has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(url)


def start(cmd: list[str], url: str, cwd: Path | None = None) -> subprocess.Popen:
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
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


def start_serve(site_dir: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """A real `mnote-evidence serve SITE_DIR ARGS…` on a free port, up and answering; returns
    (process, base URL)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start(
        [sys.executable, "-m", "mnote_evidence", "serve", str(site_dir), "--port", str(port), *args],
        base + "/-/versions.json",
    )
    return proc, base


DATASETTE = shutil.which("datasette") or str(Path(sys.executable).with_name("datasette"))


def start_datasette(db: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """A real `datasette -i DB ARGS…` (our plugin found by its entry point) on a free port; returns
    (process, base URL)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    return start([DATASETTE, "-i", str(db), *args, "--port", str(port)], base + "/-/versions.json"), base
