"""Knowledge functions against a real lightrag-server: ingest, citations, status, degradation."""

from __future__ import annotations

import json
import re
import sqlite3
from urllib.parse import unquote

import httpx
import pytest

from mnote_evidence.build.core.text import normalise
from mnote_evidence.build.knowledge.ingest import source_name
from mnote_evidence.build.knowledge.lightrag import LightRag, LightRagConfig
from mnote_evidence.functions.citations.mapper import CitationMapper
from mnote_evidence.functions.core.cleaning import clean_text, quote_window
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context, search
from mnote_evidence.functions.handlers.knowledge import ask, query, status
from tests.conftest import CHEM_DOCX, FACTS, SPEC_PDF, connect, run_build
from tests.knowledge.conftest import API_KEY, TWINS

EQUATION_CHUNK = (
    '# Mass Energy Equivalence\n\nEinstein\'s relation is written as\n<equation format="latex">E = mc^2'
    '</equation>\nwhere c is the speed of light.\n<drawing id="fig1" name="energy_curve.png" />\n'
    'The Lorentz factor <equation format="latex">\\gamma = \\frac{1}{\\sqrt{1 - v^2/c^2}}</equation> '
    'applies to moving bodies. <equation format="lat'
)


def test_ingest_registry_and_ocr_text(knowledge_site):
    _, out, report = knowledge_site
    assert report.knowledge["error"] is None and report.knowledge["inserted"] >= 14
    rows = {r["source_root_relative_path"]: r for r in connect(out).execute("SELECT * FROM knowledge_source")}
    assert (
        rows[FACTS["image"]["path"]]["ocr_text_exposed"] == 1
        and rows[FACTS["image"]["path"]]["status"] == "processed"
    )
    assert rows["A/notes.md"]["lightrag_file_path"] != rows["B/notes.md"]["lightrag_file_path"]
    assert all(r["status"] in ("processed", "duplicate", "skipped_no_text") for r in rows.values())
    assert "Inbox/Broken Files.assets/encrypted.pdf" not in rows  # errors are never sent


def anchor_ok(out, citation) -> None:
    """The citation's URL opens a page that has the anchor, on a block containing its evidence text."""
    url = citation["citationUrl"]
    page, _, fragment = url.partition("#")
    html = (out / unquote(page.split("?")[0])).read_text("utf-8")
    assert f'id="{fragment}"' in html, url
    block = (
        connect(out).execute("SELECT text FROM evidence_block WHERE block_id = ?", [fragment]).fetchone()[0]
    )
    core = citation["locatorEvidenceText"].strip("…")[:20]
    assert core in " ".join(block.split()), (core, block[:80])


@pytest.mark.parametrize(
    "question",
    ["retention period audit evidence", "吡咯烷", "线程作用域", "zebrafish retina", "provider matrix format"],
)
def test_every_citation_opens_its_anchor(knowledge_site, kctx, question):
    _, out, _ = knowledge_site
    result = query({"query": question, "mode": "naive", "topK": 8}, kctx)
    assert result["ok"] and result["citations"]
    for c in result["citations"]:
        if c["locatorPrecision"] != "file":
            anchor_ok(out, c)
        assert re.fullmatch(r"(IMG-)?[0-9a-z]{4}", c["citationId"])
        assert (
            c["citationMarkdown"].startswith(f"[\\[{c['citationId']}\\] ")
            and c["citationUrl"] in c["citationMarkdown"]
        )
    ids = [c["citationId"] for c in result["citations"]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    "question",
    ["吡咯烷", "线程作用域", "provider matrix format", "zebrafish retina", "retention period audit evidence"],
)
def test_real_responses_match_the_citation_schema(kctx, validate, question):
    result = query({"query": question, "mode": "naive", "topK": 8}, kctx)
    kinds = set()
    for c in result["citations"]:
        validate("citation.schema.json", c)
        kinds.add(c["resourceKind"])
        assert c["quoteVerified"] == (c["quoteSource"] == "sidecar")
    assert kinds


def test_docx_citation_is_paragraph_precision_on_its_own_paragraph(kctx):
    result = query({"query": "吡咯烷", "mode": "naive", "topK": 8}, kctx)
    [docx] = [c for c in result["citations"] if c["sourcePath"] == CHEM_DOCX]
    assert docx["locatorPrecision"] == "paragraph" and docx["locatorDegraded"] is True
    assert "page" not in docx and "bbox" not in docx
    assert docx["headingPath"] == ["溶剂与杂环化合物笔记", "含氮杂环", "吡咯烷"]
    assert docx["locatorEvidenceText"].startswith("吡咯烷（pyrrolidine")
    assert "¶5 (paragraph)" in docx["citationMarkdown"]


