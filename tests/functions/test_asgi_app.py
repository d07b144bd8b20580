"""The plain ASGI app (no Datasette) in a real uvicorn process: the plugin's routes and answers,
the same 4xx messages, a read-only database, and nothing answered that names a path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from mnote_evidence.functions.handlers.routes import ROUTES
from tests.conftest import SPEC_PDF
from tests.servers import free_port, wait_until_up

SITE_URL = "https://evidence.example.net/site/"


def uvicorn_app(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "mnote_evidence.functions.adapters.asgi_app:app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
        )
    base = f"http://127.0.0.1:{port}"
    wait_until_up(base + "/", proc)
    return proc, base


@pytest.fixture(scope="module")
def bundle(stale_site, tmp_path_factory) -> Path:
    """The built evidence.sqlite alone in a folder nobody may write to (as bundled with a function)."""
    folder = tmp_path_factory.mktemp("bundle")
    (folder / "evidence.sqlite").write_bytes((stale_site[1] / "evidence.sqlite").read_bytes())
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.fixture(scope="module")
def asgi(bundle, tmp_path_factory):
    log = tmp_path_factory.mktemp("asgi") / "server.log"
    proc, base = uvicorn_app(
        {
            "MNOTE_EVIDENCE_DB": str(bundle / "evidence.sqlite"),
            "MNOTE_SITE_URL": SITE_URL,
            "LIGHTRAG_URL": "http://127.0.0.1:9",
        },
        log,
    )
    yield base
    proc.terminate()
    proc.wait(timeout=10)


def test_lists_the_plugins_routes(asgi):
    body = httpx.get(asgi + "/", timeout=10).json()
    assert body["ok"] and body["ready"] and body["routes"] == [r.path for r in ROUTES]


def test_same_answers_as_the_datasette_plugin_with_absolute_links(asgi, datasette_server):
    for route, params in (
        ("/-/evidence/search", {"q": "retention period seven years", "topK": "3"}),
        ("/-/evidence/search", {"q": "thread", "resourceKinds": "pdf,image", "mode": "hybrid"}),
    ):
        ours = httpx.get(asgi + route, params=params, timeout=30)
        theirs = httpx.get(datasette_server + route, params=params, timeout=30)
        assert ours.status_code == theirs.status_code == 200
        a, b = ours.json(), theirs.json()
        assert a["results"] and len(a["results"]) == len(b["results"])
        for x, y in zip(a["results"], b["results"], strict=True):
            assert x["evidenceId"] == y["evidenceId"] and x["quote"] == y["quote"]
            url = x["source"]["openAction"]["url"]
            served = y["source"]["openAction"]["url"]  # Datasette mounts the site at /-/evidence/site/
            assert url.startswith(SITE_URL) and url.removeprefix(SITE_URL) == served.removeprefix(
                "/-/evidence/site/"
            )
    top = httpx.get(
        asgi + "/-/evidence/search", params={"q": "retention period seven years"}, timeout=30
    ).json()
    block = top["results"][0]["evidenceId"]
    read = httpx.post(asgi + "/-/evidence/read", json={"blockId": block, "window": 1}, timeout=30).json()
    assert (
        read["ok"]
        and read["anchor"]["evidenceId"] == block
        and read["anchor"]["source"]["resourcePath"] == SPEC_PDF
    )
    verified = httpx.post(
        asgi + "/-/evidence/verify", json={"quote": "seven years", "blockId": block}, timeout=30
    )
    assert verified.status_code == 200 and verified.json()["verdict"] == "found"
    theirs = httpx.post(
        datasette_server + "/-/evidence/verify", json={"quote": "seven years", "blockId": block}, timeout=30
    ).json()
    assert verified.json()["match"]["evidenceId"] == theirs["match"]["evidenceId"] == block
    opened = httpx.get(asgi + "/-/evidence/open", params={"blockId": block}, timeout=30).json()
    assert opened["openAction"]["url"].startswith(SITE_URL) and opened["openAction"]["url"].endswith(
        "#" + block
    )


def test_lightrag_down_is_degraded_not_an_error(asgi):
    status = httpx.get(asgi + "/-/knowledge/status", timeout=30).json()
    assert status["ok"] and status["healthy"] is False and status["reason"] == "knowledge_rag_unavailable"
    query = httpx.post(asgi + "/-/knowledge/query", json={"query": "retention"}, timeout=30)
    assert query.status_code == 200 and query.json()["degraded"] is True and query.json()["citations"] == []


@pytest.mark.parametrize(
    "method, route, kwargs, status, fragment",
    [
        (
            "GET",
            "/-/evidence/search",
            {"params": {"q": "x", "topK": "many"}},
            400,
            "'topK' must be an integer",
        ),
        ("GET", "/-/evidence/search", {"params": {"q": "x", "topk": "3"}}, 400, "unknown field(s) topk"),
        ("POST", "/-/evidence/search", {"content": b"{not json"}, 400, "body is not valid JSON"),
        ("POST", "/-/evidence/search", {"json": ["query"]}, 400, "request must be a JSON object"),
        ("POST", "/-/evidence/read", {"json": {}}, 400, "give 'blockId'"),
        (
            "GET",
            "/-/evidence/read",
            {"params": {"blockId": "b-doesnotexist"}},
            404,
            "no block b-doesnotexist",
        ),
        (
            "POST",
            "/-/evidence/open",
            {"json": {"locator": {"resourcePath": "../../etc/passwd", "page": 1}}},
            404,
            "no resource",
        ),
        ("GET", "/-/evidence/nothing", {}, 404, "no such route"),
        ("PUT", "/-/evidence/search", {"json": {"query": "x"}}, 405, "use GET or POST"),
        (
            "POST",
            "/-/evidence/search",
            {"json": {"query": "x"}, "headers": {"Origin": "https://evil.example"}},
            403,
            "another origin",
        ),
        ("GET", "/-/evidence/search?q=%00", {}, 400, "NUL"),
    ],
)
def test_bad_requests_get_4xx_with_a_message_and_no_path(
    asgi, bundle, method, route, kwargs, status, fragment
):
    r = httpx.request(method, asgi + route, timeout=30, **kwargs)
    body = r.json()
    assert r.status_code == status and body["ok"] is False and fragment in body["error"]["message"]
    assert str(bundle) not in r.text and "Traceback" not in r.text
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["cache-control"] == "no-store"


def test_the_bundled_database_is_only_read(asgi, bundle):
    httpx.get(asgi + "/-/evidence/search", params={"q": "thread"}, timeout=30).raise_for_status()
    assert sorted(p.name for p in bundle.iterdir()) == ["evidence.sqlite"]  # no -wal, -shm or -journal


def test_missing_database_is_a_503_that_names_the_setting_not_the_path(tmp_path):
    missing = tmp_path / "secret-place" / "evidence.sqlite"
    proc, base = uvicorn_app({"MNOTE_EVIDENCE_DB": str(missing)}, tmp_path / "log")
    try:
        assert httpx.get(base + "/", timeout=10).json()["ready"] is False
        r = httpx.get(base + "/-/evidence/search", params={"q": "x"}, timeout=10)
        assert r.status_code == 503 and "MNOTE_EVIDENCE_DB" in r.json()["error"]["message"]
        assert "secret-place" not in r.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "secret-place" in (tmp_path / "log").read_text()  # the operator's log says where it looked
