"""`knowledge.query` mode=graph against a real lightrag-server (its stand-in model extracts one entity per
capitalised word): entities and relationships come with evidence (block, anchor URL, quote), never bare;
the notes' `@` mentions answer too, with LightRAG and without it."""

from __future__ import annotations

from urllib.parse import unquote

import pytest

from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.adapters.mcp_text import query_text
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context
from mnote_evidence.functions.handlers.knowledge import query
from tests.conftest import connect, run_build

NOTES = {
    "Engines/Difference.md": (
        "# Difference engines\n\nThe Difference engine was designed by Babbage in London for tables.\n\n"
        "Its columns held numbers of thirty digits.\n"
    ),
    "Engines/People.md": (
        '# People around the engines\n\n@"Ada Lovelace" wrote the notes on the analytical engine.\n\n'
        "Menabrea published the lecture in Geneva.\n"
    ),
}


@pytest.fixture(scope="module")
def graph_site(lightrag, tmp_path_factory):
    root = tmp_path_factory.mktemp("graph") / "ws"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    out = root.parent / "out"
    report = run_build(root, out, site=True, lightrag=LightRagConfig(lightrag.url))
    assert report.knowledge["error"] is None
    return out, Context(EvidenceDB(out / "evidence.sqlite"), "", LightRagConfig(lightrag.url, timeout=20))


def _evidence_holds(out, item: dict, names: list[str]) -> None:
    """The evidence opens its block's anchor on a page that exists, and its quote is that block's."""
    url = item["source"]["openAction"]["url"]
    page, _, fragment = url.partition("#")
    assert fragment == item["evidenceId"]
    assert f'id="{fragment}"' in (out / unquote(page.split("?")[0])).read_text("utf-8")
    text = (
        connect(out).execute("SELECT text FROM evidence_block WHERE block_id = ?", [fragment]).fetchone()[0]
    )
    assert item["quote"].strip("…").strip() in " ".join(text.split())
    assert any(n.lower() in text.lower() for n in names)
    assert 0 < item["confidence"] <= 1 and item["createdBy"] in ("lightrag", "mnote-evidence build")


def test_lightrag_entities_map_to_the_blocks_that_mention_them(graph_site):
    out, ctx = graph_site
    answer = query({"query": "Where is Babbage mentioned?", "mode": "graph"}, ctx)
    assert (
        answer["ok"]
        and answer["mode"] == "graph"
        and answer["diagnostics"]["graphSources"]
        == [
            "notes",
            "lightrag",
        ]
    )
    by_id = {e["entityId"]: e for e in answer["entities"]}
    babbage = by_id["entity:babbage"]
    assert [m["evidenceId"] for m in babbage["mentions"]]
    for entity in answer["entities"]:
        assert entity["mentions"], entity  # never an entity without its evidence
        for mention in entity["mentions"]:
            _evidence_holds(out, mention, [entity["name"]])
    cited = {c["citationId"] for c in answer["citations"]}
    lightrag = [m for e in answer["entities"] for m in e["mentions"] if m["createdBy"] == "lightrag"]
    assert lightrag and {m["citationId"] for m in lightrag} <= cited
    mention = babbage["mentions"][0]
    assert "Babbage" in mention["quote"] and mention["sourcePath"] == "Engines/Difference.md"


def test_relationships_carry_evidence(graph_site):
    out, ctx = graph_site
    answer = query({"query": "Babbage London", "mode": "graph"}, ctx)
    assert answer["relationships"], answer["diagnostics"]
    for rel in answer["relationships"]:
        assert rel["evidence"] and rel["sourceEntityId"].startswith("entity:")
        for item in rel["evidence"]:
            _evidence_holds(out, item, [rel["source"], rel["target"]])


def test_note_mentions_answer_with_and_without_lightrag(graph_site):
    out, ctx = graph_site
    for context in (ctx, Context(ctx.db, "", None)):
        answer = query({"query": "Ada Lovelace", "mode": "graph"}, context)
        assert answer["ok"]
        ada = {e["entityId"]: e for e in answer["entities"]}["entity:ada lovelace"]
        assert ada["name"] == "Ada Lovelace"
        notes = [m for m in ada["mentions"] if m["createdBy"] == "mnote-evidence build"]
        assert [m["sourcePath"] for m in notes] == ["Engines/People.md"]
        _evidence_holds(out, notes[0], ["Ada Lovelace"])
        text = query_text(answer)  # what the MCP tool says: each place as a Markdown link with its quote
        assert (
            "Ada Lovelace (entity:ada lovelace)" in text and notes[0]["source"]["openAction"]["url"] in text
        )
    assert answer["diagnostics"]["graphSources"] == ["notes"] and answer["relationships"] == []


def test_an_unreachable_lightrag_still_answers_from_the_notes(graph_site):
    out, ctx = graph_site
    down = Context(ctx.db, "", LightRagConfig("http://127.0.0.1:9", timeout=2))
    answer = query({"query": "Lovelace", "mode": "graph"}, down)
    assert answer["ok"] and answer["degraded"] and answer["degradedReason"]
    assert [e["entityId"] for e in answer["entities"]] == ["entity:ada lovelace"]
