"""`verify_quote` on real documents (tests/real_documents: Debian manual PDFs, python-docx's .docx files,
a scanned page read by OCR), built by the real pipeline: quotes that are there, quotes that are not,
quotes found elsewhere, every citation URL form, and bad requests answered 4xx."""

from __future__ import annotations

import json
import sqlite3

import pytest

from mnote_evidence.build.core.quote_match import match_form
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.verify import verify_quote

MIME_SPEC = "manuals/shared-mime-info-spec.pdf"


@pytest.fixture(scope="module")
def ctx(real_index):  # real_index: tests/functions/conftest.py
    return Context(EvidenceDB(real_index / "evidence.sqlite"), "https://example.org/docs/")


@pytest.fixture(scope="module")
def conn(real_index):
    c = sqlite3.connect(f"file:{real_index / 'evidence.sqlite'}?mode=ro", uri=True)
    c.row_factory = sqlite3.Row
    return c


def ask(ctx, **request) -> tuple[int, dict]:
    return call(lambda r: verify_quote(r, ctx), request)


def block(conn, kind: str, min_words: int = 12, path: str | None = None, offset: int = 0) -> sqlite3.Row:
    """A body block of that resource kind with at least `min_words` words (the `offset`-th such)."""
    rows = conn.execute(
        "SELECT b.*, r.source_root_relative_path AS path FROM evidence_block b JOIN evidence_resource r "
        "USING (resource_id) WHERE r.kind = ? AND b.role = 'body' "
        "AND (? IS NULL OR r.source_root_relative_path = ?) "
        "ORDER BY r.source_root_relative_path, b.ordinal",
        [kind, path, path],
    ).fetchall()
    good = [
        r for r in rows if len(r["text"].split()) >= min_words and len(set(r["text"].split())) >= min_words
    ]
    return good[offset]