def test_pdf_citation_regions_are_exactly_the_blocks_in_the_chunk(knowledge_site, kctx, lightrag):
    _, out, _ = knowledge_site
    result = query({"query": "provider matrix format", "mode": "naive", "topK": 8}, kctx)
    pdf = [c for c in result["citations"] if c["sourcePath"] == SPEC_PDF][0]
    assert pdf["locatorPrecision"] == "bbox" and pdf["locatorDegraded"] is False and len(pdf["bbox"]) == 4
    with LightRag(LightRagConfig(lightrag.url)) as client:
        chunks = client.query_data("provider matrix format", "naive", 8)["chunks"]
    raw = next(c["content"] for c in chunks if c["chunk_id"] == pdf["diagnostics"]["chunkId"])
    chunk_norm = normalise(raw).lower()
    expected = [
        bid
        for bid, text in connect(out).execute(
            "SELECT b.block_id, b.text FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = ? ORDER BY b.ordinal",
            [SPEC_PDF],
        )
        if len(normalise(text)) >= 6 and normalise(text).lower()[:40] in chunk_norm
    ]
    assert [r["blockId"] for r in pdf["regions"]] == expected[:50]
    assert "format" in pdf["locatorEvidenceText"].lower()


def test_chunk_across_a_page_break_highlights_both_pages(knowledge_site):
    root, out, _ = knowledge_site
    conn = connect(out)
    rows = conn.execute(
        "SELECT text, page, char_range_json FROM evidence_block WHERE text LIKE 'format-2%' "
        "OR text LIKE 'format-3%' ORDER BY id"
    ).fetchall()
    assert {p for _, p, _ in rows} == {2, 3}  # the fixture's table crosses the break
    # a chunk is a window of the text we ingested (the sidecar): this one holds exactly those rows
    artifact = conn.execute(
        "SELECT artifact_path FROM evidence_resource WHERE source_root_relative_path = ?", [SPEC_PDF]
    ).fetchone()[0]
    ingested = (root / artifact).read_text("utf-8")
    start, end = json.loads(rows[0][2])[0], json.loads(rows[-1][2])[1]
    assert "<!-- page 3 -->" in ingested[start:end]
    chunk = {"file_path": source_name(SPEC_PDF), "chunk_id": "synthetic", "content": ingested[start:end]}
    c = CitationMapper(conn, "format-29", "").citation(chunk, 0)
    assert {r["page"] for r in c["regions"]} == {2, 3} and len(c["regions"]) == len(rows)
    assert c["locatorEvidenceText"].startswith("format-29") and c["page"] == 3
    ids = c["citationUrl"].split("?hl=")[1].split("#")[0].split(",")
    assert ids == [r["blockId"] for r in c["regions"]]


def test_image_citation_carries_ocr_text(kctx):
    result = query({"query": "线程作用域", "mode": "naive", "topK": 8}, kctx)
    [img] = [c for c in result["citations"] if c["sourcePath"] == FACTS["image"]["path"]]
    assert img["citationId"].startswith("IMG-") and img["quoteSource"] == "sidecar" and img["quoteVerified"]
    assert "线程作用域" in img["displayQuote"] and img["locatorEvidenceText"] == "线程作用域"
    assert (
        img["diagnostics"]["ocrTextExposed"] is True
        and img["diagnostics"]["quoteOnlyImagePlaceholder"] is False
    )
    assert img["locatorPrecision"] == "bbox" and img["page"] == 1


def test_same_file_name_in_two_folders_maps_to_each(kctx):
    for rel, word in (("A/notes.md", "zebrafish"), ("B/notes.md", "axolotl")):
        result = query({"query": f"{word} regrows regenerates", "mode": "naive", "topK": 5}, kctx)
        paths = {c["sourcePath"] for c in result["citations"] if word in c["displayQuote"]}
        assert paths == {rel}


def test_cleaning_keeps_terms_and_drops_markup():
    cleaned = clean_text(EQUATION_CHUNK)
    assert "<" not in cleaned and "drawing" not in cleaned and "format=" not in cleaned
    assert "E = mc^2" in cleaned and "γ = 1/√(1 - v^2/c^2)" in cleaned
    window = quote_window(cleaned, ["Lorentz", "factor"], 80)
    assert "Lorentz factor" in window


def test_markdown_syntax_becomes_text():
    raw = (
        "# Evidence Kernel\n\nThe **spec** is attached: [spec](Evidence%20Kernel.assets/spec.pdf).\n"
        "## Related\n\nSee [[Kickoff]] and [[README|workspace home]]. ![线程作用域截图](a.png)"
    )
    assert clean_text(raw) == (
        "Evidence Kernel The spec is attached: spec. Related See Kickoff and workspace home. 线程作用域截图"
    )


