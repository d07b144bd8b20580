"""MinerU provider over HTTP against a local stand-in; the token never lands anywhere."""

from __future__ import annotations

import json

import pytest

from mnote_evidence.build.parse.ocr import mineru
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.functions.search.fts import search_blocks
from tests.conftest import FACTS, FIXTURES, connect, run_build
from tests.ocr.mineru_server import TOKEN, MinerUStub

IMAGE = FACTS["image"]["path"]
CONTENT = [
    {"type": "text", "text": "线程 作用 域", "page_idx": 0, "bbox": [30, 411, 255, 650]},
    {"type": "text", "text": "Thread scope", "page_idx": 0, "bbox": [300, 416, 830, 683]},
    {"type": "image", "img_path": "images/x.jpg", "page_idx": 0, "bbox": [0, 0, 10, 10]},
]


@pytest.fixture
def image_ws(tmp_path):
    root = tmp_path / "ws"
    (root / "shots").mkdir(parents=True)
    (root / "shots/thread-scope.png").write_bytes((FIXTURES / IMAGE).read_bytes())
    return root


def settings(tmp_path, url, **kw):
    return OcrSettings(
        engine="mineru", mineru_url=url, allow_upload=True, cache_dir=str(tmp_path / "cache"), **kw
    )


def everything_written(root, out, report) -> str:
    files = [p for p in list(root.rglob("*")) + list(out.rglob("*")) if p.is_file()]
    blobs = [p.read_bytes().decode("utf-8", "replace") for p in files]
    rows = connect(out).execute("SELECT * FROM evidence_resource").fetchall()
    return "\n".join(blobs) + json.dumps(report.to_json()) + json.dumps([dict(r) for r in rows])


def test_token_missing_is_a_coded_error_with_no_artifact(image_ws, tmp_path, monkeypatch):
    monkeypatch.delenv(mineru.TOKEN_ENV, raising=False)
    with MinerUStub(CONTENT) as stub:
        report = run_build(image_ws, tmp_path / "out", ocr=settings(tmp_path, stub.url))
    assert [(e["path"], e["code"]) for e in report.errors] == [
        ("shots/thread-scope.png", "mineru_token_missing")
    ]
    assert stub.requests == []  # nothing was sent
    assert not list(image_ws.rglob("*.ocr.md")) and not list(image_ws.rglob("*.source-map.json"))


def test_upload_needs_consent(image_ws, tmp_path, monkeypatch):
    monkeypatch.setenv(mineru.TOKEN_ENV, TOKEN)
    with MinerUStub(CONTENT) as stub:
        ocr = OcrSettings(engine="mineru", mineru_url=stub.url, cache_dir=str(tmp_path / "cache"))
        report = run_build(image_ws, tmp_path / "out", ocr=ocr)
    assert report.errors[0]["code"] == "mineru_upload_not_allowed" and stub.requests == []


def test_result_becomes_a_valid_source_map_and_the_token_stays_secret(
    image_ws, tmp_path, monkeypatch, validate, capfd
):
    monkeypatch.setenv(mineru.TOKEN_ENV, TOKEN)
    monkeypatch.setattr(mineru, "POLL_SECONDS", 0.05)
    out = tmp_path / "out"
    with MinerUStub(CONTENT) as stub:
        report = run_build(image_ws, out, ocr=settings(tmp_path, stub.url), site=True)
    assert report.errors == []
    assert stub.uploaded == (image_ws / "shots/thread-scope.png").read_bytes()
    authed = {(method, path.split("?")[0]) for method, path, has_auth in stub.requests if has_auth}
    assert authed == {("POST", "/api/v4/file-urls/batch"), ("GET", "/api/v4/extract-results/batch/batch-1")}
    unauthed = {path for _, path, has_auth in stub.requests if not has_auth}
    assert unauthed == {"/upload/one", "/result.zip"}  # presigned URLs never see the token
    hits = [
        h for h in search_blocks(connect(out), "线程作用域", 5) if h.resource_path == "shots/thread-scope.png"
    ]
    assert hits, "the MinerU text must be searchable"
    width, height = FACTS["image"]["width"], FACTS["image"]["height"]
    assert hits[0].locator["bbox"] == [
        round(30 / 1000 * width, 2),
        round(411 / 1000 * height, 2),
        round(255 / 1000 * width, 2),
        round(650 / 1000 * height, 2),
    ]
    doc = json.loads((image_ws / hits[0].locator["sourceMapPath"]).read_text("utf-8"))
    validate("source_map.schema.json", doc)
    assert doc["provider"] == "mineru" and doc["pages"][0]["source"].startswith("ocr:mineru")
    captured = capfd.readouterr()
    assert TOKEN not in everything_written(image_ws, out, report) + captured.out + captured.err


@pytest.mark.parametrize("fail, code", [("state", "mineru_failed"), ("http", "mineru_failed")])
def test_service_failures_are_recorded(image_ws, tmp_path, monkeypatch, fail, code):
    monkeypatch.setenv(mineru.TOKEN_ENV, TOKEN)
    monkeypatch.setattr(mineru, "POLL_SECONDS", 0.05)
    with MinerUStub(CONTENT, fail=fail) as stub:
        report = run_build(image_ws, tmp_path / "out", ocr=settings(tmp_path, stub.url))
    assert report.errors[0]["code"] == code and TOKEN not in report.errors[0]["message"]


def test_configured_fallback_uses_the_local_engine(image_ws, tmp_path, monkeypatch):
    monkeypatch.delenv(mineru.TOKEN_ENV, raising=False)
    out = tmp_path / "out"
    report = run_build(image_ws, out, ocr=settings(tmp_path, "http://127.0.0.1:9", fallback="rapidocr"))
    assert report.errors == []
    assert any(
        h.resource_path == "shots/thread-scope.png" for h in search_blocks(connect(out), "线程作用域", 5)
    )
