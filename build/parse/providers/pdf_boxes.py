"""Does a PDF block's box hold its words? Checked once, at parse time.

A citation or search result that opens a PDF at a box promises that the words it shows are inside
it. The page is read a second way, word by word (`TextPage.extractWORDS`), and the words whose centre
lies inside the block's stored box must hold every word of its text, compared by `core/quote_match.py`.
The answer is `Block.box_holds_text`; a box that fails stays in the sidecar but the locator drops to
`page` precision. Per block only the words of its vertical band are looked at. OCR lines are not
checked (the line's text is the engine's).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from mnote_evidence.build.core.quote_match import holds_words

SLACK = 0.5  # points: the stored box is rounded to 0.01 pt and clamped to the page


class BoxedText(Protocol):
    bbox: list[float]
    text: str
    box_holds_text: bool | None


def _inside(words: Sequence[tuple], bbox: Sequence[float], centres: list[float] | None) -> list[tuple]:
    x0, y0, x1, y1 = bbox
    lo, hi = 0, len(words)
    if centres is not None:
        lo, hi = bisect_left(centres, y0 - SLACK), bisect_right(centres, y1 + SLACK)
    return [
        w
        for w in words[lo:hi]
        if x0 - SLACK <= (w[0] + w[2]) / 2 <= x1 + SLACK and y0 - SLACK <= (w[1] + w[3]) / 2 <= y1 + SLACK
    ]


def box_text(words: Sequence[tuple], bbox: Sequence[float], centres: list[float] | None = None) -> str:
    """The words (PyMuPDF `extractWORDS` tuples, sorted by vertical centre when `centres` is given)
    whose centre lies inside `bbox`, in MuPDF's reading order, a line break between lines."""
    inside = sorted(_inside(words, bbox, centres), key=lambda w: (w[5], w[6], w[7]))
    out, line = [], None
    for w in inside:
        if line is not None:
            out.append(" " if (w[5], w[6]) == line else "\n")
        out.append(w[4])
        line = (w[5], w[6])
    return "".join(out)


def check_boxes(blocks: Sequence[BoxedText], words: Sequence[tuple]) -> None:
    """Set `box_holds_text` on each of a page's blocks from the page's words."""
    ordered = sorted(words, key=lambda w: (w[1] + w[3]) / 2)
    centres = [(w[1] + w[3]) / 2 for w in ordered]
    for b in blocks:
        inside = _inside(ordered, b.bbox, centres)
        if Counter(b.text.split()) <= Counter(w[4] for w in inside):
            b.box_holds_text = True
        else:  # hyphenation, CJK line breaks, ligatures: compare normalised words
            b.box_holds_text = holds_words(box_text(inside, b.bbox), b.text)


def check_page(blocks: Sequence[BoxedText], textpage) -> None:
    """`check_boxes` with the words of the text page the blocks were read from (`pymupdf.TextPage`)."""
    if blocks:
        check_boxes(blocks, textpage.extractWORDS())
