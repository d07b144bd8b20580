"""Every view of a real `serve --watch` follows rebuilds: no answer older than the last finished build.

Each generation adds one note `Gen/gen-N.md` (a marker word, a link to a fixed note). Before
every request a client reads the generation from the file on disk: that build has finished
(renamed into place) before the request starts, so the server's answer must count at least
that many. Several clients hit Datasette's table views (HTML and .json), `?sql=`,
`?_search=`, facets, a canned query and the plugin's search route concurrently, on all of
Datasette's worker threads, through repeated rebuilds. At the end no descriptor of the
server points at a deleted evidence database.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from pathlib import Path

import httpx
import pytest

from mnote_evidence.functions.adapters.datasette_compat import V1
from tests.conftest import copy_workspace, run_build
from tests.servers import start_serve, stop

GENERATIONS = 4
CLIENTS = 4
MARKER = "zqxjmarker"
LINKED = "Projects/Evidence Kernel.md"
WAIT_SECONDS = 90  # failure detection only
SQL_JSON = "/evidence/-/query.json" if V1 else "/evidence.json"  # 1.0 redirects the 0.65 URL there
COUNT = {"_extra": "count"} if V1 else {}  # the filtered row count, asked for on 1.0


def counted(r) -> int:
    return r.json()["count" if V1 else "filtered_table_rows_count"]


def faceted(r, column: str) -> dict:
    facets = r.json()["facet_results"]
    return facets["results"][column] if V1 else facets[column]


def on_disk(out: Path) -> int:
    """The generation of the build that is in place now (it finished: the rename is done)."""
    conn = sqlite3.connect(f"file:{out / 'evidence.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT count(*) FROM evidence_resource WHERE source_root_relative_path LIKE 'Gen/%'"
        ).fetchone()[0]
    finally:
        conn.close()


# Each view: (name, path, params, answer -> generation it reflects).
VIEWS = [
    (
        "sql",
        SQL_JSON,
        {
            "sql": "select count(*) as n from evidence_resource where source_root_relative_path like 'Gen/%'",
            "_shape": "array",
        },
        lambda r: r.json()[0]["n"],
    ),
    (
        "table.json",
        "/evidence/evidence_resource.json",
        {"source_root_relative_path__startswith": "Gen/", "_size": "0", **COUNT},
        counted,
    ),
    (
        "table.html",
        "/evidence/evidence_resource",
        {"source_root_relative_path__startswith": "Gen/"},
        lambda r: int(re.search(r"<h3[^>]*>\s*([\d,]+) rows?", r.text).group(1).replace(",", "")),
    ),
    (
        "_search",
        "/evidence/evidence_block.json",
        {"_search": MARKER, "_size": "0", **COUNT},
        counted,
    ),
    (
        "facet",
        "/evidence/evidence_resource.json",
        {"source_root_relative_path__startswith": "Gen/", "_facet": "kind", "_size": "0"},
        lambda r: sum(v["count"] for v in faceted(r, "kind")["results"]),
    ),
    (
        "canned",
        "/evidence/backlinks_of_note.json",
        {"path": LINKED, "_shape": "array"},
        lambda r: sum(1 for row in r.json() if row["from_note"].startswith("Gen/")),
    ),
    (
        "plugin",
        "/-/evidence/search",
        {"q": MARKER, "topK": "50"},
        lambda r: sum(1 for x in r.json()["results"] if x["source"]["resourcePath"].startswith("Gen/")),
    ),
]


def deleted_db_fds(pid: int) -> list[str]:
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if "evidence.sqlite" in target and target.endswith("(deleted)"):
            out.append(target)
    return out


@pytest.fixture
def watched(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    (root / "Gen").mkdir()
    out = tmp_path / "out"
    run_build(root, out, site=True)
    proc, base = start_serve(out, "--watch", str(root), "--jobs", "1")
    yield root, out, base, proc
    stop(proc)


def test_every_view_follows_every_rebuild_on_every_thread(watched):
    root, out, base, proc = watched
    stale, answers, failures, done = [], [], [], threading.Event()

    def client(offset: int) -> None:
        deadline = time.monotonic() + WAIT_SECONDS * GENERATIONS
        with httpx.Client(base_url=base, timeout=30) as http:
            i = offset
            while not done.is_set() and time.monotonic() < deadline:
                name, path, params, reflected = VIEWS[i % len(VIEWS)]
                i += 1
                floor = on_disk(out)  # finished before the request starts
                r = http.get(path, params=params)
                if r.status_code != 200:
                    failures.append((name, r.status_code, r.text[:200]))
                    continue
                seen = reflected(r)
                answers.append(name)
                if seen < floor:
                    stale.append((name, seen, floor))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    started = time.monotonic()
    try:
        for n in range(1, GENERATIONS + 1):
            (root / f"Gen/gen-{n}.md").write_text(
                f"# Generation {n}\n\nBuild marker {MARKER} number {n}, see [[Evidence Kernel]].\n", "utf-8"
            )
            deadline = time.monotonic() + WAIT_SECONDS
            while on_disk(out) < n:
                assert time.monotonic() < deadline, f"generation {n} was never built"
                time.sleep(0.1)
            time.sleep(0.5)  # let the clients query this generation a while
    finally:
        done.set()
        for t in threads:
            t.join()
    elapsed = time.monotonic() - started
    print(f"{len(answers)} answers over {GENERATIONS} rebuilds in {elapsed:.1f}s, {len(stale)} stale")
    assert failures == [] and stale == []
    assert {name for name, *_ in VIEWS} <= set(answers) and len(answers) > 10 * len(VIEWS)
    with httpx.Client(base_url=base, timeout=30) as http:  # every view agrees on the last build
        for name, path, params, reflected in VIEWS:
            assert reflected(http.get(path, params=params)) == GENERATIONS, name
    time.sleep(0.5)
    assert deleted_db_fds(proc.pid) == []
