"""The Ask page on a static host (no query server): the question goes to the static index, the same
search the box runs (search_query.js over evidence.sqlite by range requests), and the page lists the
passages the query server would list, id for id, saying when they match only some of the words.
Real processes and real Chromium."""

from __future__ import annotations

import pytest

from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import search
from tests.conftest import shoot
from tests.render.test_static_search import quiet, static_host
from tests.servers import stop


@pytest.mark.parametrize(
    "question, some",
    [
        ("吡咯烷 的沸点是多少？", True),
        ("What is the retention period of audit evidence?", True),
        ("吗啉", False),
    ],
)
def test_ask_on_a_static_host_lists_the_static_index_passages(site, page, question, some):
    _, out = site
    proc, base = static_host(out, True)
    try:
        quiet(page)
        page.goto(base + "ask.html")
        assert page.get_attribute("#ask input[name=q]", "placeholder") == "Ask a question about your notes"
        page.fill("#ask input[name=q]", question)
        page.click("#ask button")
        page.wait_for_selector("#local:not([hidden]) .result", timeout=30_000)
        status = page.inner_text("#ask-status")
        assert "query server" in status and "did not answer" not in status
        assert ("match some of them" in status) == some, status
        assert ("some of the words" in page.inner_text("#local h2")) == some
        shown = page.eval_on_selector_all(
            "#local .result", "els => els.map(a => decodeURIComponent(new URL(a.href).hash.slice(1)))"
        )
        want = search({"query": question, "topK": 10}, Context(db=EvidenceDB(out / "evidence.sqlite")))
        assert want["matchMode"] == ("any" if some else "all")
        assert set(shown) <= {r["evidenceId"] for r in want["results"]} and shown
        if some:
            shoot(page, "ask-static-some-words")
        assert page.console_errors == []
    finally:
        stop(proc)