def test_unmapped_and_placeholder_chunks_go_to_diagnostics(knowledge_site):
    _, out, _ = knowledge_site
    mapper = CitationMapper(connect(out), "线程作用域", "")
    image_name = source_name(FACTS["image"]["path"])
    assert mapper.citation({"file_path": "someone-else.md", "content": "x", "chunk_id": "c1"}, 0) is None
    assert mapper.diagnostics["unmapped"][0]["reason"] == "not_in_registry"
    placeholder = mapper.citation(
        {"file_path": image_name, "content": "# thread-scope.png\n\n![](thread-scope.png)", "chunk_id": "c2"},
        1,
    )
    assert placeholder["quoteSource"] == "placeholder"
    assert placeholder["diagnostics"]["quoteOnlyImagePlaceholder"] is True
    assert placeholder["diagnostics"]["ocrTextExposed"] is False


def test_status_reports_health(kctx):
    s = status({}, kctx)
    assert s["healthy"] is True and s["embeddingModel"] == "standin-embed"
    assert s["rerankEnabled"] is False and s["rerankAvailable"] is False


def test_ask_badges_only_our_citations(kctx):
    result = ask({"query": "retention period audit evidence", "mode": "naive"}, kctx)
    ids = {c["citationId"] for c in result["citations"]}
    badges = [s["citationId"] for s in result["segments"] if "citationId" in s]
    assert badges and set(badges) <= ids
    assert "[9]" in result["diagnostics"]["droppedMarkers"]
    assert "[9]" not in "".join(s.get("text", "") for s in result["segments"])


def test_include_ocr_adds_knowledge_hits_when_local_are_few(kctx):
    local = search({"query": "线程作用域", "topK": 20}, kctx)
    mixed = search({"query": "线程作用域", "topK": 20, "includeOcr": True}, kctx)
    assert mixed["boundary"] == {"kind": "ordinary_local_search_with_knowledge_ocr"}
    assert local["boundary"] == {"kind": "ordinary_local_search"}
    assert len(mixed["results"]) >= len(local["results"]) and not mixed["degraded"]
    assert all(r["matchSource"] in ("fts", "knowledge_ocr") for r in mixed["results"])


def test_editing_a_file_replaces_its_document(knowledge_site, lightrag, tmp_path):
    root, out, _ = knowledge_site
    note = root / "A/notes.md"
    note.write_text(
        TWINS["A/notes.md"] + "\nIt also regrows heart tissue: cardiomyocyte proliferation.\n", "utf-8"
    )
    report = run_build(root, out, site=True, lightrag=LightRagConfig(lightrag.url))
    assert report.knowledge["deleted"] == 1 and report.knowledge["inserted"] == 1
    docs = httpx.post(
        lightrag.url + "/documents/paginated",
        json={"page": 1, "page_size": 200},
        headers={"X-API-Key": API_KEY},
        timeout=20,
    ).json()
    names = [d.get("file_path") for d in docs.get("documents", [])]
    assert names.count(source_name("A/notes.md")) == 1  # never two documents for one file
    ctx = Context(EvidenceDB(out / "evidence.sqlite"), "", LightRagConfig(lightrag.url))
    result = query({"query": "cardiomyocyte proliferation", "mode": "naive", "topK": 5}, ctx)
    assert any(
        "cardiomyocyte" in c["displayQuote"] and c["sourcePath"] == "A/notes.md" for c in result["citations"]
    )


def test_api_key_appears_nowhere(knowledge_site, kctx, capfd):
    root, out, report = knowledge_site
    responses = [
        query({"query": "吡咯烷", "mode": "naive"}, kctx),
        status({}, kctx),
        ask({"query": "吡咯烷"}, kctx),
    ]
    blobs = [json.dumps(r, ensure_ascii=False) for r in responses] + [json.dumps(report.to_json())]
    for path in list(root.rglob("*")) + list(out.rglob("*")):
        if path.is_file():
            blobs.append(path.read_bytes().decode("utf-8", "replace"))
    conn = sqlite3.connect(out / "evidence.sqlite")
    for table in ("evidence_resource", "knowledge_source", "build_meta", "evidence_block"):
        blobs.append(json.dumps(conn.execute(f"SELECT * FROM {table}").fetchall(), ensure_ascii=False))
    captured = capfd.readouterr()
    blobs += [captured.out, captured.err]
    assert not [b for b in blobs if API_KEY in b]
