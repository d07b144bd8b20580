"""The whole build on the fixture workspace: statuses, contracts, search, incrementality."""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from pathlib import Path

from mnote_evidence.build.parse.providers import docx as docx_provider
from mnote_evidence.build.pipeline import DB_NAME
from mnote_evidence.functions.search.fts import search_blocks
from tests.conftest import CHEM_DOCX, SPEC_PDF, connect, run_build

EXPECTED_ERRORS = {
    "Inbox/Broken Files.assets/corrupt.pdf": "pdf_corrupt",
    "Inbox/Broken Files.assets/encrypted.pdf": "pdf_encrypted",
    "Inbox/Broken Files.assets/empty.pdf": "empty_file",
    "Inbox/Broken Files.assets/not-really.pdf": "not_a_pdf",
    "Inbox/Broken Files.assets/not-a-zip.docx": "docx_corrupt",
}


def snapshot(out: Path) -> dict:
    """Every block's id and locator, every section and edge: what must survive a rebuild."""
    conn = connect(out)
    try:
        return {
            "blocks": sorted(
                tuple(r) for r in conn.execute("SELECT block_id, locator_json FROM evidence_block")
            ),
            "sections": sorted(
                tuple(r)
                for r in conn.execute(
                    "SELECT section_id, resource_id, path_json, page_start, page_end FROM evidence_section"
                )
            ),
            "edges": sorted(
                tuple(r)
                for r in conn.execute(
                    "SELECT edge_id, from_id, to_id, edge_type, source_block_id FROM evidence_edge"
                )
            ),
        }
    finally:
        conn.close()


def sidecar_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and (".ocr/" in p.as_posix() or "/.mnote/" in p.as_posix())
    }


def test_fixture_build_records_every_bad_file_and_indexes_the_rest(built):
    root, out, report = built
    assert {e["path"]: e["code"] for e in report.errors} == EXPECTED_ERRORS
    assert all(e["message"] for e in report.errors)
    conn = connect(out)
    rows = {r["source_root_relative_path"]: r for r in conn.execute("SELECT * FROM evidence_resource")}
    assert rows["Unfiled/budget.csv"]["status"] == "unsupported"
    assert rows[SPEC_PDF]["status"] == "ok" and rows[SPEC_PDF]["page_count"] == 3
    assert rows[SPEC_PDF]["owner_document_path"] == "Projects/Evidence Kernel.md"
    assert rows["Unfiled/orphan-report.pdf"]["owner_document_path"] is None
    assert (
        rows["Unfiled/orphan-report.pdf"]["source_map_path"]
        == ".mnote/sidecars/Unfiled/orphan-report.pdf.source-map.json"
    )
    assert rows[CHEM_DOCX]["artifact_path"] == f".mnote/sidecars/{CHEM_DOCX}.parse.md"  # nothing beside notes
    assert json.loads(rows["Inbox/Legacy Note.md"]["warnings_json"])[0]["code"] == "non_utf8_text"
    assert sum(1 for r in rows.values() if r["kind"] == "markdown") >= 8
    assert {w["code"] for w in report.warnings} >= {"non_utf8_text", "link_outside_root"}


def test_every_sidecar_and_locator_validates(built, validate):
    root, out, _ = built
    maps = [p for p in root.rglob("*.source-map.json")]
    assert len(maps) >= 14
    for path in maps:
        validate("source_map.schema.json", json.loads(path.read_text("utf-8")))
    conn = connect(out)
    for (loc,) in conn.execute("SELECT locator_json FROM evidence_block"):
        validate("locator.schema.json", json.loads(loc))


def test_search_finds_cjk_substrings_short_terms_and_english(built):
    _, out, _ = built
    conn = connect(out)
    hits = search_blocks(conn, "线程作用域", 10)
    assert any(h.resource_path == SPEC_PDF and h.locator["page"] == 3 for h in hits)
    assert any(h.resource_path == "研究/Rust 并发.md" for h in hits)
    assert any("吗啉是一种" in h.text for h in search_blocks(conn, "吗啉", 10))
    [pdf_hit] = [h for h in search_blocks(conn, "retention period audit", 10) if h.resource_path == SPEC_PDF]
    assert pdf_hit.locator["precision"] == "bbox" and pdf_hit.locator["page"] == 2
    assert pdf_hit.locator["openAction"]["url"].startswith(
        "Projects/Evidence%20Kernel.assets/evidence-kernel-spec.pdf.html#b-"
    )


