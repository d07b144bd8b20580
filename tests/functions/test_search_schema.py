"""`schemas/search_response.schema.json` against real answers, and the typed contracts against the schemas.

Answers come from the pure handler over a real build of content_fixtures (site-relative and
served base) and from the real Datasette route; the schema must also reject broken answers.
"""

from __future__ import annotations

import copy

import httpx
import pytest

from mnote_evidence.build.core.model import EvidenceLocator
from mnote_evidence.build.core.schemas import load_schema
from mnote_evidence.functions.core.contracts import (
    ErrorResponse,
    Group,
    GroupExpand,
    SearchResponse,
    SearchResult,
    Snippet,
    Via,
)
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.evidence import Context, search
from tests.conftest import schema_validator

SCHEMA = "search_response.schema.json"
REQUESTS = [
    {"query": "retention period seven years", "topK": 3},
    {"query": "retention period seven years", "mode": "graph"},
    {"query": "retention period seven years", "mode": "hybrid", "topK": 50},
    {"query": "吡咯烷", "resourceKinds": ["office"]},
    {"query": "线程作用域"},
    {"query": "thread", "pathPrefix": "研究/"},
    {"query": "吗啉", "includeOcr": True},  # no LightRAG configured: degraded, with the reason
    {"query": "qqqzzzxxyy"},  # nothing found
    {"query": "the", "mode": "hybrid", "topK": 50},  # many results
    {"query": "the", "topK": 3, "offset": 3},  # a middle page
    {"query": "the", "groupBy": "document", "topK": 3, "perDocument": 2, "folder": "Projects"},
]
BAD_REQUESTS = [
    {"query": ""},
    {"query": "x", "topK": 0},
    {"query": "x", "colour": "red"},
    {"query": "x", "mode": 3},
]


@pytest.fixture(scope="module")
def schema():
    return schema_validator(SCHEMA)


def problems(schema, doc) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in schema.iter_errors(doc)]


def check_answer(schema, body: dict) -> None:
    assert problems(schema, body) == []
    for r in body["results"]:
        assert r["evidenceId"] == r["source"]["blockId"]


@pytest.fixture(scope="module")
def answers(stale_site) -> dict[str, list[dict]]:
    """Real handler answers per site base: '' (site-relative, CLI) and '/site/' (served)."""
    _, out = stale_site
    db = EvidenceDB(out / "evidence.sqlite")
    by_base = {}
    for base in ("", "/site/"):
        ctx = Context(db, base)
        by_base[base] = [call(lambda r, ctx=ctx: search(r, ctx), req) for req in REQUESTS]
    return by_base


def test_handler_answers_match_the_schema(answers, schema, validate):
    for base, replies in answers.items():
        for req, (status, body) in zip(REQUESTS, replies):
            assert status == 200, (req, body)
            check_answer(schema, body)
            for r in body["results"]:
                assert r["source"]["openAction"]["url"].startswith(base)
                if base == "":  # site-relative: each source is a stored locator as is
                    validate("locator.schema.json", r["source"])
    served = [body for _, body in answers["/site/"]]
    # the answers exercised every branch the schema describes
    assert {r["matchSource"] for b in served for r in b["results"]} == {"fts", "graph"}
    assert any(b["degraded"] and b["degradedReason"] == "knowledge_rag_unconfigured" for b in served)
    assert any(not b["results"] for b in served) and max(len(b["results"]) for b in served) > 10
    assert any("nextOffset" in b for b in served) and any(b.get("groups") for b in served)
    assert all(r["snippet"]["highlights"] for b in served for r in b["results"] if r["matchSource"] == "fts")


def test_served_urls_need_the_response_schema(answers):
    """The locator schema alone keeps stored URLs site-relative; only the response schema's
    `siteUrl` anchor admits the base prefix."""
    locator_only = schema_validator("locator.schema.json")
    source = answers["/site/"][0][1]["results"][0]["source"]
    assert source["openAction"]["url"].startswith("/site/")
    assert problems(locator_only, source)


def test_rejected_requests_match_the_error_branch(stale_site, schema):
    ctx = Context(EvidenceDB(stale_site[1] / "evidence.sqlite"))
    for req in BAD_REQUESTS:
        status, body = call(lambda r: search(r, ctx), req)
        assert status == 400 and problems(schema, body) == [], (req, body)


