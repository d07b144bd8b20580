"""Versioned derived data: a changed version redoes exactly what it affects.

Real builds of content_fixtures copies; versions are changed in-process through
the documented hooks (`text.SEGMENTATION_VERSION` + `text.segment_for_index`,
a provider's revision (`formats.FORMATS`), BuildOptions' OCR and page image settings) or by
writing another schema version into a real database.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import sys
import time
from pathlib import Path

import httpx

from mnote_evidence.build.cli.build import _print_report
from mnote_evidence.build.core import formats, text
from mnote_evidence.build.core.urls import page_path
from mnote_evidence.build.index.schema import SCHEMA_VERSION
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers import evidence
from mnote_evidence.functions.search.fts import search_blocks
from tests.conftest import SHARED_OCR, SPEC_PDF, connect, run_build
from tests.servers import free_port, start, start_serve, stop

MARK = "zzsegmark"  # a token only the test segmentation writes


def _resources(out: Path) -> dict[str, tuple]:
    conn = connect(out)
    try:
        return {
            r["source_root_relative_path"]: (r["kind"], r["updated_at_ms"], r["provider_version"])
            for r in conn.execute("SELECT * FROM evidence_resource")
        }
    finally:
        conn.close()


def _one(out: Path, sql: str, *args):
    conn = connect(out)
    try:
        return conn.execute(sql, args).fetchone()[0]
    finally:
        conn.close()


def _search(out: Path, query: str) -> tuple[int, dict]:
    ctx = evidence.Context(EvidenceDB(out / "evidence.sqlite"))
    return call(lambda r: evidence.search(r, ctx), {"query": query})


def test_segmentation_change_resegments_fts_without_parsing(workspace, tmp_path, monkeypatch):
    out = tmp_path / "out"
    run_build(workspace, out)
    before = _resources(out)
    blocks = _one(out, "SELECT count(*) FROM evidence_block")
    original = text.segment_for_index
    monkeypatch.setattr(text, "SEGMENTATION_VERSION", "test-2")
    monkeypatch.setattr(text, "segment_for_index", lambda t: f"{original(t)} {MARK}")

    report = run_build(workspace, out)
    assert report.parsed == 0 and report.reused_sidecars == 0
    assert report.redone == {"segmentation": {"from": "1", "to": "test-2", "fts_rows": blocks}}
    assert _one(out, "SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH ?", MARK) == blocks
    assert _resources(out) == before  # no resource row rewritten
    assert _one(out, "SELECT value FROM build_meta WHERE key = 'segmentation_version'") == "test-2"
    assert run_build(workspace, out).redone == {}  # recorded: nothing more to redo

    monkeypatch.undo()  # this code's segmentation again: the index is now of another one
    status, body = _search(out, "线程作用域")
    assert status == 503 and body["error"]["code"] == "index_incompatible"
    assert "segmentation version test-2" in body["error"]["message"]
    report = run_build(workspace, out)
    assert report.parsed == 0
    assert report.redone["segmentation"] == {"from": "test-2", "to": "1", "fts_rows": blocks}
    assert _one(out, "SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH ?", MARK) == 0
    conn = connect(out)
    try:
        assert search_blocks(conn, text.fts_query("线程作用域"), 5)  # CJK bigrams found again
    finally:
        conn.close()


def _page_images(out: Path, page: str) -> list[Path]:
    """The page image files a rendered PDF page points at (resolved on disk)."""
    html = (out / page).read_text("utf-8")
    srcs = [s for s in re.findall(r'<img src="([^"]+)"', html) if "_pages/" in s]
    return [((out / page).parent / s).resolve() for s in srcs]


def _settings(s: dict) -> str:
    return f"{s['format']} q{s['quality']} zoom {s['zoom']:g}"


def test_page_image_settings_change_rerenders_and_repoints(workspace, tmp_path, capsys):
    out = tmp_path / "out"
    report = run_build(workspace, out, site=True)
    pdf_page = page_path(SPEC_PDF)
    first = _page_images(out, pdf_page)
    assert first and all(p.suffix == ".jpg" and p.parent.name == "z2-jpeg-q80" and p.is_file() for p in first)
    rendered = report.site.page_images
    with sqlite3.connect(out / "evidence.sqlite") as conn:
        embedding = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT n.source_root_relative_path FROM evidence_link l JOIN evidence_resource n "
                "USING (resource_id) JOIN evidence_resource t ON t.source_root_relative_path = l.target_path "
                "WHERE l.kind = 'embed' AND t.kind = 'pdf'"
            )
        }
    assert embedding == {"Obsidian/Review.md"}
    note_page = out / "Archive/Old Ideas.html"
    note_mtime = note_page.stat().st_mtime_ns

    steps = [
        ({"page_format": "webp"}, ".webp", "z2-webp-q80"),
        ({"page_format": "webp", "page_quality": 60}, ".webp", "z2-webp-q60"),
        ({"page_format": "webp", "page_quality": 60, "page_zoom": 1.5}, ".webp", "z1.5-webp-q60"),
    ]
    previous = {"format": "jpeg", "quality": 80, "zoom": 2.0}
    for options, suffix, folder in steps:
        report = run_build(workspace, out, site=True, **options)
        now = {
            "format": options["page_format"],
            "quality": options.get("page_quality", 80),
            "zoom": options.get("page_zoom", 2.0),
        }
        assert report.parsed == 0
        assert report.redone == {"page_images": {"from": previous, "to": now}}
        capsys.readouterr()
        _print_report(report)
        assert (
            f"redone: page images {_settings(previous)} -> {_settings(now)}: {rendered} rendered, "
            f"{rendered} old files removed"
        ) in capsys.readouterr().out
        assert report.site.page_images == rendered  # every page image again
        assert report.site.images_removed == rendered  # and the old ones gone
        # the two PDFs' pages, and the notes showing a PDF page image (`![[x.pdf#page=N]]`)
        assert report.site.pages_written == 2 + len(embedding)
        images = _page_images(out, pdf_page)
        assert len(images) == len(first)
        assert all(p.suffix == suffix and p.parent.name == folder and p.is_file() for p in images)
        on_disk = {p.parent.name for p in (out / "_pages").rglob("p*.*")}
        assert on_disk == {folder}
        previous = now
    assert note_page.stat().st_mtime_ns == note_mtime
    again = run_build(workspace, out, site=True, **steps[-1][0])
    assert again.redone == {} and again.site.page_images == 0


def test_provider_revision_change_reparses_only_that_format(workspace, tmp_path, monkeypatch):
    out = tmp_path / "out"
    run_build(workspace, out)
    before = _resources(out)
    docx = {p for p, (kind, _, _) in before.items() if kind == "office" and before[p][2]}
    assert len(docx) == 2  # the chemistry notes and the corrupt one (its error is retried)
    bumped = tuple(
        dataclasses.replace(f, revision="test-2") if f.name == "docx" else f for f in formats.FORMATS
    )
    monkeypatch.setattr(formats, "FORMATS", bumped)  # the registry, and its table by suffix
    monkeypatch.setattr(formats, "BY_SUFFIX", formats._by_suffix(bumped))

    report = run_build(workspace, out)
    assert report.parsed == len(docx) and report.reused_sidecars == 0
    office = report.redone["providers"]["office"]
    assert office["resources"] == len(docx) and office["to"].endswith("+mtest-2")
    assert set(report.redone) == {"providers"} and set(report.redone["providers"]) == {"office"}
    after = _resources(out)
    changed = {p for p in before if after[p][1] != before[p][1]}
    assert changed == docx
    assert all(after[p][2].endswith("+mtest-2") for p in docx)  # the retried error too: recorded once
    assert run_build(workspace, out).parsed == 0


def test_ocr_engine_change_reparses_pdf_and_images_only(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    before = _resources(out)
    report = run_build(workspace, out, ocr=OcrSettings(engine="none", cache_dir=SHARED_OCR.cache_dir))
    assert report.redone["ocr_engine"]["to"] == "none"
    assert report.redone["ocr_engine"]["from"].startswith("rapidocr-")
    assert set(report.redone["providers"]) == {"pdf", "image"}
    after = _resources(out)
    changed = {before[p][0] for p in before if after[p][1] != before[p][1]}
    assert changed == {"pdf", "image"}
    reparsed = sum(p["resources"] for p in report.redone["providers"].values())
    assert reparsed == report.parsed + report.reused_sidecars


def _set_schema(out: Path, version: str, drop_column: bool = False) -> None:
    conn = sqlite3.connect(out / "evidence.sqlite")
    try:
        conn.execute("UPDATE build_meta SET value = ? WHERE key = 'schema_version'", [version])
        if drop_column:  # an older layout this code could not read (nor schema 7's index on the column)
            conn.execute("DROP INDEX evidence_resource_warned")
            conn.execute("ALTER TABLE evidence_resource DROP COLUMN warnings_json")
        conn.commit()
    finally:
        conn.close()


def test_incompatible_schema_is_refused_by_readers_and_rebuilt(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    blocks = sorted(r[0] for r in connect(out).execute("SELECT block_id || locator_json FROM evidence_block"))

    _set_schema(out, "999")
    status, body = _search(out, "retention period")
    assert status == 503 and body["error"]["code"] == "index_incompatible"
    assert "schema version 999 (newer)" in body["error"]["message"]

    _set_schema(out, "0", drop_column=True)
    status, body = _search(out, "retention period")
    assert status == 503 and "schema version 0 (older)" in body["error"]["message"]
    assert (
        "mnote-evidence build" in body["error"]["message"] and str(tmp_path) not in body["error"]["message"]
    )

    port = free_port()  # the real server: starts, warns, answers the endpoints with the same JSON error
    base = f"http://127.0.0.1:{port}"
    proc = start(
        [sys.executable, "-m", "mnote_evidence", "serve", str(out), "--port", str(port)],
        base + "/-/versions.json",
    )
    try:
        r = httpx.get(base + "/-/evidence/search", params={"q": "retention period"}, timeout=30)
        assert r.status_code == 503 and r.json()["error"]["code"] == "index_incompatible"
        assert "rebuild" in r.json()["error"]["message"]
    finally:
        log = stop(proc)
    assert "warning: evidence.sqlite was written with schema version 0" in log and "Traceback" not in log

    report = run_build(workspace, out)
    assert report.redone["schema"] == {"from": "0", "to": SCHEMA_VERSION, "resources": len(_resources(out))}
    assert report.reused_sidecars > 0  # attachments come back from their sidecars
    assert _one(out, "SELECT value FROM build_meta WHERE key = 'schema_version'") == SCHEMA_VERSION
    assert (
        sorted(r[0] for r in connect(out).execute("SELECT block_id || locator_json FROM evidence_block"))
        == blocks
    )
    status, body = _search(out, "retention period")
    assert status == 200 and body["results"]
    assert json.loads(_one(out, "SELECT value FROM build_meta WHERE key = 'provider_versions'"))["pdf"]


def test_serve_watch_rebuilds_an_incompatible_index_at_start(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    _set_schema(out, "0")
    proc, base = start_serve(out, "--watch", str(workspace), "--jobs", "1")
    try:
        deadline = time.monotonic() + 120  # failure detection only
        status = None
        while time.monotonic() < deadline:
            r = httpx.get(base + "/-/evidence/search", params={"q": "retention period"}, timeout=30)
            status = r.status_code
            if status == 200:
                assert r.json()["results"]
                break
            assert r.json()["error"]["code"] == "index_incompatible"
            time.sleep(0.2)
        assert status == 200
    finally:
        log = stop(proc)
    assert "warning: evidence.sqlite was written with schema version 0" in log and "Traceback" not in log
    assert _one(out, "SELECT value FROM build_meta WHERE key = 'schema_version'") == SCHEMA_VERSION