def test_short_term_ranks_its_own_paragraph_above_the_compound(built):
    _, out, _ = built
    hits = search_blocks(connect(out), "吡咯烷", 20)
    texts = [h.text for h in hits]
    own = next(i for i, t in enumerate(texts) if t.startswith("吡咯烷（pyrrolidine"))
    compound = next(i for i, t in enumerate(texts) if t.startswith("N-甲基吡咯烷酮（NMP）"))
    assert own < compound
    docx_hit = hits[own]
    assert docx_hit.locator["precision"] == "paragraph" and docx_hit.locator["paragraphIndex"] == 5
    assert docx_hit.locator["sectionPath"] == ["溶剂与杂环化合物笔记", "含氮杂环", "吡咯烷"]


def test_edges_have_source_blocks_and_link_notes(built):
    _, out, _ = built
    conn = connect(out)
    orphans = conn.execute(
        "SELECT count(*) FROM evidence_edge e LEFT JOIN evidence_block b "
        "ON b.block_id = e.source_block_id WHERE b.block_id IS NULL"
    ).fetchone()[0]
    assert orphans == 0
    types = dict(conn.execute("SELECT edge_type, count(*) FROM evidence_edge GROUP BY 1").fetchall())
    for kind in (
        "document_contains_resource",
        "markdown_links_to",
        "resource_contains_page",
        "page_contains_block",
        "section_contains_block",
    ):
        assert types.get(kind, 0) > 0, kind
    # README links to 化学笔记 by a relative path with a Chinese name
    row = conn.execute(
        "SELECT e.source_block_id, b.text FROM evidence_edge e JOIN evidence_block b ON b.block_id = "
        "e.source_block_id WHERE e.edge_type = 'markdown_links_to' AND e.from_id = (SELECT resource_id "
        "FROM evidence_resource WHERE source_root_relative_path = 'README.md') AND e.to_id = (SELECT "
        "resource_id FROM evidence_resource WHERE source_root_relative_path = '研究/化学笔记.md')"
    ).fetchone()
    assert row is not None and "化学笔记" in row["text"]