def middle(text: str, n: int = 8) -> str:
    words = text.split()
    start = max(0, len(words) // 2 - n // 2)
    return " ".join(words[start : start + n])


def test_a_quote_from_a_pdf_box_is_found_at_bbox_precision(ctx, conn):
    b = block(conn, "pdf", path=MIME_SPEC, offset=3)
    status, out = ask(ctx, quote=middle(b["text"]), blockId=b["block_id"])
    assert status == 200 and out["verdict"] == "found" and out["found"] is True
    assert out["match"]["evidenceId"] == b["block_id"] and out["match"]["similarity"] == 1.0
    assert out["match"]["quoteVerified"] is True and out["match"]["precision"] == "bbox"
    assert out["match"]["source"]["bbox"] == json.loads(b["bbox_json"])
    assert out["match"]["source"]["openAction"]["url"].startswith("https://example.org/docs/manuals/")
    assert out["target"] == {
        "scope": "block",
        "resourcePath": MIME_SPEC,
        "blockId": b["block_id"],
        "page": b["page"],
    }


def test_case_width_and_spacing_do_not_matter_but_words_do(ctx, conn):
    b = block(conn, "pdf", path=MIME_SPEC, offset=3)
    quote = middle(b["text"])
    shouted = "  ".join(quote.upper().split())
    assert ask(ctx, quote=shouted, blockId=b["block_id"])[1]["verdict"] == "found"
    first, *rest = quote.split()
    cut = first[:-1] if len(first) > 2 else first + "x"  # one word changed: not a quote of this block
    assert ask(ctx, quote=" ".join([cut, *rest]), blockId=b["block_id"])[1]["found"] is False


def test_a_quote_that_is_not_there_is_not_verified_and_the_closest_block_is_offered(ctx, conn):
    b = block(conn, "pdf", path=MIME_SPEC, offset=5)
    words = middle(b["text"], 10).split()
    altered = " ".join(words[:5] + ["flamingo", "tangerine"] + words[5:])  # words the block does not have
    other = block(conn, "pdf", path="manuals/R-FAQ.pdf", offset=7)
    status, out = ask(ctx, quote=altered, blockId=other["block_id"])
    assert status == 200 and out["verdict"] == "not_found" and out["found"] is False
    assert out["diagnostics"]["reason"] == "quote_not_in_block"
    match = out["match"]
    assert match["evidenceId"] == b["block_id"], match  # the block the sentence was taken from
    assert 0.6 <= match["similarity"] < 1.0 and match["quoteVerified"] is False
    assert match["source"]["resourcePath"] == MIME_SPEC


def test_a_quote_cited_at_the_wrong_block_is_found_elsewhere(ctx, conn):
    b = block(conn, "pdf", path="manuals/libtasn1.pdf", offset=4)
    wrong = block(conn, "pdf", path="manuals/libtasn1.pdf", offset=9)
    status, out = ask(ctx, quote=middle(b["text"]), blockId=wrong["block_id"])
    assert status == 200 and out["verdict"] == "found_elsewhere" and out["found"] is False
    assert out["match"]["evidenceId"] == b["block_id"] and out["match"]["similarity"] == 1.0


def test_a_nonsense_quote_is_not_found_anywhere(ctx):
    status, out = ask(ctx, quote="purple elephants juggle seventeen marmalade accordions")
    assert status == 200 and out["verdict"] == "not_found" and "match" not in out


def test_a_docx_paragraph(ctx, conn):
    b = block(conn, "office", min_words=5)
    status, out = ask(ctx, quote=middle(b["text"], 5), blockId=b["block_id"])
    assert status == 200 and out["verdict"] == "found"
    assert out["match"]["precision"] == "paragraph" and "paragraphIndex" in out["match"]["source"]
    status, out = ask(ctx, quote=middle(b["text"], 5) + " hippopotamus", blockId=b["block_id"])
    assert out["verdict"] == "not_found" and out["match"]["evidenceId"] == b["block_id"]


def test_an_ocr_line_of_a_scanned_page(ctx, conn):
    b = block(conn, "image", min_words=6)
    assert b["kind"] == "ocr_line"
    status, out = ask(ctx, quote=middle(b["text"], 5), blockId=b["block_id"])
    assert status == 200 and out["verdict"] == "found" and out["match"]["precision"] == "bbox"
    assert out["match"]["evidenceId"] == b["block_id"]
    # the line's words are also in the PDF the scan was made from; a quote from the next line is not in
    # this one
    nxt = conn.execute(
        "SELECT text FROM evidence_block WHERE resource_id = ? AND ordinal = ?",
        [b["resource_id"], b["ordinal"] + 1],
    ).fetchone()[0]
    if match_form(nxt) not in match_form(b["text"]):
        assert ask(ctx, quote=nxt, blockId=b["block_id"])[1]["found"] is False


def test_every_citation_url_form(ctx, conn):
    b = block(conn, "pdf", path=MIME_SPEC, offset=3)
    quote = middle(b["text"])
    page_url = "https://example.org/docs/manuals/shared-mime-info-spec.pdf.html"
    box = json.loads(b["bbox_json"])
    for url, scope in (
        (f"{page_url}#{b['block_id']}", "block"),
        (f"/-/evidence/site/manuals/shared-mime-info-spec.pdf.html?hl=x#{b['block_id']}", "block"),
        (f"{page_url}#page-{b['page']}", "page"),
        (f"{page_url}?page={b['page']}&bbox={','.join(str(v) for v in box)}", "box"),
        (page_url, "file"),
    ):
        status, out = ask(ctx, quote=quote, citationUrl=url)
        assert status == 200 and out["verdict"] == "found", (url, out)
        assert out["target"]["scope"] == scope and out["match"]["evidenceId"] == b["block_id"]
    other = conn.execute(
        "SELECT bbox_json FROM evidence_block WHERE resource_id = ? AND page = ? AND block_id != ? "
        "AND bbox_json IS NOT NULL AND length(text) > 40 LIMIT 1",
        [b["resource_id"], b["page"], b["block_id"]],
    ).fetchone()[0]
    wrong_box = f"{page_url}?page={b['page']}&bbox={','.join(str(v) for v in json.loads(other))}"
    out = ask(ctx, quote=quote, citationUrl=wrong_box)[1]  # a box elsewhere on the same page
    assert out["verdict"] == "found_elsewhere" and out["diagnostics"]["reason"] == "quote_not_in_box"
    assert out["match"]["evidenceId"] == b["block_id"]
    other_page = 1 if b["page"] != 1 else 2
    out = ask(ctx, quote=quote, citationUrl=f"{page_url}#page-{other_page}")[1]
    assert out["verdict"] == "found_elsewhere" and out["diagnostics"]["reason"] == "quote_not_in_page"


@pytest.mark.parametrize(
    "request_, status",
    [
        ({}, 400),
        ({"quote": ""}, 400),
        ({"quote": "… ,;"}, 400),
        ({"quote": 3}, 400),
        ({"quote": "x", "blockId": "b-aaaaaaaaaaaa", "citationUrl": "a.pdf.html"}, 400),
        ({"quote": "x", "colour": "red"}, 400),
        ({"quote": "x", "citationUrl": "https://example.org/nothing-here"}, 400),
        ({"quote": "x", "citationUrl": "nothing/here.pdf.html#page-2"}, 404),
        ({"quote": "x", "citationUrl": "manuals/R-FAQ.pdf.html#page-9999"}, 400),
        ({"quote": "x", "citationUrl": "manuals/R-FAQ.pdf.html?page=2&bbox=1,2,3"}, 400),
        ({"quote": "x", "blockId": "b-aaaaaaaaaaaa"}, 404),
        ({"quote": "x", "blockId": "nope\x00"}, 400),
    ],
)
def test_bad_requests_are_4xx_with_a_message(ctx, request_, status):
    got, out = ask(ctx, **request_)
    assert got == status and out["ok"] is False and out["error"]["message"], out


def test_answers_match_the_published_schema(ctx, conn, validate):
    b = block(conn, "pdf", path=MIME_SPEC, offset=3)
    for request in (
        {"quote": middle(b["text"]), "blockId": b["block_id"]},
        {"quote": middle(b["text"]) + " flamingo", "blockId": b["block_id"]},
        {
            "quote": middle(b["text"]),
            "citationUrl": f"manuals/shared-mime-info-spec.pdf.html#page-{b['page']}",
        },
        {"quote": "purple elephants juggle seventeen marmalade accordions"},
        {"quote": ""},
    ):
        validate("verify_quote_response.schema.json", ask(ctx, **request)[1])


def test_the_datasette_route_answers_get_and_post(datasette_server):
    """/-/evidence/verify on a real datasette process: found, not found, and 4xx for bad requests."""
    import httpx

    top = httpx.get(
        datasette_server + "/-/evidence/search",
        params={"q": "retention period seven years", "topK": 1},
        timeout=30,
    ).json()["results"][0]
    url = top["source"]["openAction"]["url"]
    r = httpx.get(
        datasette_server + "/-/evidence/verify",
        params={"quote": "retention period", "citationUrl": url},
        timeout=30,
    )
    assert r.status_code == 200 and r.json()["verdict"] == "found", r.text
    assert r.json()["match"]["evidenceId"] == top["evidenceId"]
    r = httpx.post(
        datasette_server + "/-/evidence/verify",
        timeout=30,
        json={"quote": "retention period of ninety-nine centuries", "blockId": top["evidenceId"]},
    )
    assert r.status_code == 200 and r.json()["found"] is False and r.json()["match"]["similarity"] < 1
    for bad in (
        {"quote": "x", "blockId": top["evidenceId"], "citationUrl": url},
        {"blockId": top["evidenceId"]},
    ):
        r = httpx.post(datasette_server + "/-/evidence/verify", json=bad, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["message"] and "Traceback" not in r.text


def test_the_command_line_prints_the_verdict_and_exits_by_it(real_index, conn):
    from click.testing import CliRunner

    from mnote_evidence.build.cli.main import main

    b = block(conn, "pdf", path=MIME_SPEC, offset=3)
    run = CliRunner().invoke(
        main, ["verify", middle(b["text"]), "--block", b["block_id"], "--site", str(real_index)]
    )
    assert run.exit_code == 0 and run.output.startswith("found in " + MIME_SPEC), run.output
    assert f"#{b['block_id']}" in run.output
    run = CliRunner().invoke(
        main,
        [
            "verify",
            middle(b["text"]) + " flamingo",
            "--block",
            b["block_id"],
            "--site",
            str(real_index),
            "--json",
        ],
    )
    assert run.exit_code == 3 and json.loads(run.output)["verdict"] == "not_found"
    run = CliRunner().invoke(main, ["verify", "x", "--url", "nowhere.html", "--site", str(real_index)])
    assert (
        run.exit_code == 1 and "names no file of this index" in run.output and "Traceback" not in run.output
    )


def test_typed_contract_matches_the_schema():
    """VerifyQuoteResponse and its parts name exactly the schema's properties, required ones required."""
    from mnote_evidence.build.core.schemas import load_schema
    from mnote_evidence.functions.core.contracts import (
        QuoteMatch,
        VerifyDiagnostics,
        VerifyQuoteResponse,
        VerifyTarget,
    )

    answer = load_schema("verify_quote_response.schema.json")["$defs"]["answer"]
    for typed, part in (
        (VerifyQuoteResponse, answer),
        (QuoteMatch, answer["properties"]["match"]),
        (VerifyTarget, answer["properties"]["target"]),
        (VerifyDiagnostics, answer["properties"]["diagnostics"]),
    ):
        assert set(typed.__annotations__) == set(part["properties"]), typed
        assert set(typed.__required_keys__) == set(part.get("required", [])), typed
