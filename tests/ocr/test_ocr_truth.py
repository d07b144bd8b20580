"""OCR text as a reader sees it: committed real PDF pages, rendered at 150 dpi, OCR'd by RapidOCR,
compared with the pages' own text layer (tests/ocr/truth.py). A regression that glues or splits
English words, or loses Chinese characters, fails here; the pages are clean renders, not scans."""

from __future__ import annotations

import pytest

from mnote_evidence.build.parse.ocr.engines import RapidOcrEngine
from tests.conftest import REPO
from tests.ocr.truth import score_page

PAGES = REPO / "tests" / "real_documents" / "ocr"
ENGLISH = PAGES / "libtasn1-p2-p4-p8.pdf"
CHINESE = PAGES / "gnupg-help-zh_CN.pdf"


@pytest.fixture(scope="module")
def rapidocr():
    return RapidOcrEngine()


@pytest.mark.parametrize("page", [1, 2, 3])
def test_english_words_recalled(rapidocr, page):
    words = score_page(rapidocr, ENGLISH, page, 150)["words"]
    assert words.truth > 50
    assert words.recall >= 0.97 and words.precision >= 0.95, words


@pytest.mark.parametrize("page", [1, 2])
def test_chinese_characters_recalled(rapidocr, page):
    score = score_page(rapidocr, CHINESE, page, 150)
    assert score["cjk"].truth > 300
    assert score["cjk"].recall >= 0.95 and score["cjk"].precision >= 0.95, score
