"""OCR against ground truth: real PDF pages rendered to images, compared with their own text layer.

Shared by `tests/ocr/test_ocr_truth.py` (a few committed pages, targets asserted) and
`bench/ocr_truth.py` (more pages, both engines, both resolutions). The truth is the page's
text layer, never our own output. Latin text is compared as a multiset of words after NFKC,
case folding and splitting at anything that is not a letter or digit (punctuation and
hyphenation are not what is measured); CJK text per character (multiset of CJK characters).
"""

from __future__ import annotations

import re
import tempfile
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from mnote_evidence.build.core.text import is_cjk
from mnote_evidence.build.parse.ocr.normalize import lines_text

_WORD = re.compile(r"[^\W_]+")


def latin_words(text: str) -> Counter:
    text = unicodedata.normalize("NFKC", text).casefold()
    return Counter(w for tok in _WORD.findall(text) if (w := "".join(c for c in tok if not is_cjk(c))))


def cjk_chars(text: str) -> Counter:
    return Counter(c for c in unicodedata.normalize("NFKC", text) if is_cjk(c))


@dataclass
class Score:
    recall: float
    precision: float
    truth: int  # units in the truth

    def to_json(self) -> dict:
        return {
            "recall": round(self.recall, 4),
            "precision": round(self.precision, 4),
            "truthUnits": self.truth,
        }


def compare(truth: Counter, found: Counter) -> Score:
    hit = sum((truth & found).values())
    return Score(hit / max(1, sum(truth.values())), hit / max(1, sum(found.values())), sum(truth.values()))


def page_truth_and_ocr(engine, pdf: Path, page: int, dpi: int) -> tuple[str, str]:
    """(text layer, OCR text) of one page rendered in grey at `dpi`."""
    with pymupdf.open(pdf) as doc, tempfile.TemporaryDirectory() as tmp:
        png = Path(tmp) / "page.png"
        doc[page - 1].get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).save(png)
        return doc[page - 1].get_text(), lines_text(engine.recognise(png))


def score_page(engine, pdf: Path, page: int, dpi: int) -> dict[str, Score]:
    truth, text = page_truth_and_ocr(engine, pdf, page, dpi)
    out = {"words": compare(latin_words(truth), latin_words(text))}
    if cjk_chars(truth):
        out["cjk"] = compare(cjk_chars(truth), cjk_chars(text))
    return out
