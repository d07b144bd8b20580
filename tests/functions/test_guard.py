"""The HTTP guard (functions/adapters/guard.py) in front of a real Datasette with our plugin, on a real build:
hostile requests get 4xx with a message, every response is hardened, and a fuzz of a few thousand
generated requests to every route never answers 500 nor shows a server path."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from datasette.app import Datasette

from mnote_evidence.functions.adapters.datasette_compat import V1
from mnote_evidence.functions.adapters.datasette_plugin import SITE_BASE
from mnote_evidence.functions.adapters.guard import allowed_hosts_for
from tests.servers import free_port, start, stop

BASE = "http://127.0.0.1:8001"


@pytest.fixture(scope="module")
def app(stale_site):
    _, out = stale_site
    hosts = sorted(allowed_hosts_for("127.0.0.1"))
    ds = Datasette(
        immutables=[str(out / "evidence.sqlite")],
        settings={"suggest_facets": False},
        metadata={"plugins": {"mnote-evidence": {"allowed_hosts": hosts}}},
    )
    return ds.app()  # the plugin puts the guard in front (asgi_wrapper)


def _run(app, requests: list[tuple[str, str, dict]]) -> list[httpx.Response]:
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE, timeout=60) as c:
            return [await c.request(method, url, **kw) for method, url, kw in requests]

    with ThreadPoolExecutor(1) as pool:  # a thread of its own: another test may leave a loop running here
        return pool.submit(asyncio.run, go()).result()


def test_hostile_requests_are_4xx_with_a_message(app):
    cases = [
        ("GET", "/evidence/evidence_resource.json?_sort=nope", {}, 400),
        ("GET", "/evidence/evidence_resource.json?_sort_desc=nope", {}, 400),
        ("GET", "/evidence/evidence_block.json?_where=%00", {}, 400),
        ("GET", "/evidence/evidence_block.json?_next=a", {}, 400),  # a view: pages by row offset
        ("GET", "/evidence/evidence_block.json?_next=%C2%B2", {}, 400),
        ("GET", SITE_BASE + "x%00", {}, 400),
        ("GET", SITE_BASE + "a" * 5000, {}, 414),
        ("GET", "/-/evidence/search?q=%ED%A0%80", {}, 400),
        ("GET", SITE_BASE + "index.html", {"headers": {"host": "rebound.example"}}, 421),
        (
            "POST",
            "/-/evidence/search",
            {
                "content": b'{"query": "x"}',
                "headers": {"origin": "http://evil.example", "content-type": "text/plain"},
            },
            403,
        ),
        ("POST", "/-/evidence/search", {"content": b"[" * 5000 + b"]" * 5000}, 400),
        ("POST", "/-/evidence/search", {"content": b'{"query": "\\ud800"}'}, 400),
        ("GET", "/-/databases.json", {}, 404),
        ("GET", SITE_BASE + "evidence.sqlite/", {}, 404),
        ("GET", SITE_BASE + ".mnote-state.sqlite", {}, 404),
    ]
    answers = _run(app, [(m, u, kw) for m, u, kw, _ in cases])
    for (_method, url, _, status), r in zip(cases, answers):
        assert r.status_code == status, (url[:80], r.status_code, r.text[:200])
        assert r.json()["error"]["message"]
    ok = _run(
        app,
        [
            ("GET", "/evidence/evidence_resource.json?_sort=status", {}),
            ("POST", "/-/evidence/search", {"content": b'{"query": "thread"}', "headers": {"origin": BASE}}),
            ("GET", "/evidence/evidence_block.json?_next=20&_size=5", {}),
        ],
    )
    assert [r.status_code for r in ok] == [200, 200, 200]


def test_every_response_is_hardened_and_attachments_are_inert(app, stale_site):
    _, out = stale_site
    (out / "_file").mkdir(exist_ok=True)
    (out / "_file" / "evil.html").write_text("<script>fetch('/evidence.json')</script>", "utf-8")
    page, data, attachment = _run(
        app,
        [
            ("GET", SITE_BASE + "index.html", {}),
            ("GET", "/evidence.json", {}),
            ("GET", SITE_BASE + "_file/evil.html", {}),
        ],
    )
    for r in (page, data, attachment):
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["content-security-policy"]
    assert (
        "'unsafe-inline'" not in page.headers["content-security-policy"].split("script-src")[1].split(";")[0]
    )
    assert attachment.status_code == 200 and attachment.headers["content-type"] == "application/octet-stream"
    assert attachment.headers["content-disposition"] == "attachment"
    assert attachment.headers["content-security-policy"].startswith("sandbox")


HOSTILE_VALUES = [
    "",
    "x",
    "'",
    '"',
    "%00",
    "%ED%A0%80",
    "%FF",
    "../../etc/passwd",
    "a" * 3000,
    "[[",
    "%",
    "1e999",
    "-1",
    "99999999999999999999",
    "<script>",
    "线程",
    "SELECT 1",
    "*",
    "NEAR(",
    '"unclosed',
    "rowid",
    "nope",
    "%2e%2e%2f",
    "\\",
    "a%0Ab",
    "{}",
    "[]",
    "null",
]
PARAMS = [
    "q",
    "query",
    "id",
    "block_id",
    "path",
    "limit",
    "offset",
    "mode",
    "top_k",
    "kind",
    "_sort",
    "_sort_desc",
    "_where",
    "sql",
    "_shape",
    "_size",
    "_next",
    "_facet",
    "hl",
    "page",
]
ROUTES = [
    "/",
    SITE_BASE,
    SITE_BASE + "index.html",
    SITE_BASE + "ask.html",
    SITE_BASE + "_static/site.js",
    SITE_BASE + "_file/x",
    SITE_BASE + "evidence.sqlite/",
    "/-/evidence/search",
    "/-/evidence/read",
    "/-/evidence/open",
    "/-/knowledge/query",
    "/-/knowledge/status",
    "/-/knowledge/ask",
    "/evidence",
    "/evidence.json",
    "/evidence/evidence_block",
    "/evidence/evidence_block.json",
    "/evidence/evidence_resource.json",
    "/evidence/build_errors.json",
    "/-/metadata.json",
    "/-/versions.json",
    "/-/plugins.json",
    SITE_BASE + "%2e%2e/",
]


def _fuzz_requests(n: int, seed: int) -> list[tuple[str, str, dict]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        route = rng.choice(ROUTES)
        if route.startswith(SITE_BASE) and rng.random() < 0.3:
            route += rng.choice(HOSTILE_VALUES)
        query = "&".join(
            f"{rng.choice(PARAMS)}={rng.choice(HOSTILE_VALUES)}" for _ in range(rng.randint(0, 3))
        )
        url = route + ("?" + query if query else "")
        if rng.random() < 0.25:
            body = rng.choice(
                [
                    b"{",
                    b"[]",
                    b"null",
                    json.dumps({rng.choice(PARAMS): rng.choice(HOSTILE_VALUES)}).encode(),
                    b'{"query": "\\udc00x"}',
                    b"[" * 200 + b"]" * 200,
                    b"\xff\xfe",
                    b'{"query": 1e999}',
                ]
            )
            out.append(("POST", url, {"content": body}))
        else:
            out.append(("GET", url, {}))
    return out


def test_fuzz_never_answers_500_nor_shows_a_server_path(app, stale_site):
    root, out = stale_site
    requests = _fuzz_requests(3000, seed=int(os.environ.get("MNOTE_FUZZ_SEED", "12")))
    answers = _run(app, requests)
    secrets = (str(out), str(root), "Traceback", str(out.parent.parent))
    bad = [
        (m, u[:100], r.status_code)
        for (m, u, _), r in zip(requests, answers)
        if r.status_code >= 500 and r.status_code != 503 or any(s in r.text for s in secrets)
    ]
    assert not bad, bad[:10]
    assert len({r.status_code for r in answers}) > 3  # the fuzz reached real handlers, not one refusal


def test_fuzz_a_real_serve_process(stale_site):
    """The same fuzz through a real `mnote-evidence serve` (the guard comes with the plugin)."""
    root, out = stale_site
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start(
        [sys.executable, "-m", "mnote_evidence", "serve", str(out), "--port", str(port)],
        base + "/-/versions.json",
    )
    try:
        requests = _fuzz_requests(2000, seed=7)
        secrets = (str(out), str(root), "Traceback", str(out.parent.parent))
        bad = []
        with httpx.Client(base_url=base, timeout=60) as client:
            for method, url, kw in requests:
                r = client.request(method, url, **kw)
                if r.status_code == 500 or any(s in r.text for s in secrets):
                    bad.append((method, url[:100], r.status_code))
            meta = client.get("/-/metadata.json").text
            rebound = client.get(SITE_BASE + "index.html", headers={"host": "rebound.example"})
        assert not bad, bad[:10]
        assert str(out) not in meta and rebound.status_code == 421
    finally:
        stop(proc)


def test_serve_a_folder_whose_path_has_uri_characters(stale_site, tmp_path):
    """Datasette builds `file:` URIs unescaped: a folder with `#?%` in its path serves its own database,
    not an empty one."""
    _, out = stale_site
    odd = tmp_path / "out #?%25"
    odd.symlink_to(out, target_is_directory=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start(
        [sys.executable, "-m", "mnote_evidence", "serve", str(odd), "--port", str(port)],
        base + "/-/versions.json",
    )
    try:
        answer = httpx.get(
            base + ("/evidence/-/query.json" if V1 else "/evidence.json"),
            params={"sql": "select count(*) n from evidence_resource", "_shape": "array"},
            timeout=30,
        )
        assert answer.json()[0]["n"] > 10, answer.text[:300]
        assert httpx.get(base + SITE_BASE + "index.html", timeout=30).status_code == 200
    finally:
        stop(proc)