def test_rebuild_is_a_noop_and_sidecars_are_byte_identical(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    before = sidecar_files(workspace)
    db_mtime = (out / DB_NAME).stat().st_mtime_ns
    report = run_build(workspace, out)
    assert report.changed is False and report.parsed < len(report.errors)  # only bad files are retried
    assert (out / DB_NAME).stat().st_mtime_ns == db_mtime
    assert sidecar_files(workspace) == before
    # a brand-new output folder and fresh sidecars give the same bytes
    shutil.rmtree(out)
    for rel in before:
        (workspace / rel).unlink()
    run_build(workspace, tmp_path / "out2")
    assert sidecar_files(workspace) == before


def test_deleted_database_rebuilds_from_sidecars_with_identical_ids(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    before = snapshot(out)
    (out / DB_NAME).unlink()
    report = run_build(workspace, out)
    assert report.reused_sidecars >= 4  # PDFs, DOCX, image came from sidecars, not parsers
    assert snapshot(out) == before


def test_editing_one_paragraph_changes_only_that_block(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    before = snapshot(out)["blocks"]
    note = workspace / "Archive/Old Ideas.md"
    note.write_text(
        note.read_text("utf-8").replace("Text PDFs do not need OCR", "Text PDFs never need OCR"), "utf-8"
    )
    report = run_build(workspace, out)
    assert report.changed and report.parsed < 1 + len(report.errors)
    after = snapshot(out)["blocks"]
    gone = {b for b, _ in before} - {b for b, _ in after}
    new = {b for b, _ in after} - {b for b, _ in before}
    assert len(gone) == 1 and len(new) == 1
    conn = connect(out)
    assert (
        "never need OCR"
        in conn.execute("SELECT text FROM evidence_block WHERE block_id = ?", [new.pop()]).fetchone()[0]
    )


def test_deleted_source_goes_stale_then_is_removed(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    (workspace / SPEC_PDF).unlink()
    report = run_build(workspace, out)
    assert report.stale == 1
    conn = connect(out)
    status, blocks = conn.execute(
        "SELECT status, (SELECT count(*) FROM evidence_block b WHERE b.resource_id = r.resource_id) "
        "FROM evidence_resource r WHERE source_root_relative_path = ?",
        [SPEC_PDF],
    ).fetchone()
    assert status == "stale" and blocks > 0  # kept for one build, never searchable
    assert not any(h.resource_path == SPEC_PDF for h in search_blocks(conn, "retention period", 10))
    conn.close()
    report = run_build(workspace, out)
    assert report.removed == 1
    conn = connect(out)
    assert (
        conn.execute(
            "SELECT count(*) FROM evidence_resource WHERE source_root_relative_path = ?", [SPEC_PDF]
        ).fetchone()[0]
        == 0
    )
    assert not (workspace / f".mnote/sidecars/{SPEC_PDF}.source-map.json").exists()


def test_more_bad_input_is_recorded_and_loses_nothing(workspace, tmp_path, monkeypatch):
    monkeypatch.setattr(docx_provider, "MAX_UNCOMPRESSED", 8 * 2**20)  # a small bomb suffices
    with zipfile.ZipFile(workspace / "Inbox/bomb.docx", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("word/document.xml", b"<" + b"a" * (16 * 2**20) + b">")
    (workspace / "Inbox/huge.pdf").write_bytes(b"%PDF-1.7\n" + b"0" * (2 * 2**20))
    os.symlink("/etc/hostname", workspace / "Inbox/escape.md")
    (workspace / "Inbox/fake.png").write_bytes(b"not an image at all")
    out = tmp_path / "out"
    report = run_build(workspace, out, max_file_mb=1)
    codes = {e["path"]: e["code"] for e in report.errors}
    assert codes["Inbox/huge.pdf"] == "file_too_large"
    assert codes["Inbox/escape.md"] == "outside_root"
    assert codes["Inbox/fake.png"] == "image_corrupt"
    assert codes["Inbox/bomb.docx"] == "docx_zip_bomb"
    conn = connect(out)
    assert (
        conn.execute(
            "SELECT count(*) FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = ?",
            [SPEC_PDF],
        ).fetchone()[0]
        > 20
    )
    assert "hostname" not in json.dumps([dict(r) for r in conn.execute("SELECT * FROM evidence_block")])


def test_parallel_build_matches_serial(workspace, tmp_path):
    run_build(workspace, tmp_path / "serial", jobs=1)
    serial = snapshot(tmp_path / "serial")
    for rel in sidecar_files(workspace):
        (workspace / rel).unlink()
    run_build(workspace, tmp_path / "parallel", jobs=2)
    assert snapshot(tmp_path / "parallel") == serial


def test_moving_a_resource_to_another_owner_moves_its_sidecar(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out, sidecars="beside")  # where a sidecar's place depends on its owner
    old = workspace / "研究/化学笔记.ocr/溶剂与杂环.docx.source-map.json"
    assert old.exists()
    shutil.move(workspace / "研究/化学笔记.assets", workspace / "研究/moved")
    note = workspace / "研究/化学笔记.md"
    note.write_text(note.read_text("utf-8").replace("化学笔记.assets/", "moved/"), "utf-8")
    report = run_build(workspace, out)  # the workspace's layout, remembered
    assert report.errors == [] or all(e["path"].startswith("Inbox/") for e in report.errors)
    conn = connect(out)
    owner, status = conn.execute(
        "SELECT owner_document_path, status FROM evidence_resource WHERE "
        "source_root_relative_path = '研究/moved/溶剂与杂环.docx'"
    ).fetchone()
    assert (owner, status) == ("研究/化学笔记.md", "ok")
    assert (workspace / "研究/化学笔记.ocr/moved/溶剂与杂环.docx.source-map.json").exists()


def test_selective_filter_still_finds_matches_beyond_the_first_window(workspace, tmp_path, monkeypatch):
    """With the candidate window forced tiny, a filter that removes the top bm25 hits must widen, not drop."""
    import mnote_evidence.functions.search.fts as fts

    monkeypatch.setattr(fts, "MIN_CANDIDATES", 1)
    monkeypatch.setattr(fts, "CANDIDATES_PER_RESULT", 1)
    monkeypatch.setattr(fts, "MAX_WINDOW", 8)
    out = tmp_path / "out"
    run_build(workspace, out)
    hits = search_blocks(connect(out), "format", 3, kinds=["pdf"], path_prefix="Projects/")
    assert len(hits) == 3 and all(h.resource_path == SPEC_PDF for h in hits)
    everything = search_blocks(connect(out), "format", 50, path_prefix="Projects/")
    texts = [
        t
        for (t,) in connect(out).execute(
            "SELECT b.text FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path LIKE 'Projects/%'"
        )
    ]
    expected = sum(1 for t in texts if re.search(r"\bformat\b", t, re.IGNORECASE))
    assert expected > 40 and len(everything) == expected  # the no-LIMIT fallback ranked them all
