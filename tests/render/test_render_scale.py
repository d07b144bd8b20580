"""The site's render grows linearly with the workspace (docs/performance.md).

Counted, not timed: two synthetic workspaces alike note for note (each note: a tag, headings, two
wikilinks; so each page has the same backlinks and tags on average) of 24 and 192 notes are built and
rendered for real, and what one page costs must not grow with the number of notes:
- Python function calls and SQL statements of a render, per page (a front-page tree, a query or a
  navigation list per page over the whole site would make them grow with N);
- bytes of HTML per resource page (a whole-site tree on every page would be O(N) per page: O(N^2) output);
- what crosses to and from a page worker per page (`render/page_pool.py`);
- syncs: pages rendered in the pool are synced with the build's own batch (one per `fsutil.BATCH_FILES`
  files), not once per task in each worker: a `syncfs` flushes the whole file system's pending writes.
"""

from __future__ import annotations

import cProfile
import pickle
import pstats
import random
import sqlite3
from pathlib import Path

from mnote_evidence.build.core import fsutil
from mnote_evidence.build.core.urls import page_path
from mnote_evidence.build.markdown import syntax as markdown_syntax
from mnote_evidence.build.render import data, page_pool
from mnote_evidence.build.render.site import RenderOptions, _Site, render_site
from tests.conftest import run_build

SMALL, LARGE = 24, 192


def _workspace(root: Path, n: int) -> Path:
    rnd = random.Random(7)
    for i in range(n):
        links = " ".join(f"See [[note-{rnd.randrange(n):04d}]]." for _ in range(2))
        text = (
            f"---\ntags: [t{i % 6}]\n---\n# Note {i}\n\n"
            f"First paragraph of note {i} with #topic{i % 4}. {links}\n\n"
            f"## Details\n\nSecond paragraph, plain words about item {i}.\n\n- a list item\n- another one\n"
        )
        path = root / f"f{i // 10:03d}" / f"note-{i:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return root


def _built(tmp_path: Path, n: int) -> tuple[Path, Path]:
    root, out = _workspace(tmp_path / f"ws{n}", n), tmp_path / f"out{n}"
    run_build(root, out, site=False)
    return root, out


def _counted_render(root: Path, out: Path, site_dir: Path, monkeypatch) -> tuple[int, int]:
    """(Python function calls, SQL statements) of a full render, in this process."""
    statements = [0]
    connect = data.connect_ro

    def counting(path):
        conn = connect(path)
        conn.set_trace_callback(lambda sql: statements.__setitem__(0, statements[0] + 1))
        return conn

    monkeypatch.setattr(data, "connect_ro", counting)
    monkeypatch.setattr(
        markdown_syntax, "_kept", {}
    )  # the build's parses (kept for a few notes): every size parses
    profile = cProfile.Profile()
    profile.enable()
    report = render_site(root, site_dir, out / "evidence.sqlite", RenderOptions(jobs=1))
    profile.disable()
    monkeypatch.setattr(data, "connect_ro", connect)
    assert report.pages_written > 0 and not report.problems
    return pstats.Stats(profile).total_calls, statements[0]


def test_render_work_and_page_bytes_per_page_do_not_grow_with_the_workspace(tmp_path, monkeypatch):
    per_page = {}
    for n in (SMALL, LARGE):
        root, out = _built(tmp_path, n)
        calls, statements = _counted_render(root, out, tmp_path / f"site{n}", monkeypatch)
        pages = [
            (tmp_path / f"site{n}" / page_path(f"f{i // 10:03d}/note-{i:04d}.md")).stat().st_size
            for i in range(n)
        ]
        per_page[n] = {
            "calls": calls / n,
            "statements": statements / n,
            "bytes": sum(pages) / n,
            "largest": max(pages),
        }
    small, large = per_page[SMALL], per_page[LARGE]
    assert small["statements"] > 3 and small["calls"] > 1000  # the counts see the real work
    # linear: a fixed cost spread over more pages, never more per page (slack: links and titles vary)
    assert large["statements"] <= small["statements"] * 1.05, per_page
    assert large["calls"] <= small["calls"] * 1.05, per_page
    assert large["bytes"] <= small["bytes"] * 1.1, per_page  # no whole-site list on every page
    assert large["largest"] <= small["largest"] * 1.3, per_page


