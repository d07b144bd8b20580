"""Writing the site's resource pages, in worker processes when there are many (SPEC §8).

`write_pages` renders the pages whose key changed as the caller finds them: here when there are few
(or `jobs` is 1), else in a pool of `jobs` workers (`parse/workers.py`: they die with the build)
started by the first `PAGES_FOR_POOL`. Each worker builds its own `_Site` from the index once and
renders `PAGE_BATCH` pages per task into temp files (`fsutil.stage_bytes`) that this process puts in
place within its own `durable_batch` (`fsutil.adopt`). A page with no key to compare is keyed where it
is rendered (`_Site.render_keyed`).
Invariants: the same pages, byte for byte, problems in resource order and `UnknownKind` either way;
each page is atomic and on disk before the state file records it. A crashed worker breaks only the
pool: what was not handed back is rendered here, and its temp files are removed.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator
from concurrent.futures import BrokenExecutor, Future, as_completed
from itertools import chain, islice
from pathlib import Path
from typing import Any

from mnote_evidence.build.core.errors import UnknownKind
from mnote_evidence.build.core.fsutil import adopt, temp_glob
from mnote_evidence.build.parse.workers import worker_pool
from mnote_evidence.build.render import site_files

PAGE_BATCH = 32
PAGES_FOR_POOL = 200  # fewer pages are rendered in this process: starting workers costs more

Problems = list[dict[str, str]]
# `_Site` is render/site.py's (which imports this module): typed `Any` here, its class passed in
_Site = Any
_worker_site: Any = None
_worker_salt: list[Any] | None = None


def write_pages(
    site: _Site,
    paths: Iterable[str],
    jobs: int,
    advance: Callable[[int], None],
    distinct: bool = True,
    salt: list[Any] | None = None,
    unkeyed: Container[str] = (),
) -> dict[str, str]:
    """Render and write the pages of the resources at `paths` (drawn as they come: the pool starts
    on the first `PAGES_FOR_POOL` while the caller finds the rest); problems go to `site.report`.
    `distinct`: no two of them can share a page (else they are written in order, the last one winning,
    as reported). With `salt`, the pages in `unkeyed` (the caller looks, as it draws each path) are keyed
    where they are rendered (`_Site.render_keyed`), here or in a worker. Returns those keys."""
    paths = iter(paths)
    keys: dict[str, str] = {}
    head = [] if jobs <= 1 or not distinct else list(islice(paths, PAGES_FOR_POOL))
    if jobs <= 1 or not distinct or len(head) < PAGES_FOR_POOL:
        for path in chain(head, paths):
            _write(site, path, salt if path in unkeyed else None, keys)
            advance(1)
        return keys
    order: list[str] = []
    problems: dict[str, Problems] = {}
    try:
        _in_pool(site, chain(head, paths), order, jobs, problems, advance, salt, keys, unkeyed)
    except BrokenExecutor:  # a worker died (BrokenProcessPool): render what is missing here
        order.extend(paths)
        for path in order:
            if path not in problems:
                known = len(site.report.problems)
                _drop_temps(site.out, site.page_of(path))  # written by a worker whose answer was lost
                _write(site, path, salt if path in unkeyed else None, keys)
                problems[path] = site.report.problems[known:]
                del site.report.problems[known:]
                advance(1)
    for path in order:
        site.report.problems.extend(problems[path])
    return keys


def _drop_temps(out: Path, page: str) -> None:
    if site_files.is_real_folder(out, page.rpartition("/")[0]):
        for tmp in (out / page).parent.glob(temp_glob(out / page)):
            tmp.unlink(missing_ok=True)


def _page(site: _Site, path: str, salt: list[Any] | None) -> tuple[str, str | None]:
    """The page of the resource at `path`, and its key when `salt` is given (`_Site.render_keyed`)."""
    res = site.by_path[path]
    return (site.render_resource(res), None) if salt is None else site.render_keyed(res, salt)


def _write(site: _Site, path: str, salt: list[Any] | None, keys: dict[str, str]) -> None:
    html, key = _page(site, path, salt)
    if key is not None:
        keys[path] = key
    try:
        site_files.write_text(site.out, site.page_of(path), html)
    except OSError as exc:
        _not_written(site, path, exc)


def _not_written(site: _Site, path: str, exc: OSError) -> None:
    """Record a page that what stands in its way kept from being written (`site_files.not_written`)."""
    problem = site_files.not_written(site.out, path, site.page_of(path), exc)
    if problem is None:
        raise exc
    site.report.problems.append(problem)


def _in_pool(
    site: _Site,
    paths: Iterator[str],
    order: list[str],
    jobs: int,
    problems: dict[str, Problems],
    advance: Callable[[int], None],
    salt: list[Any] | None,
    keys: dict[str, str],
    unkeyed: Container[str],
) -> None:
    """Render `paths` in `PAGE_BATCH` tasks; a worker keys the pages of `unkeyed` (the caller keyed the
    others before it drew them: not keyed twice)."""
    args = (type(site), str(site.root), str(site.out), str(site.db_path), site.options, salt)

    def task(batch: list[str]) -> Future:
        return pool.submit(_render_batch, batch, [p for p in batch if p in unkeyed])

    with worker_pool(jobs, initializer=_start, initargs=args) as pool:
        futures: set[Future] = set()
        batch: list[str] = []
        for path in paths:
            order.append(path)
            batch.append(path)
            if len(batch) == PAGE_BATCH:
                futures.add(task(batch))
                batch = []
                for fut in [f for f in futures if f.done()]:
                    futures.discard(fut)
                    _done(site, fut.result(), problems, advance, keys)
        if batch:
            futures.add(task(batch))
        for fut in as_completed(futures):
            _done(site, fut.result(), problems, advance, keys)


def _done(
    site: _Site,
    done: list[tuple[str, Any, tuple[str, int] | None, str | None]],
    problems: dict[str, Problems],
    advance: Callable[[int], None],
    keys: dict[str, str],
) -> None:
    """A task's pages: each temp file in place with this process's batch, its problems and key kept
    (the key in `keys`)."""
    for path, outcome, written, key in done:
        if key is not None:
            keys[path] = key
        if written is not None:
            adopt(Path(written[0]), site.out / site.page_of(path))
        if isinstance(outcome, tuple):
            raise UnknownKind(path, *outcome)
        problems[path] = outcome
    advance(len(done))


def _start(
    site_class: type, root: str, out: str, db_path: str, options: Any, salt: list[Any] | None = None
) -> None:
    """Worker initializer: this worker's own view of the site (the index opened read-only); `salt`: key
    each page it renders with it (`_Site.render_keyed`)."""
    global _worker_site, _worker_salt
    _worker_site = site_class(Path(root), Path(out), Path(db_path), options)
    _worker_salt = salt


def _render_batch(
    paths: list[str], to_key: Container[str] = ()
) -> list[tuple[str, Any, tuple[str, int] | None, str | None]]:
    """Worker task: render these pages into temp files; for each, its problems (or an UnknownKind's kind
    and rule), its temp file with its size (None: the page on disk already has these bytes) and its
    key (None: not in `to_key`, or the worker keys nothing)."""
    site = _worker_site
    assert site is not None
    out: list[tuple[str, Any, tuple[str, int] | None, str | None]] = []
    for path in paths:
        known = len(site.report.problems)
        try:
            html, key = _page(site, path, _worker_salt if path in to_key else None)
        except UnknownKind as exc:  # its own arguments do not survive pickling: sent as data
            out.append((path, (exc.kind, exc.page), None, None))
            return out
        data = html.encode("utf-8")
        try:
            tmp = site_files.stage(site.out, site.page_of(path), data)
        except OSError as exc:
            _not_written(site, path, exc)
            tmp = None
        out.append((path, site.report.problems[known:], None if tmp is None else (str(tmp), len(data)), key))
    return out
