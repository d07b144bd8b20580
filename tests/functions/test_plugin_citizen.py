"""The plugin is a good Datasette citizen: it leaves Datasette's URLs alone (a database named `site`, a
Datasette without evidence), keeps no state past its Datasette, and implements only hooks that exist."""

from __future__ import annotations

import gc
import sqlite3
import weakref
from pathlib import Path

import httpx
import pytest

from tests.servers import DATASETTE, free_port, start, stop


@pytest.fixture(scope="module")
def site_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("citizen") / "site.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE pages (id INTEGER PRIMARY KEY, title TEXT)")
    conn.executemany("INSERT INTO pages VALUES (?, ?)", [(1, "Home page"), (2, "About us")])
    conn.commit()
    conn.close()
    return path


def datasette(*args: str):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    return base, start([DATASETTE, *args, "--port", str(port)], base + "/-/versions.json")


def test_a_database_named_site_keeps_its_urls(stale_site, site_db):
    _, out = stale_site
    base, proc = datasette("-i", str(out / "evidence.sqlite"), "-i", str(site_db))
    try:
        table = httpx.get(base + "/site/pages", timeout=30)
        assert table.status_code == 200 and "About us" in table.text
        assert (
            httpx.get(base + "/site/pages.json", params={"_shape": "array"}, timeout=30).json()[1]["title"]
            == "About us"
        )
        row = httpx.get(base + "/site/pages/2", timeout=30)
        assert row.status_code == 200 and "About us" in row.text
        csv = httpx.get(base + "/site/pages.csv", timeout=30)
        assert csv.status_code == 200 and "Home page" in csv.text
        assert httpx.get(base + "/site", timeout=30).status_code == 200  # the database page, not a redirect
        # and the evidence site is still there, under /-/
        assert httpx.get(base + "/-/evidence/site/index.html", timeout=30).status_code == 200
        assert httpx.get(base + "/-/evidence/search", params={"q": "thread"}, timeout=30).json()["results"]
    finally:
        stop(proc)


def test_no_routes_without_an_evidence_database(site_db):
    base, proc = datasette("-i", str(site_db))
    try:
        for route in ("/-/evidence/search?q=x", "/-/knowledge/status", "/-/evidence/site/index.html"):
            assert httpx.get(base + route, timeout=30).status_code == 404, route
        assert httpx.get(base + "/site/pages/1.json", timeout=30).status_code == 200
        assert httpx.get(base + "/", timeout=30).status_code == 200  # Datasette's own index page
    finally:
        stop(proc)


def test_the_plugin_state_goes_with_its_datasette(stale_site):
    """Per-instance state is keyed weakly by the Datasette object and holds no strong reference to it,
    so dropping an instance drops its state (checked with a stand-in: Datasette 1.0a41 keeps closed
    instances alive by itself, plugin or not)."""
    from datasette.app import Datasette

    from mnote_evidence.functions.adapters import datasette_plugin

    _, out = stale_site
    ds = Datasette([str(out / "evidence.sqlite")])
    ds.app()  # the asgi_wrapper hook: state, the live database, the guard
    state = datasette_plugin._STATES[ds]
    assert type(ds.databases["evidence"]).__name__ == "LiveDatabase"
    assert not any(
        value is ds for value in gc.get_referents(*vars(state).values()) + list(vars(state).values())
    )

    class Bare:  # all that _State reads of a Datasette without databases
        databases: dict = {}

    bare = Bare()
    datasette_plugin._state(bare)
    assert bare in datasette_plugin._STATES
    gone = weakref.ref(bare)
    del bare
    gc.collect()
    assert gone() is None and not any(isinstance(k, Bare) for k in datasette_plugin._STATES.keys())


def test_only_the_hooks_of_this_datasette_line_are_implemented():
    """0.65's get_metadata, canned_queries and skip_csrf are not declared on 1.0, where they do not exist."""
    from mnote_evidence.functions.adapters import datasette_plugin
    from mnote_evidence.functions.adapters.datasette_compat import V1

    legacy = {"get_metadata", "canned_queries", "skip_csrf"}
    assert (legacy & set(vars(datasette_plugin))) == (set() if V1 else legacy)
