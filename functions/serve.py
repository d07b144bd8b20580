"""`mnote-evidence serve`: Datasette + our plugin + the static site, one URL.

With `--watch WORKSPACE` a watcher thread polls the workspace (stat only, every
0.3 s), waits until changes settle (debounce), and runs an incremental build in
a child process. The build renames a complete new `evidence.sqlite` into place;
the plugin notices the new file on the next request. Searches never fail and
never see a half-written database, and the server is never restarted.
Polling needs no extra dependency and works on every filesystem (network
mounts and containers included), at the cost of ~1 ms per 1,000 files a tick.
An index of another schema or segmentation version is reported at start (the
query endpoints answer 503 until it is rebuilt); with `--watch` it is rebuilt
at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from mnote_evidence.build.scan import skip_dir
from mnote_evidence.functions.db import EvidenceDB
from mnote_evidence.functions.errors import IndexIncompatible

POLL_SECONDS = 0.3
SETTLE_SECONDS = 0.3


def snapshot(root: Path, exclude: Path | None = None) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file the build would look at."""
    out = {}
    excluded = exclude.resolve() if exclude else None
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not skip_dir(d) and (here / d).resolve() != excluded]
        for name in filenames:
            if name.startswith("."):
                continue
            try:
                st = os.stat(here / name)
            except OSError:
                continue
            out[os.path.join(dirpath, name)] = (st.st_size, st.st_mtime_ns)
    return out


class Watcher(threading.Thread):
    """Rebuild `out` from `workspace` whenever files change (debounced)."""

    def __init__(self, workspace: Path, out: Path, jobs: int, log: Callable[[str], None] = print,
                 rebuild_first: bool = False):
        super().__init__(name="mnote-evidence-watch", daemon=True)
        self.workspace, self.out, self.jobs, self.log = workspace.resolve(), out.resolve(), jobs, log
        self.rebuild_first = rebuild_first  # the index is of another version: rebuild before any change
        self.stop = threading.Event()
        self.builds = 0

    def run(self) -> None:
        last = snapshot(self.workspace, self.out)
        if self.rebuild_first:
            self._build(time.monotonic())
        while not self.stop.wait(POLL_SECONDS):
            current = snapshot(self.workspace, self.out)
            if current == last:
                continue
            detected = time.monotonic()
            while not self.stop.wait(SETTLE_SECONDS):  # wait for the editor to finish saving
                settled = snapshot(self.workspace, self.out)
                if settled == current:
                    break
                current = settled
            self._build(detected)
            last = current

    def _build(self, detected: float) -> None:
        cmd = [sys.executable, "-m", "mnote_evidence", "build", str(self.workspace), "--out", str(self.out),
               "--jobs", str(self.jobs), "--json"]  # LIGHTRAG_URL / MINERU_* pass through the environment
        result = subprocess.run(cmd, capture_output=True, text=True)
        self.builds += 1
        if result.returncode != 0:
            self.log(f"rebuild failed (exit {result.returncode}); still serving the previous index\n"
                     f"{result.stderr.strip()[-2000:]}")
            return
        report = json.loads(result.stdout)
        site = report.get("site") or {}
        self.log(f"rebuilt in {report['seconds']:.2f}s ({report['parsed']} parsed, "
                 f"{site.get('pages_written', 0)} pages), done {time.monotonic() - detected:.2f}s "
                 "after the change was seen")


def _index_problem(db: Path) -> str | None:
    """What the query endpoints will answer instead of results (None: the index is readable)."""
    try:
        EvidenceDB(db).connect().close()
    except IndexIncompatible as exc:
        return exc.message
    return None


def serve(site_dir: Path, host: str, port: int, watch: Path | None, jobs: int, lightrag_url: str | None = None,
          lightrag_timeout: float = 30.0) -> None:
    import uvicorn
    from datasette.app import Datasette

    db = site_dir / "evidence.sqlite"
    problem = _index_problem(db)
    if problem:  # still serve: the site and the SQL work; the query endpoints answer 503 with this
        print(f"warning: {problem}", flush=True)
    ds = Datasette(
        immutables=[str(db)],
        settings={"suggest_facets": False, "facet_time_limit_ms": 50},
        metadata={"plugins": {"mnote-evidence": {"site_dir": str(site_dir.resolve()), "lightrag_url": lightrag_url,
                                                 "lightrag_timeout": lightrag_timeout}}},
    )
    url = f"http://{host}:{port}"
    print(f"Evidence site:  {url}/site/index.html\nData (SQL):     {url}/evidence\n"
          f"Search API:     {url}/-/evidence/search?query=...", flush=True)
    watcher = None
    if watch is not None:
        watcher = Watcher(watch, site_dir, jobs, log=lambda m: print(m, flush=True), rebuild_first=bool(problem))
        watcher.start()
        print(f"Watching {watch} for changes", flush=True)
    try:
        uvicorn.run(ds.app(), host=host, port=port, log_level="warning")
    finally:
        if watcher:
            watcher.stop.set()
