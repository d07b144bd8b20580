"""Page furniture on real PDFs (SPEC §6): running headers, footers and page numbers
get role `furniture`; they stay anchored and readable, but leave default search and LightRAG's text.

Real Debian documentation PDFs from tests/real_documents/manuals/ (see its README), parsed by the real
PyMuPDF provider; search through a real build and the pure `evidence.search` / `evidence.read` handlers.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mnote_evidence.build.core.model import ROLE_FURNITURE, Block
from mnote_evidence.build.core.urls import page_url
from mnote_evidence.build.index.knowledge_text import ingest_text
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.furniture import PageBlock, furniture_flags
from mnote_evidence.build.parse.providers.pdf import PdfProvider
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.evidence import Context, read, search
from tests.conftest import REPO, connect, run_build

MANUALS = REPO / "tests" / "real_documents" / "manuals"
HEADER = "Shared MIME-info Database"
TEXINFO_HEADER = re.compile(r"^(?:(?:Chapter \d+|Appendix [A-Z]): .+ )?(?:\d+|[ivx]+)$")


def parse(name: str):
    return PdfProvider(OcrSettings(engine="none")).parse(ParseInput(MANUALS, name, "sha256:" + "0" * 64))


def test_the_mime_spec_header_and_page_numbers_are_furniture_and_its_title_is_not():
    art = parse("shared-mime-info-spec.pdf")
    furniture = [b for b in art.blocks if b.role == ROLE_FURNITURE]
    headers = [b for b in furniture if b.text == HEADER]
    numbers = [b for b in furniture if b.text.isdigit()]
    assert len(headers) == len(art.pages) - 1 and {b.page for b in headers} == set(
        range(2, len(art.pages) + 1)
    )
    assert sorted(int(b.text) for b in numbers) == list(range(1, len(art.pages) + 1))
    assert len(furniture) == len(headers) + len(numbers)  # nothing else
    title = [b for b in art.blocks if b.page == 1 and b.text == HEADER]
    assert title and all(b.role == "body" for b in title)  # the document title, set lower on page 1
    height = art.pages[0].height
    assert all(b.bbox[3] <= 0.12 * height or b.bbox[1] >= 0.88 * height for b in furniture)
    assert not [b for b in furniture if b.type == "heading"]


@pytest.mark.parametrize("name", ["libtasn1.pdf", "R-FAQ.pdf"])
def test_texinfo_running_headers_are_furniture_and_nothing_else_is(name):
    art = parse(name)
    furniture = [b for b in art.blocks if b.role == ROLE_FURNITURE]
    assert len(furniture) >= len(art.pages) * 0.8
    wrong = [b.text for b in furniture if not TEXINFO_HEADER.match(b.text)]
    assert not wrong, wrong
    # every running header line left at the top of a page (y < 60 pt) is caught
    missed = [
        (b.page, b.text)
        for b in art.blocks
        if b.role == "body" and b.bbox[1] < 60 and TEXINFO_HEADER.match(b.text)
    ]
    assert not missed, missed


def test_source_map_round_trip_keeps_the_role(validate):
    block = Block(
        "b-aaaaaaaaaaaa",
        "paragraph",
        "Shared MIME-info Database",
        page=2,
        bbox=[1, 2, 3, 4],
        char_range=[0, 25],
        role=ROLE_FURNITURE,
    )
    data = block.to_json()
    assert data["role"] == ROLE_FURNITURE and Block.from_json(data, page=2).role == ROLE_FURNITURE
    assert "role" not in Block("b-aaaaaaaaaaaa", "paragraph", "x").to_json()  # body is the default
    validate(
        "source_map.schema.json",
        {
            "schema": "mnote.resource_source_map.v1",
            "provider": "pymupdf",
            "providerVersion": "x",
            "resourceKind": "pdf",
            "ownerDocumentPath": None,
            "sourceRootRelativePath": "a.pdf",
            "sourceHash": "sha256:" + "0" * 64,
            "fromOcr": False,
            "sections": [],
            "warnings": [],
            "pageCount": 1,
            "pages": [{"page": 2, "width": 10, "height": 10, "blocks": [data]}],
        },
    )


def _page(n: int, last: str, header: str | None = None) -> list[PageBlock]:
    out = [
        PageBlock(n, [72, 90, 540, 700], "body text of the page " + "ab" * n),
        PageBlock(n, [72, 735, 200, 745], last),
    ]
    if header:
        out.insert(0, PageBlock(n, [72, 50, 300, 60], header))
    return out


def test_a_short_body_line_repeated_at_the_last_baseline_is_not_furniture():
    """gnuplot.pdf: "Syntax:" ends 9 of 311 pages at the body's last baseline; the other pages end with
    other text."""
    blocks: list[PageBlock] = []
    for n in range(1, 41):
        blocks += _page(
            n, "Syntax:" if n % 8 == 0 else "a different closing line " + "xy" * n, header=f"gnuplot 5.4 {n}"
        )
    flags = furniture_flags(blocks, {n: 792.0 for n in range(1, 41)})
    marked = {blocks[i].text for i, f in enumerate(flags) if f}
    assert all(t.startswith("gnuplot 5.4") for t in marked) and len(marked) == 40


def test_two_pages_are_too_few_to_call_anything_furniture():
    blocks = _page(1, "1", header="Report") + _page(2, "2", header="Report")
    assert furniture_flags(blocks, {1: 792.0, 2: 792.0}) == [False] * len(blocks)


def test_ingested_text_blanks_furniture_and_keeps_every_offset():
    art = parse("shared-mime-info-spec.pdf")
    sent = ingest_text(art.text, art.blocks)
    assert len(sent) == len(art.text)
    for b in art.blocks:
        a, z = b.char_range
        assert sent[a:z] == (" " * (z - a) if b.role == ROLE_FURNITURE else b.text)
    assert sent.count(HEADER) == art.text.count(HEADER) - (len(art.pages) - 1)


@pytest.fixture(scope="module")
def spec_index(tmp_path_factory):
    base = tmp_path_factory.mktemp("furniture")
    root = base / "ws"
    (root / "manuals").mkdir(parents=True)
    shutil.copy(MANUALS / "shared-mime-info-spec.pdf", root / "manuals")
    run_build(root, base / "out", site=True)
    return base / "out"


def test_search_leaves_furniture_out_unless_asked(spec_index: Path, validate):
    ctx = Context(EvidenceDB(spec_index / "evidence.sqlite"), "")
    status, body = call(lambda r: search(r, ctx), {"query": HEADER, "topK": 10})
    assert status == 200 and body["results"], body
    validate("search_response.schema.json", body)
    conn = connect(spec_index)
    roles = {r[0]: r[1] for r in conn.execute("SELECT block_id, role FROM evidence_block")}
    assert {roles[r["evidenceId"]] for r in body["results"]} == {"body"}
    assert all("role" not in r for r in body["results"])
    status, body = call(lambda r: search(r, ctx), {"query": HEADER, "topK": 10, "includeFurniture": True})
    assert status == 200
    validate("search_response.schema.json", body)
    furniture = [r for r in body["results"] if roles[r["evidenceId"]] == ROLE_FURNITURE]
    assert furniture and all(
        r["role"] == ROLE_FURNITURE and r["source"]["precision"] == "bbox" for r in furniture
    )
    status, bad = call(lambda r: search(r, ctx), {"query": "MIME", "includeFurniture": "yes"})
    assert status == 400 and "includeFurniture" in bad["error"]["message"]
    # still anchored and readable
    status, got = call(lambda r: read(r, ctx), {"blockId": furniture[0]["evidenceId"]})
    assert status == 200 and got["anchor"]["text"] == HEADER and got["anchor"]["source"]["bbox"]
    stored = json.loads(
        conn.execute(
            "SELECT locator_json FROM evidence_block WHERE block_id = ?", [furniture[0]["evidenceId"]]
        ).fetchone()[0]
    )
    assert stored["page"] >= 2


def test_a_page_number_moved_to_the_footer_on_one_page_is_furniture():
    """gnuplot.pdf p.304 (its index's first page) prints "304" at the bottom, every other page at the top."""
    blocks: list[PageBlock] = []
    for n in range(1, 13):
        header = None if n == 7 else f"{n + 2}"  # printed numbers run two ahead of the physical pages
        blocks += _page(n, f"{n + 2}" if n == 7 else "closing line " + "ab" * n, header=header)
    blocks += [PageBlock(12, [72, 760, 90, 770], "99")]  # a bare number that is not this page's
    flags = furniture_flags(blocks, {n: 792.0 for n in range(1, 13)})
    marked = [(blocks[i].page, blocks[i].text) for i, f in enumerate(flags) if f]
    assert (7, "9") in marked and len(marked) == 12 and (12, "99") not in marked


def test_the_page_overlay_marks_furniture_boxes(spec_index: Path):
    html = (spec_index / page_url("manuals/shared-mime-info-spec.pdf")).read_text("utf-8")
    rows = connect(spec_index).execute("SELECT block_id, role FROM evidence_block").fetchall()
    for block_id, role in rows:
        marked = f'class="overlay block furniture" id="{block_id}"' in html
        assert marked == (role == ROLE_FURNITURE) and f'id="{block_id}"' in html


def test_the_search_cli_leaves_furniture_out_unless_asked(spec_index: Path):
    from click.testing import CliRunner

    from mnote_evidence.build.cli.main import main

    runner = CliRunner()
    got = {}
    for flag in ([], ["--include-furniture"]):
        result = runner.invoke(main, ["search", HEADER, "--site", str(spec_index), "--json", *flag])
        assert result.exit_code == 0, result.output
        got[bool(flag)] = [r.get("role", "body") for r in json.loads(result.output)["results"]]
    assert got[False] and set(got[False]) == {"body"} and ROLE_FURNITURE in got[True]
