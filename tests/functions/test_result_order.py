"""Equal-score results come in document order: page 2 before page 10."""

from __future__ import annotations

import pymupdf

from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context, search
from tests.conftest import run_build


def test_pages_of_a_repeated_line_sort_numerically(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    doc = pymupdf.open()
    for n in range(1, 13):  # the same running line on 12 pages, different body text
        page = doc.new_page()
        page.insert_text((72, 40), "Shared catalogue of harbour records")
        page.insert_text((72, 120), f"Body text of page number {n} about tides and ships.")
    doc.save(root / "handbook.pdf")
    out = tmp_path / "out"
    run_build(root, out)
    # a running header is page furniture, left out of default search: ask for it
    answer = search(
        {"query": "harbour records", "topK": 12, "includeFurniture": True},
        Context(EvidenceDB(out / "evidence.sqlite"), "/site/"),
    )
    results = answer["results"]
    assert len({r["score"] for r in results}) == 1  # a tie: only the order rule decides
    assert [r["source"]["page"] for r in results] == list(range(1, 13))
