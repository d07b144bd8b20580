"""Writing the site's resource pages, in worker processes when there are many (SPEC §8, issue 17).

Rendering a page is CPU work (a note is parsed by markdown-it again for its HTML, templates
fill in); on a full build of 10,000 notes it is the largest stage. `write_pages` renders the
pages whose key changed: here, one by one, when there are few (or `jobs` is 1), else in a pool
of `jobs` workers (`build/workers.py`: they die with the build), each of which opens the index
read-only and builds its own `_Site` once, then renders `PAGE_BATCH` pages per task into temp files
(`fsutil.stage_bytes`) that this process puts in place within its own `durable_batch` (`fsutil.adopt`):
one sync per `fsutil.BATCH_FILES` pages whichever process wrote them, not one per task (a `syncfs`
flushes everything waiting on the file system, so syncing every 32 pages made a 10,000-page render
pay for the whole machine's writes hundreds of times). What crosses between processes per task is
the task's paths and, back, per page its problems and a temp file name: nothing grows with the site.

Invariants: the same pages, byte for byte, whichever way they are rendered (a worker's `_Site`
is built from the same index, root and options); problems (`sidecar_missing`, `note_changed`)
are reported in resource order either way; a resource without a page rule raises `UnknownKind`
either way; each page is written atomically and joins the caller's `durable_batch` either way, so
it is on disk before the state file records it (a kill can leave temp files, never a partial
page). A worker that crashes breaks only the pool: what it had not handed back is rendered here
instead (its temp files stay behind, as a kill's would).
"""

from __future__ import annotations

from concurrent.futures import BrokenExecutor, as_completed
from pathlib import Path
from typing import Any, Callable

from mnote_evidence.build.errors import UnknownKind
from mnote_evidence.build.fsutil import adopt, atomic_write_text, stage_bytes
from mnote_evidence.build.urls import page_path
from mnote_evidence.build.workers import worker_pool

PAGE_BATCH = 32  # pages per worker task
PAGES_FOR_POOL = 200  # fewer pages are rendered in this process: starting workers costs more

Problems = list[dict[str, str]]
# `_Site` is render/site.py's (which imports this module): typed `Any` here, its class passed in
_Site = Any
_worker_site: Any = None  # the worker's own site, built once by `_start`


def write_pages(site: _Site, paths: list[str], jobs: int, advance: Callable[[int], None]) -> None:
    """Render and write the pages of the resources at `paths`; problems go to `site.report`."""
    if jobs <= 1 or len(paths) < PAGES_FOR_POOL or len({page_path(p) for p in paths}) < len(paths):
        # (pages that collide are written in order, the last one winning, as reported)
        for path in paths:
            _write(site, path)
            advance(1)
        return
    problems: dict[str, Problems] = {}
    try:
        _in_pool(site, paths, jobs, problems, advance)
    except BrokenExecutor:  # a worker died (BrokenProcessPool): render what is missing here
        for path in paths:
            if path not in problems:
                known = len(site.report.problems)
                _write(site, path)
                problems[path] = site.report.problems[known:]
                del site.report.problems[known:]
                advance(1)
    for path in paths:  # in resource order, as if rendered here
        site.report.problems.extend(problems[path])


def _write(site: _Site, path: str) -> None:
    atomic_write_text(site.out / page_path(path), site.render_resource(site.by_path[path]))


def _in_pool(site: _Site, paths: list[str], jobs: int, problems: dict[str, Problems],
             advance: Callable[[int], None]) -> None:
    args = (type(site), str(site.root), str(site.out), str(site.db_path), site.options)
    batches = [paths[i:i + PAGE_BATCH] for i in range(0, len(paths), PAGE_BATCH)]
    with worker_pool(jobs, initializer=_start, initargs=args) as pool:
        futures = [pool.submit(_render_batch, batch) for batch in batches]
        for fut in as_completed(futures):
            done = fut.result()
            for path, outcome, written in done:
                if written is not None:  # (temp file, bytes): in place with this process's batch
                    adopt(Path(written[0]), site.out / page_path(path))
                if isinstance(outcome, tuple):  # (kind, page rule) of an UnknownKind
                    raise UnknownKind(path, *outcome)
                problems[path] = outcome
            advance(len(done))


def _start(site_class: type, root: str, out: str, db_path: str, options: Any) -> None:
    """Worker initializer: this worker's own view of the site (the index opened read-only)."""
    global _worker_site
    _worker_site = site_class(Path(root), Path(out), Path(db_path), options)


def _render_batch(paths: list[str]) -> list[tuple[str, Any, tuple[str, int] | None]]:
    """Worker task: render these pages into temp files; for each, its problems (or an UnknownKind's kind
    and rule) and its temp file with its size (None: the page on disk already has these bytes)."""
    site = _worker_site
    assert site is not None
    out: list[tuple[str, Any, tuple[str, int] | None]] = []
    for path in paths:
        known = len(site.report.problems)
        try:
            data = site.render_resource(site.by_path[path]).encode("utf-8")
        except UnknownKind as exc:  # its own arguments do not survive pickling: sent as data
            out.append((path, (exc.kind, exc.page), None))
            return out
        tmp = stage_bytes(site.out / page_path(path), data)
        out.append((path, site.report.problems[known:], None if tmp is None else (str(tmp), len(data))))
    return out
