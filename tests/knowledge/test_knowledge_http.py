"""Knowledge routes through `mnote-evidence serve`, the Ask page in Chromium, and `mnote-evidence ask`."""

from __future__ import annotations

import json

import httpx
import pytest
from click.testing import CliRunner

from mnote_evidence.build.cli.main import main
from tests.conftest import CHEM_DOCX, shoot
from tests.servers import start_serve, stop


@pytest.fixture(scope="module")
def served(knowledge_site, lightrag):
    _, out, _ = knowledge_site
    proc, base = start_serve(out, "--lightrag-url", lightrag.url)
    yield base
    stop(proc)


def test_knowledge_routes(served):
    r = httpx.post(
        served + "/-/knowledge/query", json={"query": "吡咯烷", "mode": "naive", "topK": 8}, timeout=30
    )
    body = r.json()
    assert r.status_code == 200 and body["ok"]
    docx = [c for c in body["citations"] if c["sourcePath"] == CHEM_DOCX][0]
    assert docx["citationUrl"].startswith("/-/evidence/site/")
    page = httpx.get(served + docx["citationUrl"].split("#")[0], timeout=30)
    assert page.status_code == 200 and f'id="{docx["blockId"]}"' in page.text
    health = httpx.get(served + "/-/knowledge/status", timeout=30).json()
    assert health["healthy"] is True
    bad = httpx.get(served + "/-/knowledge/query", params={"query": "x", "topK": "many"}, timeout=30)
    assert bad.status_code == 400


def test_ask_page_shows_answer_badges_and_source_cards(served, page):
    page.goto(served + "/-/evidence/site/ask.html")
    page.fill("#ask input[name=q]", "retention period audit evidence")
    page.select_option("#ask select[name=mode]", "naive")
    page.click("#ask button")
    page.wait_for_selector("#answer:not([hidden]) .badge.cite")
    badges = page.eval_on_selector_all("#answer .badge.cite", "els => els.map(e => e.textContent)")
    cards = page.eval_on_selector_all(".source-card .badge", "els => els.map(e => e.textContent)")
    assert badges and set(badges) <= set(cards)  # badges only from our citation set
    assert "[9]" not in page.inner_text("#answer")  # the model's invented marker is gone
    shoot(page, "ask-page")
    page.click("#answer .badge.cite")
    page.wait_for_load_state("load")
    target = page.evaluate("decodeURIComponent(location.hash.slice(1))")
    assert (
        page.eval_on_selector(f'[id="{target}"]', "el => getComputedStyle(el).outlineColor")
        == "rgb(230, 119, 0)"
    )
    assert page.console_errors == []


def test_ask_cli_prints_clickable_citations(knowledge_site, lightrag, monkeypatch):
    _, out, _ = knowledge_site
    monkeypatch.setenv("LIGHTRAG_URL", lightrag.url)
    runner = CliRunner()
    text = runner.invoke(main, ["ask", "吡咯烷", "--site", str(out), "--mode", "naive"])
    assert text.exit_code == 0, text.output
    assert "溶剂与杂环.docx" in text.output and (out.resolve().as_uri() + "/") in text.output
    as_json = runner.invoke(main, ["ask", "吡咯烷", "--site", str(out), "--mode", "naive", "--json"])
    body = json.loads(as_json.output)
    assert body["ok"] and body["citations"]
    monkeypatch.setenv("LIGHTRAG_URL", "http://127.0.0.1:9")  # nothing listens there
    down = runner.invoke(main, ["ask", "吡咯烷", "--site", str(out)])
    assert down.exit_code == 1 and "knowledge_rag_unavailable" in down.output


def test_a_site_built_with_lightrag_links_ask_at_the_end_of_the_header(served, page):
    page.goto(served + "/-/evidence/site/Projects/Evidence%20Kernel.html")
    header = page.eval_on_selector("header.top", "el => el.getBoundingClientRect().toJSON()")
    ask = page.eval_on_selector("header .ask-link", "el => el.getBoundingClientRect().toJSON()")
    search = page.eval_on_selector("header form.search", "el => el.getBoundingClientRect().toJSON()")
    assert ask["left"] >= search["right"] and header["right"] - ask["right"] < 24  # last, at the right edge
    assert (
        abs((ask["top"] + ask["bottom"]) / 2 - (search["top"] + search["bottom"]) / 2) < 4
    )  # on the bar's line
    page.click("header .ask-link")
    page.wait_for_load_state("load")
    assert page.url.endswith("/-/evidence/site/ask.html") and page.is_visible("#ask")
    assert page.console_errors == []
