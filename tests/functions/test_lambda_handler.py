"""The Lambda handler (Mangum over the ASGI app) on API Gateway HTTP API events (payload format 2.0).

The events under `apigw_v2/` have the shape API Gateway sends a Lambda proxy integration
(AWS's documented 2.0 format: rawPath, rawQueryString, lower-case headers, requestContext.http,
base64 bodies); no cloud is reachable from here, so they are committed files, replayed."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from mnote_evidence.functions.adapters import asgi_app
from mnote_evidence.functions.adapters.lambda_handler import handler
from tests.conftest import CHEM_DOCX, SPEC_PDF

EVENTS = Path(__file__).parent / "apigw_v2"
SITE_URL = "https://d111111abcdef8.cloudfront.net/"
CONTEXT = SimpleNamespace(
    function_name="mnote-evidence",
    aws_request_id="c6af9ac6-7b61-11e6-9a41-93e812345678",
    memory_limit_in_mb=512,
    invoked_function_arn="arn:aws:lambda:eu-central-1:123456789012:function:mnote-evidence",
    get_remaining_time_in_millis=lambda: 29000,
)


def event(name: str) -> dict:
    return json.loads((EVENTS / f"{name}.json").read_text("utf-8"))


@pytest.fixture
def bundled(stale_site, tmp_path, monkeypatch):
    """A Lambda task folder: evidence.sqlite beside the code, found from the working directory."""
    task = tmp_path / "task"
    task.mkdir()
    shutil.copy(stale_site[1] / "evidence.sqlite", task / "evidence.sqlite")
    monkeypatch.chdir(task)
    monkeypatch.delenv(asgi_app.DB_ENV, raising=False)
    monkeypatch.setenv(asgi_app.SITE_URL_ENV, SITE_URL)
    monkeypatch.setenv("LIGHTRAG_URL", "http://127.0.0.1:9")
    monkeypatch.setattr(asgi_app.app, "_app", None)  # a fresh container: configured on the first event
    return task


def as_lambda_runs_it(payload: dict) -> dict:
    """The handler on a thread with an event loop of its own, as the Lambda runtime's main thread has:
    in the test process another test may leave a loop running on the main thread."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return handler(payload, CONTEXT)
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def invoke(name: str) -> tuple[int, dict, dict]:
    with ThreadPoolExecutor(1) as pool:
        response = pool.submit(as_lambda_runs_it, event(name)).result()
    body = response["body"]
    if response.get("isBase64Encoded"):
        body = base64.b64decode(body).decode("utf-8")
    return response["statusCode"], response["headers"], json.loads(body)


def test_search_by_get_opens_the_page_box_on_the_public_site(bundled):
    status, headers, body = invoke("search_get")
    assert status == 200 and headers["content-type"].startswith("application/json")
    top = body["results"][0]
    assert (
        top["source"]["resourcePath"] == SPEC_PDF
        and top["source"]["page"] == 2
        and "seven years" in top["quote"]
    )
    assert top["source"]["openAction"]["url"].startswith(SITE_URL + "Projects/Evidence%20Kernel.assets/")


def test_search_by_base64_post_body(bundled):
    status, _, body = invoke("search_post_base64")
    assert status == 200 and body["query"] == "吡咯烷" and len(body["results"]) <= 2
    assert {r["source"]["resourcePath"] for r in body["results"]} == {CHEM_DOCX}


def test_open_a_box_by_locator(bundled):
    status, _, body = invoke("open_box_post")
    assert status == 200 and body["precision"] == "bbox"
    assert body["openAction"]["url"].startswith(SITE_URL) and body["openAction"]["url"].endswith(
        "?page=2&bbox=72,100,300,120"
    )


def test_lightrag_down_is_a_degraded_status(bundled):
    status, _, body = invoke("knowledge_status")
    assert status == 200 and body["healthy"] is False and body["reason"] == "knowledge_rag_unavailable"


@pytest.mark.parametrize(
    "name, status, fragment",
    [
        ("read_unknown_block", 404, "no block b-doesnotexist"),
        ("search_bad_topk", 400, "'topK' must be an integer"),
        ("search_bad_json", 400, "body is not valid JSON"),
        ("unknown_route", 404, "no such route"),
        ("cross_origin_post", 403, "another origin"),
    ],
)
def test_bad_events_get_4xx_with_a_message_and_no_path(bundled, name, status, fragment):
    got, headers, body = invoke(name)
    assert got == status and body["ok"] is False and fragment in body["error"]["message"]
    assert str(bundled) not in json.dumps(body) and headers["x-content-type-options"] == "nosniff"


def test_without_a_bundled_database_every_query_is_503(bundled, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no evidence.sqlite here
    monkeypatch.setattr(asgi_app.app, "_app", None)
    status, _, body = invoke("search_get")
    assert (
        status == 503 and body["error"]["code"] == "index_missing" and str(tmp_path) not in json.dumps(body)
    )


def test_a_slim_bundle_needs_only_the_standard_library_mangum_and_httpx(stale_site, tmp_path):
    """What docs/guides/deploy-functions.md's Lambda recipe ships: our package (`pip install --no-deps`,
    laid out as pyproject's package-dir says), mangum, httpx and its pure-Python dependencies,
    typing_extensions, evidence.sqlite; no site-packages."""
    import importlib.util
    import subprocess
    import sys
    import tomllib

    from tests.conftest import REPO

    bundle = tmp_path / "bundle"
    layout = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-dir"]
    for package, folder in layout.items():
        shutil.copytree(
            REPO / folder,
            bundle / package.replace(".", "/"),
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    for package in ("mangum", "httpx", "httpcore", "h11", "anyio", "idna", "certifi"):
        shutil.copytree(
            importlib.util.find_spec(package).submodule_search_locations[0],
            bundle / package,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    shutil.copy(importlib.util.find_spec("typing_extensions").origin, bundle)
    shutil.copy(stale_site[1] / "evidence.sqlite", bundle / "evidence.sqlite")
    code = (
        "import json, sys\n"
        "from mnote_evidence.functions.adapters.lambda_handler import handler\n"
        "out = [handler(json.load(open(p)), None)['statusCode'] for p in sys.argv[1:]]\n"
        "print(json.dumps({'status': out, 'site': [m for m in sys.modules if 'site-packages' in "
        "(getattr(sys.modules[m], '__file__', '') or '')]}))\n"
    )
    events = [str(EVENTS / f"{n}.json") for n in ("search_get", "search_post_base64", "knowledge_status")]
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code, *events],
        cwd=bundle,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(bundle), "LIGHTRAG_URL": "http://127.0.0.1:9", "PATH": "/usr/bin"},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    answer = json.loads(proc.stdout)
    assert answer == {"status": [200, 200, 200], "site": []}
