"""OCR lines of a page that also has a text layer: only those that add text are kept.

A page with native text and screenshots is OCR'd whole, so the engine reads the native text too. A
line is dropped when the text layer already holds it: where it sits (its box lies mostly inside a
native block's box), or anywhere on the page (most of its characters match the page's native text in
order: a screenshot that shows a copy of a paragraph). So a native line and its OCR copy are never both
indexed, and the native line keeps its role; what only the images show stays.
"""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher

INSIDE = 0.5  # share of an OCR line's box inside a native block's box that makes it that block's copy
HELD = 0.8  # share of an OCR line's characters matched in the page's native text that makes it a copy
MIN_RUN = 3  # matched runs shorter than this are chance (common letter pairs), not a copy
MIN_CHARS = 6  # shorter lines (a button, a menu entry) are dropped by position only

_NOT_TEXT = re.compile(r"[\W_]+")


def compact(text: str) -> str:
    """Letters, digits and CJK characters only, NFKC and case-folded: what OCR and a text layer share
    whatever spacing and punctuation each has."""
    return _NOT_TEXT.sub("", unicodedata.normalize("NFKC", text).casefold())


def _inside(box: list[float], other: list[float]) -> float:
    w = min(box[2], other[2]) - max(box[0], other[0])
    h = min(box[3], other[3]) - max(box[1], other[1])
    area = (box[2] - box[0]) * (box[3] - box[1])
    return w * h / area if w > 0 and h > 0 and area > 0 else 0.0


def new_lines(lines: list, native: list[tuple[list[float], str]]) -> list:
    """The OCR lines (objects with `.bbox` and `.text`, page coordinates) that the page's native blocks
    (bbox, text) do not already hold."""
    if not native:
        return list(lines)
    page_text = compact(" ".join(text for _, text in native))
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(page_text)
    kept = []
    for line in lines:
        if any(_inside(line.bbox, box) >= INSIDE for box, _ in native):
            continue
        mine = compact(line.text)
        if len(mine) >= MIN_CHARS:
            if mine in page_text:
                continue
            matcher.set_seq1(mine)
            matched = sum(m.size for m in matcher.get_matching_blocks() if m.size >= MIN_RUN)
            if matched >= HELD * len(mine):
                continue
        kept.append(line)
    return kept