def test_what_a_page_worker_gets_and_sends_back_does_not_grow_with_the_workspace(tmp_path):
    shipped = {}
    for n in (SMALL, LARGE):
        root, out = _built(tmp_path, n)
        site_dir = tmp_path / f"site{n}"
        site_dir.mkdir()
        options = RenderOptions(jobs=2)
        args = (_Site, str(root.resolve()), str(site_dir), str(out / "evidence.sqlite"), options)
        page_pool._start(*args)  # as a worker would (in this process: its messages are what is measured)
        paths = [f"f{i // 10:03d}/note-{i:04d}.md" for i in range(0, n, n // 8)][:8]
        back = page_pool._render_batch(paths)
        assert [p for p, *_ in back] == paths and all(w is not None for _, _, w, _ in back)
        for _, _, (tmp, size), _ in back:
            assert Path(tmp).stat().st_size == size
            Path(tmp).unlink()
        shipped[n] = (len(pickle.dumps(args)), len(pickle.dumps(paths)), len(pickle.dumps(back)))
        page_pool._worker_site.conn.close()
        page_pool._worker_site = None
    # the same sizes but for the longer folder names of the larger workspace: nothing of the site rides along
    assert all(big <= small * 1.02 + 16 for small, big in zip(shipped[SMALL], shipped[LARGE])), shipped


def test_pool_pages_are_synced_with_the_builds_batch_not_per_task(tmp_path, monkeypatch):
    root, out = _built(tmp_path, LARGE)
    serial_dir, pool_dir = tmp_path / "serial", tmp_path / "pool"
    render_site(root, serial_dir, out / "evidence.sqlite", RenderOptions(jobs=1))
    synced: list[list[Path]] = []
    sync = fsutil._sync
    monkeypatch.setattr(fsutil, "_sync", lambda paths: (synced.append(list(paths)), sync(paths))[1])
    monkeypatch.setattr(page_pool, "PAGES_FOR_POOL", 1)
    monkeypatch.setattr(page_pool, "PAGE_BATCH", 3)  # 64 tasks
    report = render_site(root, pool_dir, out / "evidence.sqlite", RenderOptions(jobs=2))
    assert report.pages_written == LARGE
    # every page's temp file went through this process's batch...
    temps = {p.name.split(".")[1] for batch in synced for p in batch if p.name.endswith(".tmp")}
    assert {f"note-{i:04d}" for i in range(LARGE)} <= temps
    # ... in a handful of syncs (files, then folders, per committed batch), not two per task
    written = sum(1 for f in pool_dir.rglob("*") if f.is_file())  # pages, copies, static files, the index
    assert len(synced) <= 2 * (1 + written // fsutil.BATCH_FILES) + 2, len(synced)
    assert not list(pool_dir.rglob("*.tmp"))
    for i in range(LARGE):
        page = page_path(f"f{i // 10:03d}/note-{i:04d}.md")
        assert (pool_dir / page).read_bytes() == (serial_dir / page).read_bytes()
    conn = sqlite3.connect(out / "evidence.sqlite")
    assert conn.execute("SELECT count(*) FROM evidence_resource").fetchone()[0] == LARGE
    conn.close()


def test_a_broken_pool_leaves_every_page_written_and_no_temp_files(tmp_path, monkeypatch):
    from concurrent.futures.process import BrokenProcessPool

    root, out = _built(tmp_path, SMALL)
    serial_dir, pool_dir = tmp_path / "serial", tmp_path / "pool"
    render_site(root, serial_dir, out / "evidence.sqlite", RenderOptions(jobs=1))
    monkeypatch.setattr(page_pool, "PAGES_FOR_POOL", 1)
    monkeypatch.setattr(page_pool, "PAGE_BATCH", 4)
    done, calls = page_pool._done, [0]

    def breaking(site, answer, problems, advance, keys):  # the pool breaks with a task's pages in temp files
        calls[0] += 1
        if calls[0] == 2:
            assert any(w is not None for _, _, w, _ in answer) and list(pool_dir.rglob("*.tmp"))
            raise BrokenProcessPool("a worker died")
        done(site, answer, problems, advance, keys)

    monkeypatch.setattr(page_pool, "_done", breaking)
    report = render_site(root, pool_dir, out / "evidence.sqlite", RenderOptions(jobs=2))
    assert report.pages_written == SMALL and not report.problems and calls[0] == 2
    assert not list(pool_dir.rglob("*.tmp"))
    for i in range(SMALL):
        page = page_path(f"f{i // 10:03d}/note-{i:04d}.md")
        assert (pool_dir / page).read_bytes() == (serial_dir / page).read_bytes()
