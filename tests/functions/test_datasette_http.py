"""A real `datasette` process with our plugin (found by entry point), queried over HTTP."""

from __future__ import annotations

import subprocess

import httpx
import pytest

from mnote_evidence.functions.adapters.datasette_compat import V1
from tests.conftest import SPEC_PDF
from tests.functions.conftest import STALE_PDF
from tests.servers import DATASETTE

FUZZ = [
    '"',
    '"unbalanced',
    "AND",
    "OR OR",
    "NOT x",
    "NEAR(",
    "NEAR(a b",
    "*",
    "a*b*",
    "text:foo",
    "block_id:b-1",
    "{text}: x",
    "(((",
    ")",
    "^x",
    "-x",
    "+",
    "'; DROP TABLE evidence_block; --",
    "\x00",
    "a\x00b",
    "线程\x00作用域",
    "x" * 5000,
    "线" * 3000,
    "%",
    "\\",
    "🙂",
    "\u202e",
    "<script>alert(1)</script>",
]


def get(base: str, route: str, **params) -> httpx.Response:
    return httpx.get(base + route, params=params, timeout=30)


def test_plugin_is_listed_by_datasette():
    out = subprocess.run([DATASETTE, "plugins"], capture_output=True, text=True, check=True).stdout
    assert '"name": "mnote-evidence"' in out and "register_routes" in out


def test_known_sentence_round_trip_to_the_site(datasette_server):
    r = get(datasette_server, "/-/evidence/search", q="retention period seven years", topK=3)
    assert r.status_code == 200
    top = r.json()["results"][0]
    assert top["source"]["resourcePath"] == SPEC_PDF and top["source"]["page"] == 2
    assert len(top["source"]["bbox"]) == 4 and "seven years" in top["quote"]
    url = top["source"]["openAction"]["url"]
    page = httpx.get(datasette_server + url.split("#")[0], timeout=30)
    assert page.status_code == 200 and f'id="{top["evidenceId"]}"' in page.text
    assert url.endswith("#" + top["evidenceId"])


@pytest.mark.parametrize(
    "query, expect_path",
    [
        ("线程作用域", "研究/Rust 并发.md"),
        ("作用域", SPEC_PDF),
        ("吗啉", "研究/化学笔记.assets/溶剂与杂环.docx"),
        ("线程", "研究/Rust 并发.md"),
    ],
)
def test_chinese_substrings(datasette_server, query, expect_path):
    body = get(datasette_server, "/-/evidence/search", q=query, topK=20).json()
    assert expect_path in {r["source"]["resourcePath"] for r in body["results"]}
    assert all(query in r["quote"] for r in body["results"] if len(r["quote"]) < 280)


def test_filters_stale_and_post(datasette_server):
    body = get(datasette_server, "/-/evidence/search", q="thread", resourceKinds="pdf").json()
    assert body["results"] and {r["source"]["resourceKind"] for r in body["results"]} == {"pdf"}
    body = get(datasette_server, "/-/evidence/search", q="archive tier capacity").json()
    assert STALE_PDF not in {r["source"]["resourcePath"] for r in body["results"]}
    r = httpx.post(
        datasette_server + "/-/evidence/search",
        json={"query": "吡咯烷", "topK": 2, "resourceKinds": ["office"]},
        timeout=30,
    )
    assert r.status_code == 200 and len(r.json()["results"]) == 2


def test_graph_read_open_over_http(datasette_server):
    body = get(datasette_server, "/-/evidence/search", q="retention period seven years", mode="graph").json()
    linked = [r for r in body["results"] if r["source"]["resourcePath"] == "Projects/Evidence Kernel.md"]
    assert linked and linked[0]["source"]["lineRange"]
    block = get(datasette_server, "/-/evidence/search", q="retention period seven years").json()["results"][0]
    read = httpx.post(
        datasette_server + "/-/evidence/read", json={"blockId": block["evidenceId"]}, timeout=30
    )
    assert read.status_code == 200 and read.json()["neighbours"]
    opened = get(datasette_server, "/-/evidence/open", blockId=block["evidenceId"]).json()
    assert opened["openAction"]["url"] == block["source"]["openAction"]["url"]


@pytest.mark.parametrize("query", FUZZ)
def test_fts_breaking_input_never_500(datasette_server, query):
    r = httpx.get(datasette_server + "/-/evidence/search", params={"q": query}, timeout=30)
    assert r.status_code in (200, 400), (query, r.status_code, r.text[:200])
    assert r.json()["ok"] is (r.status_code == 200)
    r = httpx.post(datasette_server + "/-/evidence/search", content=b'{"query": ', timeout=30)
    assert r.status_code == 400 and "JSON" in r.json()["error"]["message"]


@pytest.mark.parametrize("query", FUZZ[:12])
def test_datasette_table_search_never_500(datasette_server, query):
    r = httpx.get(datasette_server + "/evidence/evidence_block.json", params={"_search": query}, timeout=30)
    assert r.status_code in (200, 400), (query, r.status_code)


def test_datasette_own_search_box_finds_chinese(datasette_server):
    r = get(
        datasette_server, "/evidence/evidence_block.json", _search="线程作用域", _shape="array", _col="text"
    )
    texts = [row["text"] for row in r.json()]
    assert texts and all("线程作用域" in t for t in texts)
    html = get(datasette_server, "/evidence/evidence_block", _search="吗啉").text
    assert 'href="/-/evidence/site/' in html  # render_cell links block ids to the static site


def test_canned_queries_and_metadata(datasette_server):
    errors = get(datasette_server, "/evidence/build_errors.json", _shape="array").json()
    assert {e["error_code"] for e in errors} >= {"pdf_encrypted", "pdf_corrupt"}
    stale = get(datasette_server, "/evidence/stale_resources.json", _shape="array").json()
    assert [s["source_root_relative_path"] for s in stale] == [STALE_PDF]
    backlinks = get(
        datasette_server,
        "/evidence/backlinks_of_note.json",
        path="Projects/Evidence Kernel.md",
        _shape="array",
    ).json()
    assert {b["from_note"] for b in backlinks} >= {"README.md", "Projects/Meeting Notes/Kickoff.md"}
    sections = get(
        datasette_server, "/evidence/sections_of_resource.json", path=SPEC_PDF, _shape="array"
    ).json()
    assert "3 Retention policy" in {s["title"] for s in sections}
    page = get(datasette_server, "/evidence/evidence_block").text
    assert "One row per evidence block" in page  # the table description, on 0.65 and 1.0
    tables = {t["name"]: t for t in get(datasette_server, "/evidence.json").json()["tables"]}
    assert tables["evidence_block_row"]["hidden"] and not tables["evidence_resource"]["hidden"]
    if not V1:
        meta = get(datasette_server, "/-/metadata.json").json()
        assert "evidence_block" in meta["databases"]["evidence"]["tables"]


def test_site_is_served_and_guarded(datasette_server):
    assert httpx.get(datasette_server + "/", timeout=30).headers["location"] == "/-/evidence/site/index.html"
    assert httpx.get(datasette_server + "/-/evidence/site/index.html", timeout=30).status_code == 200
    for bad in (
        "/-/evidence/site/evidence.sqlite",
        "/-/evidence/site/.mnote-state.sqlite",
        "/-/evidence/site/%2e%2e/%2e%2e/etc/passwd",
    ):
        assert httpx.get(datasette_server + bad, timeout=30).status_code == 404, bad
