"""Sidecar layouts: `mnote` (the default) puts every sidecar under the hidden `.mnote/`, nothing beside the
notes; `beside` (MNote's `Note.ocr/` folders) gives the same blocks and answers; a switch moves them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from mnote_evidence.build.core.urls import page_url
from mnote_evidence.build.pipeline import DB_NAME
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context, search
from tests.conftest import SPEC_PDF, connect, run_build

QUERIES = ["线程作用域", "吡咯烷", "retention period audit", "吗啉"]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def user_files(root: Path) -> set[str]:
    return {p for p in files(root) if not p.startswith(".mnote/")}


def sidecar_dirs(root: Path) -> list[str]:
    return [
        os.path.relpath(os.path.join(d, n), root)
        for d, dirs, _ in os.walk(root)
        for n in dirs
        if n.endswith(".ocr")
    ]


def anchors(out: Path) -> dict[str, dict]:
    """Every block's locator minus where its source map is stored (the one thing a layout changes)."""
    conn = connect(out)
    try:
        return {
            b: {k: v for k, v in json.loads(loc).items() if k != "sourceMapPath"}
            for b, loc in conn.execute("SELECT block_id, locator_json FROM evidence_block")
        }
    finally:
        conn.close()


def answers(out: Path) -> dict[str, list[tuple[str, str]]]:
    ctx = Context(EvidenceDB(out / DB_NAME))
    return {
        q: [(r["evidenceId"], r["source"]["openAction"]["url"]) for r in search({"query": q}, ctx)["results"]]
        for q in QUERIES
    }


def resource_sidecars(out: Path) -> list[tuple[str, str | None, str]]:
    conn = connect(out)
    try:
        return [
            tuple(r)
            for r in conn.execute(
                "SELECT source_root_relative_path, artifact_path, source_map_path "
                "FROM evidence_resource WHERE status = 'ok' ORDER BY 1"
            )
        ]
    finally:
        conn.close()


def test_mnote_layout_adds_nothing_beside_notes_and_answers_the_same(workspace, tmp_path, built):
    _, default_out, _ = built
    before = user_files(workspace)
    out = tmp_path / "out"
    report = run_build(workspace, out, sidecars="mnote", site=True)
    assert report.status_counts["ok"] >= 14
    assert sidecar_dirs(workspace) == [] and user_files(workspace) == before
    rows = resource_sidecars(out)
    owned = [r for r in rows if r[1] is not None]
    assert len(owned) >= 4  # the two PDFs, the Word file, the screenshot: all have a text sidecar
    for _, text, source_map in rows:
        for rel in filter(None, (text, source_map)):
            assert rel.startswith(".mnote/sidecars/") and (workspace / rel).is_file(), rel
    # same blocks, ids and locators (but where the source map lives), same answers, same anchors in the site
    assert anchors(out) == anchors(default_out)
    assert answers(out) == answers(default_out)
    [pdf_hit] = [
        r
        for r in search({"query": "retention period audit"}, Context(EvidenceDB(out / DB_NAME)))["results"]
        if r["source"]["resourcePath"] == SPEC_PDF
    ]
    assert f'id="{pdf_hit["evidenceId"]}"' in (out / page_url(SPEC_PDF).replace("%20", " ")).read_text(
        "utf-8"
    )

    # a rebuild, with or without the option (serve --watch passes none), is a no-op that keeps the layout
    snapshot, db_mtime = files(workspace), (out / DB_NAME).stat().st_mtime_ns
    for extra in ({"sidecars": "mnote"}, {}):
        again = run_build(workspace, out, **extra)
        assert again.changed is False and again.parsed < len(again.errors) and again.reused_sidecars == 0
        assert files(workspace) == snapshot and (out / DB_NAME).stat().st_mtime_ns == db_mtime


def test_switching_layouts_moves_sidecars_without_parsing(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out, sidecars="beside")
    beside = {p: b for p, b in files(workspace).items() if ".ocr/" in p}
    owned = len([p for p in beside if p.endswith(".source-map.json")])
    assert owned >= 3 and sidecar_dirs(workspace)  # spec PDF, Word file, screenshot
    ids, places = anchors(out), resource_sidecars(out)

    moved = run_build(workspace, out, sidecars="mnote")
    assert moved.changed and moved.reused_sidecars == owned and moved.parsed < len(moved.errors)
    assert sidecar_dirs(workspace) == []  # the emptied Note.ocr/ folders are gone too
    assert anchors(out) == ids

    back = run_build(workspace, out, sidecars="beside")
    assert back.reused_sidecars == moved.reused_sidecars and back.parsed < len(back.errors)
    assert {p: b for p, b in files(workspace).items() if ".ocr/" in p} == beside  # byte-identical
    assert resource_sidecars(out) == places
    assert anchors(out) == ids


def test_deleted_index_rebuilds_from_mnote_sidecars(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out, sidecars="mnote")
    ids = anchors(out)
    (out / DB_NAME).unlink()
    report = run_build(workspace, out, sidecars="mnote")
    assert report.reused_sidecars >= 4  # PDFs, DOCX, image came from .mnote/ sidecars, not parsers
    assert anchors(out) == ids and sidecar_dirs(workspace) == []
