"""The parse-time box check (build/parse/providers/pdf_boxes.py) on real PDF pages, and the quote matching
it uses (build/core/quote_match.py): every real block's box holds its words; a deliberately wrong box
does not; hyphenation across lines, CJK line breaks, case and NFKC do not break a match."""

from __future__ import annotations

import copy

import pymupdf
import pytest

from mnote_evidence.build.core.quote_match import holds_words, match_form, match_tokens, quote_in, similarity
from mnote_evidence.build.parse.providers import pdf as provider
from mnote_evidence.build.parse.providers.pdf_boxes import box_text, check_boxes
from tests.conftest import REPO

REAL = REPO / "tests" / "real_documents"


def page_blocks(path, number: int):
    doc = pymupdf.open(path)
    page = doc[number - 1]
    textpage = page.get_textpage(flags=provider.text_flags())
    return provider._page_blocks_fast(page, textpage, number), textpage.extractWORDS()


@pytest.mark.parametrize(
    "path",
    [
        "manuals/R-FAQ.pdf",
        "manuals/libtasn1.pdf",
        "manuals/shared-mime-info-spec.pdf",
        "ocr/gnupg-help-zh_CN.pdf",
    ],
)
def test_every_block_of_a_real_manual_holds_its_words(path):
    doc = pymupdf.open(REAL / path)
    checked = 0
    for number in range(1, min(doc.page_count, 12) + 1):
        blocks, words = page_blocks(REAL / path, number)
        check_boxes(blocks, words)
        assert all(b.box_holds_text is True for b in blocks), [
            b.text[:60] for b in blocks if not b.box_holds_text
        ]
        checked += len(blocks)
    assert checked >= 20


def test_a_wrong_box_is_caught():
    """Each block given its neighbour's box: the words inside are another paragraph's."""
    blocks, words = page_blocks(REAL / "manuals/shared-mime-info-spec.pdf", 2)
    long = [b for b in blocks if len(b.text.split()) >= 8]
    assert len(long) >= 3
    swapped = [copy.copy(b) for b in long]
    for b, other in zip(swapped, long[1:] + long[:1]):
        b.bbox = other.bbox
    check_boxes(swapped, words)
    assert not any(b.box_holds_text for b in swapped)
    shrunk = copy.copy(long[0])
    x0, y0, x1, y1 = shrunk.bbox
    shrunk.bbox = [
        x0,
        y0,
        x1,
        y0 + (y1 - y0) / 3,
    ]  # only the first line(s): the rest of the words are outside
    check_boxes([shrunk], words)
    assert shrunk.box_holds_text is False


def test_hyphenated_words_across_lines_are_rejoined_in_the_box():
    blocks, words = page_blocks(REAL / "manuals/R-FAQ.pdf", 8)
    hyphenated = [b for b in blocks if "-\n" in box_text(words, b.bbox)]
    assert hyphenated, "page 8 of the R FAQ has a word hyphenated at line ends"
    b = hyphenated[0]
    raw = " ".join(box_text(words, b.bbox).split())
    assert not set(b.text.split()) <= set(raw.split())  # word for word the box differs from the block...
    assert holds_words(box_text(words, b.bbox), b.text)  # ...normalised it holds it


def test_normalisation():
    assert match_tokens("Thread scope 线程作用域 charac-\nteristics ﬁle Ａ_b") == [
        "thread",
        "scope",
        "线",
        "程",
        "作",
        "用",
        "域",
        "characteristics",
        "file",
        "a",
        "b",
    ]
    assert match_form("可以\n安全") == match_form("可以安全")
    form = match_form("The Upsilon particle is well-known.")
    assert quote_in("upsilon PARTICLE", form) and not quote_in("psi", form)
    assert quote_in("…silon particle is…", form)  # a cut may fall inside a word
    assert quote_in("well known", form) is False and quote_in("well-\nknown", form)
    assert not quote_in("… ,", form)  # no words: nothing to match
    form = match_form("Check if package-anchored Rd cross-references are to files")
    assert quote_in("-references are to files", form)  # a chunk's edge inside a hyphenated word
    assert not quote_in("references are to files", form) and quote_in("Check if package-", form)
    assert similarity("the particle is famous", "The Upsilon particle is well-known.") == 0.75