@pytest.mark.parametrize(
    "break_it",
    [
        lambda b: b["results"][0].pop("source"),
        lambda b: b["results"][0]["source"]["openAction"].update(url="javascript:alert(1)"),
        lambda b: b["results"][0].update(extra=1),
        lambda b: b["results"][0].update(quote="x" * 281),
        lambda b: b["results"][0].update(matchSource="knowledge_ocr"),  # boundary says local search only
        lambda b: b.update(degraded=True),  # degraded without a reason
        lambda b: next(r for r in b["results"] if r["matchSource"] == "graph").pop("via"),
        lambda b: b["results"][0].update(
            via={
                "edgeType": "markdown_links_to",
                "direction": "in",
                "fromEvidenceId": b["results"][0]["evidenceId"],
            }
        ),  # fts with via
        lambda b: b.update(ok=False),
        lambda b: b["results"][0].pop("snippet"),
        lambda b: b["results"][0]["snippet"].update(highlights=[[1]]),
        lambda b: b.pop("total"),
        lambda b: b.update(nextOffset=10),  # hybrid: no pages
    ],
    ids=[
        "no-source",
        "scheme-url",
        "extra-field",
        "long-quote",
        "ocr-in-local",
        "degraded-no-reason",
        "graph-no-via",
        "fts-with-via",
        "ok-false",
        "no-snippet",
        "bad-highlight",
        "no-total",
        "hybrid-page",
    ],
)
def test_schema_rejects_broken_answers(answers, schema, break_it):
    body = copy.deepcopy(answers["/site/"][2][1])  # hybrid: fts and graph results
    assert problems(schema, body) == []
    break_it(body)
    assert problems(schema, body)


def test_datasette_route_answers_match_the_schema(datasette_server, schema):
    for params in (
        {"q": "retention period seven years", "topK": 3},
        {"q": "retention period seven years", "mode": "hybrid"},
        {"q": "吡咯烷", "resourceKinds": "office"},
        {"q": "线程", "includeOcr": "1"},
    ):
        r = httpx.get(datasette_server + "/-/evidence/search", params=params, timeout=30)
        assert r.status_code == 200 and r.json()["results"], params
        check_answer(schema, r.json())
        assert r.json()["results"][0]["source"]["openAction"]["url"].startswith("/-/evidence/site/")
    paged = httpx.get(
        datasette_server + "/-/evidence/search",
        timeout=30,
        params={"q": "the", "topK": 2, "offset": 2, "groupBy": "document", "perDocument": 1},
    )
    assert paged.status_code == 200 and paged.json()["offset"] == 2 and paged.json()["groups"], paged.text
    check_answer(schema, paged.json())
    r = httpx.post(
        datasette_server + "/-/evidence/search", json={"query": "thread", "mode": "graph"}, timeout=30
    )
    assert r.status_code == 200
    check_answer(schema, r.json())
    for params in ({"q": "x", "topK": "many"}, {"q": "x", "mode": "psychic"}, {"q": '"unbalanced'}):
        r = httpx.get(datasette_server + "/-/evidence/search", params=params, timeout=30)
        assert r.status_code in (200, 400) and problems(schema, r.json()) == [], (params, r.text[:200])


def _keys(schema_def: dict) -> tuple[set[str], set[str]]:
    return set(schema_def["properties"]), set(schema_def.get("required", []))


@pytest.mark.parametrize(
    "typed, schema_name, pointer",
    [
        (SearchResponse, SCHEMA, "answer"),
        (SearchResult, SCHEMA, "result"),
        (Via, SCHEMA, "via"),
        (Snippet, SCHEMA, "snippet"),
        (Group, SCHEMA, "group"),
        (ErrorResponse, SCHEMA, "error"),
        (EvidenceLocator, "locator.schema.json", None),
    ],
)
def test_typed_contracts_match_the_schemas(typed, schema_name, pointer):
    """Each TypedDict names exactly the schema's properties, required ones required."""
    doc = load_schema(schema_name)
    props, required = _keys(doc["$defs"][pointer] if pointer else doc)
    assert set(typed.__annotations__) == props
    assert set(typed.__required_keys__) == required
    if typed is Group:  # its nested `expand` too
        assert set(GroupExpand.__annotations__) == set(
            doc["$defs"]["group"]["properties"]["expand"]["properties"]
        )
