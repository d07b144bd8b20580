"""The Ask page without LightRAG (not set up, or down): a plain-language notice and local evidence,
in Chromium."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import shoot
from tests.servers import free_port, start, stop

QUESTION = "retention period"


@pytest.mark.parametrize(
    "lightrag, notice",
    [
        (None, "No answering service (LightRAG) is set up"),
        ("down", "could not be reached"),
    ],
)
def test_ask_page_without_lightrag_shows_local_evidence(stale_site, page, monkeypatch, lightrag, notice):
    _, out = stale_site
    monkeypatch.delenv("LIGHTRAG_URL", raising=False)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "mnote_evidence", "serve", str(out), "--port", str(port)]
    if lightrag == "down":
        cmd += [
            "--lightrag-url",
            f"http://127.0.0.1:{free_port()}",
            "--lightrag-timeout",
            "2",
        ]  # nothing listens
    proc = start(cmd, base + "/-/versions.json")
    try:
        page.goto(base + "/-/evidence/site/ask.html")
        page.fill("#ask input[name=q]", QUESTION)
        page.click("#ask button")
        page.wait_for_selector("#local:not([hidden]) .result")
        status = page.inner_text("#ask-status")
        assert notice in status and "passages of your notes" in status
        assert "knowledge_rag" not in page.inner_text("body")  # no reason code on the page
        quotes = page.eval_on_selector_all(
            "#local .result span", "els => els.map(e => e.textContent.toLowerCase())"
        )
        assert quotes and any("retention" in q for q in quotes)
        shoot(page, f"ask-fallback-{lightrag or 'unconfigured'}")
        page.click("#local .result")
        page.wait_for_load_state("load")
        target = page.evaluate("decodeURIComponent(location.hash.slice(1))")
        assert (
            page.eval_on_selector(f'[id="{target}"]', "el => getComputedStyle(el).outlineColor")
            == "rgb(230, 119, 0)"
        )
        assert page.console_errors == []
    finally:
        stop(proc)
