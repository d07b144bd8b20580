"""Page furniture by repetition and by the page sequence (SPEC §6), on a generated PDF built for real.

The PDF (PyMuPDF) has roman-numbered front matter whose running header holds its number, arabic page
numbers printed just below the body text (at a different height on each page, above the footer band)
and on the footer line, and a page that ends with three code lines on that footer line. Roles are read
from evidence.sqlite after a real build; search through the `evidence.search` handler.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context, search
from tests.conftest import connect, run_build

ROMAN = ["i", "ii", "iii", "iv"]
CODE = ["\\RequirePackage{ctexhook}", "\\ctexset{today = big}", "1614 }"]
CODE_PAGE = 9


def _manual(path: Path) -> None:
    """14 pages: i-iv, then 1-10; page 9 prints its number in the header and ends with code."""
    doc = pymupdf.open()
    for n in range(1, 15):
        page = doc.new_page(width=612, height=792)
        if n <= 4:  # one block: the title, then the page's roman number
            page.insert_text((72, 48), "Generated Manual", fontsize=9)
            page.insert_text((72, 59), ROMAN[n - 1], fontsize=9)
        else:
            page.insert_text((72, 48), "Chapter 1. Generating", fontsize=9)
        y = 120
        for k in range(8 + 2 * (n % 5)):
            tag = "abcdefghijklmnopqrstuvwxyz"[n] + "abcdefghijklmnopqrstuvwxyz"[k]  # unique, no number
            page.insert_text((72, y), f"Body line {tag} about the furniture of generated pages.", fontsize=11)
            y += 40
        if n == CODE_PAGE:
            page.insert_text((520, 48), str(n - 4), fontsize=9)
            for k, line in enumerate(CODE):
                page.insert_text((72, 734 + 13 * k), line, fontsize=10, fontname="cour")
        elif 5 <= n < CODE_PAGE:  # just below the body: its height varies, above the footer band
            page.insert_text((300, y + 10), str(n - 4), fontsize=10)
        elif n > CODE_PAGE:  # the footer line, where the code page's last line sits too
            page.insert_text((300, 760), str(n - 4), fontsize=10)
    doc.save(path)
    doc.close()


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("furniture_sequence")
    (base / "ws").mkdir()
    _manual(base / "ws" / "generated.pdf")
    run_build(base / "ws", base / "out")
    return base / "out"


def _rows(index: Path) -> list[tuple[int, str, str]]:
    return [
        (r["page"], " ".join(r["text"].split()), r["role"])
        for r in connect(index).execute("SELECT page, text, role FROM evidence_block ORDER BY ordinal")
    ]


def test_page_numbers_are_furniture_at_any_height_by_their_sequence(index: Path):
    numbers = {(p, t): role for p, t, role in _rows(index) if t.isdigit()}
    assert numbers == {(n, str(n - 4)): "furniture" for n in range(5, 15)}


def test_front_matter_headers_with_their_roman_number_are_furniture(index: Path):
    headers = {p: (t, role) for p, t, role in _rows(index) if t.startswith("Generated Manual")}
    assert headers == {n: (f"Generated Manual {ROMAN[n - 1]}", "furniture") for n in range(1, 5)}
    running = [role for p, t, role in _rows(index) if t == "Chapter 1. Generating"]
    assert running == ["furniture"] * 10


def test_code_lines_at_a_page_foot_are_body_and_found_by_default(index: Path):
    code = [(p, t, role) for p, t, role in _rows(index) if "ctexhook" in t]
    assert code == [(CODE_PAGE, " ".join(CODE), "body")]
    assert {role for _p, t, role in _rows(index) if t.startswith("Body line")} == {"body"}
    ctx = Context(EvidenceDB(index / "evidence.sqlite"), "")
    hits = search({"query": "RequirePackage ctexhook", "topK": 5}, ctx)["results"]
    assert hits and hits[0]["source"]["page"] == CODE_PAGE and "ctexhook" in hits[0]["quote"]
