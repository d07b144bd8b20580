"""Text normalisation of OCR output, so substring search and citation matching work.

OCR engines split CJK runs into "words" (Tesseract: 线程 作用 域) and sometimes
space out Latin letters (RapidOCR: R u s t). Normalising changes the text only:
each line keeps the box the engine reported, in the image's own coordinates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mnote_evidence.build.text import CJK_RUN, is_cjk

_SPACED_LETTERS = re.compile(r"(?<![A-Za-z])(?:[A-Za-z] ){2,}[A-Za-z](?![A-Za-z])")
_CJK_PUNCT = "，。、；：？！（）【】《》「」『』—…·"


@dataclass
class OcrLine:
    text: str
    bbox: list[float]  # [x0, y0, x1, y1] in pixels of the recognised image
    confidence: float  # 0..1


def _joinable(a: str, b: str) -> bool:
    return (is_cjk(a) or a in _CJK_PUNCT) and (is_cjk(b) or b in _CJK_PUNCT)


def normalize_line(text: str) -> str:
    """Drop spaces between CJK characters, re-join spaced-out Latin letters, collapse whitespace."""
    words = text.split()
    out = ""
    for word in words:
        if out and not _joinable(out[-1], word[0]):
            out += " "
        out += word
    return _SPACED_LETTERS.sub(lambda m: m.group(0).replace(" ", ""), out)


def lines_text(lines: list[OcrLine]) -> str:
    return "\n".join(line.text for line in lines)


def has_cjk(text: str) -> bool:
    return bool(CJK_RUN.search(text))
