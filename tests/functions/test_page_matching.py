"""Page- and section-level matching and exact phrases, on a real build of a generated multi-block PDF and
notes: a query whose words are all on one page (or in one section of a note) but in no single block finds
that page below every single-block match, at its best block, with the page's other matching blocks
listed; a block holding the exact phrase ranks above blocks that only hold its words. The handler, the
CLI's `search --json` and the MCP tool give the same answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest
from click.testing import CliRunner

from mnote_evidence.build.cli.main import main
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import search
from mnote_evidence.functions.handlers.routes import BY_TOOL, run
from tests.conftest import run_build

PAGES = [
    [
        "Chapter one introduces the drawing commands of the language.",
        "A closed curve bounded by a path fills the region inside it.",
        "The path of the pen is bounded on each side by a margin, as a region is.",
        "Each region is bounded by the path that encloses it and by a margin.",
    ],
    [
        "Graphs of functions are drawn with the graph routine of the module.",
        "The polargraph routine draws a function in polar coordinates.",
        "Axes are labelled by default with ticks at every unit.",
        "The origin of the vertical axis is set by yzero when it differs from zero.",
    ],
    [
        "Another page mentions polargraph once, and nothing else of note.",
        "A final page about colours and pens.",
    ],
]
NOTE = """# Transport notes

## Layers

The transport layer carries segments between hosts.

Congestion makes a router drop packets, and the 传输层 retransmits them.

## Failures

A failing disk may cause 导致系统 to halt on boot.

## Elsewhere

Nothing about the words asked.
"""


def write_pdf(path: Path) -> None:
    doc = pymupdf.open()
    for blocks in PAGES:
        page = doc.new_page()
        for n, text in enumerate(blocks):
            page.insert_textbox(pymupdf.Rect(72, 90 + 110 * n, 520, 180 + 110 * n), text, fontsize=11)
    doc.save(path)


def write_workspace(root: Path) -> Path:
    """The manual and the note, in `root` (made)."""
    root.mkdir(parents=True)
    write_pdf(root / "manual.pdf")
    (root / "transport.md").write_text(NOTE, "utf-8")
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = write_workspace(tmp_path_factory.mktemp("pages") / "ws")
    out = root.parent / "out"
    run_build(root, out)
    return out


def ask(out: Path, query: str, **extra) -> dict:
    return search({"query": query, **extra}, Context(EvidenceDB(out / "evidence.sqlite")))


def test_words_from_two_blocks_of_one_page_find_that_page_at_its_best_block(built):
    answer = ask(built, "polargraph yzero")
    assert answer["matchMode"] == "all" and answer["results"], answer
    top = answer["results"][0]
    assert top["matchLevel"] == "page"
    assert top["source"]["resourcePath"] == "manual.pdf" and top["source"]["page"] == 2
    assert "polargraph" in top["quote"] or "yzero" in top["quote"]
    others = top["alsoMatched"]
    assert len(others) == 1 and others[0] != top["evidenceId"]
    # p.3 holds polargraph alone: not a page match
    assert [r["source"]["page"] for r in answer["results"]] == [2]
    assert answer["total"] == 1 and "nextOffset" not in answer


def test_single_block_matches_rank_above_page_matches(built):
    answer = ask(built, "polargraph function")
    levels = [r.get("matchLevel", "block") for r in answer["results"]]
    assert levels[0] == "block" and "polar coordinates" in answer["results"][0]["quote"]
    assert levels == sorted(levels)  # "block" before "page": no block hit after a page hit
    assert all(
        r["source"]["page"] != answer["results"][0]["source"]["page"]
        for r in answer["results"]
        if r.get("matchLevel") == "page"
    )  # a page whose block holds every word is that block's, not a page hit as well


def test_words_from_two_paragraphs_of_one_section_find_the_section(built):
    answer = ask(built, "传输层 导致系统")
    assert not answer["results"] or answer["results"][0].get("matchLevel") != "section"  # two sections
    answer = ask(built, "congestion retransmits router segments")
    top = answer["results"][0]
    assert top["matchLevel"] == "section" and top["source"]["resourcePath"] == "transport.md"
    assert top["source"]["sectionPath"][-1] == "Layers" and len(top["alsoMatched"]) == 1


def test_an_exact_phrase_ranks_above_blocks_holding_its_words(built):
    answer = ask(built, "bounded by a path")
    quotes = [r["quote"] for r in answer["results"]]
    assert len(quotes) == 3 and "bounded by a path" in quotes[0], quotes
    assert answer["total"] == 3
    # every page of the query partitions the same order
    paged = [ask(built, "bounded by a path", topK=1, offset=n)["results"][0]["quote"] for n in range(3)]
    assert paged == quotes


def test_handler_cli_and_mcp_agree(built):
    for query in ("polargraph yzero", "bounded by a path", "congestion retransmits router segments"):
        want = ask(built, query)
        cli = CliRunner().invoke(main, ["search", query, "--json", "--site", str(built)])
        assert cli.exit_code == 0, cli.output
        assert json.loads(cli.output) == want
        status, mcp = run(
            BY_TOOL["evidence_search"], Context(EvidenceDB(built / "evidence.sqlite")), {"query": query}
        )
        assert status == 200 and mcp == want
    text = CliRunner().invoke(main, ["search", "polargraph yzero", "--site", str(built)]).output
    assert "the words across 2 passages of this page" in text, text
