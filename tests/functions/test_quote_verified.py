"""`quoteVerified` on evidence.search results over real documents, and the downgrade of a deliberately
wrong PDF box: the real PDF provider is given a wrong box for two blocks of a real
manual, its parse-time check catches it, and search, open and verify_quote never answer that box at
`bbox` precision; they say why."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3

import pytest

from mnote_evidence.build.index.knowledge_text import ingest_text, pack_text
from mnote_evidence.build.knowledge.ingest import source_name
from mnote_evidence.build.parse.providers import pdf as provider
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.sidecars import write_sidecars
from mnote_evidence.functions.citations.mapper import CitationMapper
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.evidence import open_, search
from mnote_evidence.functions.handlers.verify import verify_quote
from tests.conftest import SHARED_OCR, run_build
from tests.functions.conftest import REAL

MIME_SPEC = "manuals/shared-mime-info-spec.pdf"


def words(text: str, n: int = 6) -> str:
    w = text.split()
    return " ".join(w[len(w) // 2 - n // 2 : len(w) // 2 - n // 2 + n])


@pytest.mark.parametrize(
    "kind, query, precision",
    [
        ("pdf", "shared MIME-info database", "bbox"),
        ("pdf", "ASN.1 structures DER encoding", "bbox"),
        ("office", "hyperlink", "paragraph"),
        ("image", "interpreted as described in RFC", "bbox"),  # OCR lines of the scanned page
    ],
)
def test_search_results_on_real_documents_are_verified_at_full_precision(
    real_index, validate, kind, query, precision
):
    ctx = Context(EvidenceDB(real_index / "evidence.sqlite"))
    out = search({"query": query, "resourceKinds": [kind], "topK": 10}, ctx)
    validate("search_response.schema.json", out)
    assert out["results"], query
    for r in out["results"]:
        assert r["quoteVerified"] is True and "diagnostics" not in r, r
        assert r["source"]["precision"] == precision


@pytest.fixture(scope="module")
def wrong_box(tmp_path_factory):
    """(out, the two blocks given each other's box): a real build whose PDF parse got two wrong boxes."""
    base = tmp_path_factory.mktemp("wrongbox")
    root = base / "ws"
    (root / "manuals").mkdir(parents=True)
    shutil.copy(REAL / MIME_SPEC, root / MIME_SPEC)
    run_build(root, base / "out")
    sidecar = json.loads((root / ".mnote/sidecars" / (MIME_SPEC + ".source-map.json")).read_text("utf-8"))
    swapped: list[str] = []
    real_raw_blocks = provider._raw_blocks

    def raw_blocks_with_wrong_boxes(page, number, entries, sizes):
        raw = real_raw_blocks(page, number, entries, sizes)
        long = [b for b in raw if number == 2 and len(b.text.split()) >= 12]
        if len(long) >= 2:  # the fault: two paragraphs of page 2 get each other's box
            long[0].bbox, long[1].bbox = long[1].bbox, long[0].bbox
            swapped.extend([long[0].text, long[1].text])
        return raw

    mp = pytest.MonkeyPatch()
    mp.setattr(provider, "_raw_blocks", raw_blocks_with_wrong_boxes)
    try:  # the real provider, in this process, on the real file; its sidecar is what the next build reuses
        artifact = provider.PdfProvider(SHARED_OCR).parse(ParseInput(root, MIME_SPEC, sidecar["sourceHash"]))
    finally:
        mp.undo()
    write_sidecars(root, artifact, None)
    (base / "out" / "evidence.sqlite").unlink()  # the index is rebuilt from the sidecars, without re-parsing
    run_build(root, base / "out", site=True)
    assert len(swapped) == 2
    return base / "out", [b for b in artifact.blocks if b.text in swapped], artifact


def test_the_parse_catches_the_wrong_boxes_and_the_index_records_it(wrong_box):
    out, blocks, _ = wrong_box
    assert [b.box_holds_text for b in blocks] == [False, False]
    conn = sqlite3.connect(out / "evidence.sqlite")
    rows = conn.execute(
        "SELECT box_holds_text, locator_json, bbox_json FROM evidence_block WHERE block_id IN (?, ?)",
        [b.id for b in blocks],
    ).fetchall()
    assert [r[0] for r in rows] == [0, 0]
    for _, loc, bbox in rows:
        loc = json.loads(loc)
        assert (
            loc["precision"] == "page" and "bbox" not in loc and loc["page"] == 2 and bbox
        )  # the box is kept aside
    others = conn.execute(
        "SELECT count(*), sum(box_holds_text) FROM evidence_block WHERE block_id NOT IN (?, ?)",
        [b.id for b in blocks],
    ).fetchone()
    assert others[0] > 100 and others[0] == others[1]  # every other block's box holds its words


def test_search_downgrades_the_wrong_box_and_says_why(wrong_box, validate):
    out, blocks, _ = wrong_box
    ctx = Context(EvidenceDB(out / "evidence.sqlite"))
    for b in blocks:
        res = search({"query": words(b.text), "topK": 5}, ctx)
        validate("search_response.schema.json", res)
        hit = next(r for r in res["results"] if r["evidenceId"] == b.id)
        assert hit["quoteVerified"] is False and hit["diagnostics"] == {"quoteCheck": "box_text_mismatch"}
        assert (
            hit["source"]["precision"] == "page"
            and "bbox" not in hit["source"]
            and hit["source"]["page"] == 2
        )
        opened = open_({"blockId": b.id}, ctx)
        assert opened["precision"] == "page" and "bbox" not in opened


def test_verify_quote_finds_the_words_but_not_at_the_box(wrong_box, validate):
    out, blocks, _ = wrong_box
    ctx = Context(EvidenceDB(out / "evidence.sqlite"))
    status, res = call(
        lambda r: verify_quote(r, ctx), {"quote": words(blocks[0].text), "blockId": blocks[0].id}
    )
    validate("verify_quote_response.schema.json", res)
    assert status == 200 and res["verdict"] == "found"
    match = res["match"]
    assert match["quoteVerified"] is False and match["reason"] == "box_text_mismatch"
    assert match["precision"] == "page" and "bbox" not in match["source"]


def test_a_citation_of_the_wrong_box_is_at_page_precision_and_never_highlights_it(
    wrong_box, validate, tmp_path
):
    """The real mapper on the real index, given the chunk LightRAG would return for the passage (the
    ingested text is registered as an ingest would: knowledge_source + knowledge_text)."""
    out, blocks, artifact = wrong_box
    db = tmp_path / "evidence.sqlite"
    shutil.copy(out / "evidence.sqlite", db)
    conn = sqlite3.connect(db)
    text = ingest_text(artifact.text, artifact.blocks)
    conn.execute(
        "INSERT INTO knowledge_source (source_root_relative_path, lightrag_doc_id, lightrag_file_path, "
        "status) VALUES (?, 'doc-1', ?, 'processed')",
        [MIME_SPEC, source_name(MIME_SPEC)],
    )
    conn.execute("INSERT INTO knowledge_text VALUES (?, ?, ?)", [MIME_SPEC, *pack_text(text)])
    conn.commit()
    first = min(blocks, key=lambda b: b.char_range[0])
    a, z = first.char_range
    chunk = {
        "file_path": source_name(MIME_SPEC),
        "chunk_id": "c-chunk-001",
        "content": text[max(0, a - 300) : z + 300],
    }
    citation = CitationMapper(conn, words(first.text, 4), "").citation(chunk, 0)
    validate("citation.schema.json", citation)
    wrong = {b.id for b in blocks}
    # the query's words are the wrong-box block's: the mapper cites it, at page precision, and says why
    assert citation["diagnostics"]["blockMatch"] == "term", citation
    assert citation["quoteVerified"] is False and citation["diagnostics"]["quoteCheck"] == "box_text_mismatch"
    assert citation["locatorPrecision"] == "page" and "bbox" not in citation and citation["page"] == 2
    assert citation["citationUrl"].endswith("#page-2") and "regions" not in citation
    assert (
        citation["source"]["precision"] == "page" and "bbox" not in citation["source"]
    )  # what search returns too
    assert first.text[:20] in citation["displayQuote"] or words(first.text, 4) in citation["displayQuote"]
    # a chunk around a neighbour: the wrong boxes are never among its highlighted regions
    other = next(b for b in artifact.blocks if b.page == 2 and b.id not in wrong and len(b.text.split()) > 8)
    a, z = other.char_range
    near = {
        "file_path": source_name(MIME_SPEC),
        "chunk_id": "c-chunk-002",
        "content": text[max(0, a - 1200) : z + 1200],
    }
    cited = CitationMapper(conn, words(other.text, 4), "").citation(near, 0)
    validate("citation.schema.json", cited)
    assert cited["quoteVerified"] is True and len(cited.get("regions", [])) >= 2
    assert not wrong & {r["blockId"] for r in cited["regions"]}


def test_the_site_anchors_a_wrong_box_on_its_whole_page(wrong_box):
    out, blocks, _ = wrong_box
    html = (out / (MIME_SPEC + ".html")).read_text("utf-8")
    for b in blocks:
        tag = re.search(rf'<a class="overlay block[^"]*" id="{b.id}"[^>]*>', html).group(0)
        assert "unverified" in tag and "left:0%;top:0%;width:100%;height:100%" in tag, tag
        assert ",".join(f"{v:g}" for v in b.bbox) not in tag
    ok = re.findall(r'<a class="overlay block[^"]*" id="b-[^"]*"[^>]*>', html)
    assert len(ok) > 100 and sum("unverified" in t for t in ok) == 2  # every other box is where its words are
