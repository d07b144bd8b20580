"""The plugin leaves Datasette's URLs alone: a database named `site`, a Datasette without evidence."""

from __future__ import annotations

import sqlite3
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
