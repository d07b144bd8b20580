"""The pure handlers, called directly (request dict in, response dict out)."""

from __future__ import annotations

import pytest

from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.evidence import Context, open_, read, search
from tests.conftest import SPEC_PDF
from tests.functions.conftest import STALE_PDF


@pytest.fixture(scope="module")
def ctx(stale_site):
    _, out = stale_site
    return Context(EvidenceDB(out / "evidence.sqlite"), "/site/")


def run(handler, ctx, request):
    return call(lambda r: handler(r, ctx), request)


def test_search_returns_quote_score_and_full_locator(ctx, validate):
    status, body = run(search, ctx, {"query": "retention period seven years", "topK": 3})
    assert status == 200 and body["ok"] and body["boundary"] == {"kind": "ordinary_local_search"}
    top = body["results"][0]
    assert top["source"]["resourcePath"] == SPEC_PDF and top["source"]["page"] == 2
    assert "seven years" in top["quote"] and top["score"] > 0
    assert top["source"]["openAction"]["url"].startswith("/site/Projects/Evidence%20Kernel.assets/")
    validate(
        "locator.schema.json",
        {
            **top["source"],
            "openAction": {
                **top["source"]["openAction"],
                "url": top["source"]["openAction"]["url"].removeprefix("/site/"),
            },
        },
    )


def test_filters_and_stale_exclusion(ctx):
    _, body = run(search, ctx, {"query": "吡咯烷", "resourceKinds": ["office"]})
    assert body["results"] and {r["source"]["resourceKind"] for r in body["results"]} == {"office"}
    _, body = run(search, ctx, {"query": "thread", "pathPrefix": "研究/"})
    assert body["results"] and all(r["source"]["resourcePath"].startswith("研究/") for r in body["results"])
    _, body = run(search, ctx, {"query": "Total capacity grew archive tier"})
    assert all(r["source"]["resourcePath"] != STALE_PDF for r in body["results"])


def test_graph_mode_follows_links_to_the_citing_note(ctx):
    _, body = run(search, ctx, {"query": "retention period seven years", "mode": "graph"})
    notes = [r for r in body["results"] if r["source"]["resourcePath"] == "Projects/Evidence Kernel.md"]
    assert notes and notes[0]["via"]["edgeType"] == "document_contains_resource"
    assert notes[0]["source"]["lineRange"] and notes[0]["matchSource"] == "graph"
    _, hybrid = run(search, ctx, {"query": "retention period seven years", "mode": "hybrid"})
    sources = {r["matchSource"] for r in hybrid["results"]}
    assert sources == {"fts", "graph"}


def test_read_gives_neighbours_section_and_owner_lines(ctx):
    _, hits = run(search, ctx, {"query": "吡咯烷 pyrrolidine", "resourceKinds": ["office"], "topK": 1})
    block = hits["results"][0]["evidenceId"]
    status, body = run(read, ctx, {"blockId": block, "window": 3})
    assert status == 200 and body["anchor"]["evidenceId"] == block
    assert body["neighbourScope"] == "section"
    assert body["section"]["path"] == ["溶剂与杂环化合物笔记", "含氮杂环", "吡咯烷"]
    assert [n["kind"] for n in body["neighbours"]] == ["heading"]  # same section only
    owner = [r for r in body["ownerReferences"] if r["source"]["resourcePath"] == "研究/化学笔记.md"]
    assert owner and "溶剂与杂环" in owner[0]["text"]
    _, pdf = run(search, ctx, {"query": "retention period seven years", "topK": 1})
    _, body = run(read, ctx, {"locator": pdf["results"][0]["source"], "window": 2})
    assert body["neighbourScope"] == "page"
    assert {n["source"]["page"] for n in body["neighbours"]} == {2} and len(body["neighbours"]) == 4


def test_open_normalises_block_and_box(ctx):
    _, hits = run(search, ctx, {"query": "吗啉", "resourceKinds": ["office"], "topK": 1})
    status, body = run(open_, ctx, {"blockId": hits["results"][0]["evidenceId"]})
    assert status == 200 and body["precision"] == "paragraph" and "page" not in body
    assert body["openAction"]["url"].endswith("#" + body["blockId"])
    status, body = run(
        open_, ctx, {"locator": {"resourcePath": SPEC_PDF, "page": 2, "bbox": [72, 100, 300, 120]}}
    )
    assert status == 200 and body["openAction"]["url"].endswith("?page=2&bbox=72,100,300,120")


@pytest.mark.parametrize(
    "handler, request_, status, fragment",
    [
        (search, {}, 400, "'query' is required"),
        (search, {"query": "  "}, 400, "must not be empty"),
        (search, {"query": "x", "topK": 500}, 400, "from 1 to 50"),
        (search, {"query": "x", "topK": "3"}, 400, "integer"),
        (search, {"query": "x", "mode": "magic"}, 400, "one of fts, graph, hybrid"),
        (search, {"query": "x", "resourceKinds": ["spreadsheet"]}, 400, "unknown resourceKinds"),
        (search, {"query": "x", "topk": 3}, 400, "unknown field(s) topk"),
        (search, {"query": "***"}, 400, "nothing to search for"),
        (search, {"query": "a\x00b"}, 400, "NUL"),
        (read, {}, 400, "give 'blockId'"),
        (read, {"blockId": "b-doesnotexist"}, 404, "no block"),
        (open_, {"locator": {"resourcePath": "../../etc/passwd", "page": 1}}, 404, "no resource"),
        (open_, {"locator": {"resourcePath": SPEC_PDF, "page": 99}}, 400, "'page' must be from 1 to 3"),
    ],
)
def test_bad_requests_get_clear_4xx(ctx, handler, request_, status, fragment):
    got, body = run(handler, ctx, request_)
    assert got == status and body["ok"] is False and fragment in body["error"]["message"]


def test_reading_a_stale_block_is_gone(ctx, stale_site):
    import sqlite3

    _, out = stale_site
    (block,) = (
        sqlite3.connect(out / "evidence.sqlite")
        .execute(
            "SELECT b.block_id FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.status = 'stale' LIMIT 1"
        )
        .fetchone()
    )
    status, body = run(read, ctx, {"blockId": block})
    assert status == 410 and STALE_PDF in body["error"]["message"]
