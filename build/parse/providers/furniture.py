"""Page furniture: running headers, footers and page numbers of paged documents (SPEC §6).

A pure function over the pages' blocks: `furniture_flags` says, per block, whether it is furniture.
Only *edge lines* can be (within `EDGE_TOLERANCE` of the page's top- or bottommost block, in the outer
`BAND`). An edge line is a *candidate* when it is a page number (`12`, `iv`, `Page 3`, `3 of 17`) or
its text, digits ignored, is an edge line at about the same height (`SAME_Y`) on `MIN_REPEATS` pages.
A height is a *furniture line* when candidates sit there on `MIN_LINE_PAGES` pages and on `LINE_SHARE`
of the pages with an edge line there (a short body line repeats at a page's foot on a few pages, a
running header on nearly all). Furniture: the candidates on a furniture line, short numbered lines
there, and a bare number matching its page's position plus the document's usual offset.
Invariants: body text never qualifies by position alone; documents of fewer than `MIN_LINE_PAGES`
pages have none; one flag per input block, in input order.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

BAND = 0.12
EDGE_TOLERANCE = 3.0  # points: lines this close to the page's edge-most line are edge lines too
SAME_Y = 4.0  # points: "the same position" across pages
MIN_REPEATS = 2
MIN_LINE_PAGES = 3
LINE_SHARE = 0.5  # ... and their share of the pages with an edge line at that height
MAX_FURNITURE_CHARS = 120

_ROMAN = r"[ivxlcdm]{1,7}"
PAGE_NUMBER = re.compile(
    rf"^(?:(?:page|p\.|seite|página|第)\s*)?[-–—(\[]?\s*(?:\d{{1,4}}|{_ROMAN})\s*[-–—)\]]?"
    rf"(?:\s*(?:of|/|von|de|页|頁)\s*\d{{1,4}})?\s*(?:页|頁)?$",
    re.I,
)
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class PageBlock:
    """What detection needs of a block: its page, box (top-left origin) and text."""

    page: int
    bbox: list[float]
    text: str


def _key(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.lower().split()))


def _edge_lines(blocks: list[PageBlock], heights: dict[int, float]) -> list[tuple[int, str, float]]:
    """(block index, "top" | "bottom", y of its outer edge) of every edge line in the outer bands."""
    by_page: dict[int, list[int]] = {}
    for i, b in enumerate(blocks):
        by_page.setdefault(b.page, []).append(i)
    edges = []
    for page, idx in by_page.items():
        height = heights.get(page) or 0.0
        if height <= 0:
            continue
        top = min(blocks[i].bbox[1] for i in idx)
        bottom = max(blocks[i].bbox[3] for i in idx)
        for i in idx:
            _x0, y0, _x1, y1 = blocks[i].bbox
            if y0 <= top + EDGE_TOLERANCE and y1 <= height * BAND:
                edges.append((i, "top", y0))
            elif y1 >= bottom - EDGE_TOLERANCE and y0 >= height * (1 - BAND):
                edges.append((i, "bottom", y1))
    return edges


def furniture_flags(blocks: list[PageBlock], heights: dict[int, float]) -> list[bool]:
    """One flag per block: True for a running header, footer or page number."""
    edges = _edge_lines(blocks, heights)
    texts = {i: " ".join(blocks[i].text.split()) for i, _, _ in edges}
    candidate: dict[int, bool] = {i: bool(PAGE_NUMBER.match(texts[i])) for i, _, _ in edges}
    groups: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for i, band, y in edges:
        groups.setdefault((band, _key(texts[i])), []).append((i, y))
    for members in groups.values():
        near, repeats = _Near([(y, j) for j, y in members]), {}
        for i, y in members:
            if y not in repeats:
                repeats[y] = len({blocks[j].page for j in near.within(y)}) >= MIN_REPEATS
            candidate[i] = candidate[i] or repeats[y]
    flags = [False] * len(blocks)
    bands = {band: _Near([(y, j) for j, b2, y in edges if b2 == band]) for band in ("top", "bottom")}
    lines: dict[tuple[str, float], bool] = {}  # (band, y) -> a furniture line there; headers share a y
    for i, band, y in edges:
        if (band, y) not in lines:
            mates = bands[band].within(y)
            pages = {blocks[j].page for j in mates}
            found = {blocks[j].page for j in mates if candidate[j]}
            lines[band, y] = len(found) >= MIN_LINE_PAGES and len(found) >= LINE_SHARE * len(pages)
        if not lines[band, y]:
            continue  # not a furniture line: body text that happens to sit at the page's edge
        text = texts[i]
        flags[i] = candidate[i] or (len(text) <= MAX_FURNITURE_CHARS and bool(_DIGITS.search(text)))
    offset = _page_offset(blocks, flags)
    for i, _band, _y in edges:  # a lone page number where the others are not (an index page)
        if (
            not flags[i]
            and offset is not None
            and texts[i].isdigit()
            and int(texts[i]) - blocks[i].page == offset
        ):
            flags[i] = True
    return flags


class _Near:
    """Blocks by their edge's y, for "which lie within `SAME_Y` of y" in log time (a long PDF has a
    header on each of thousands of pages). Same answers as the pairwise `abs(y2 - y) <= SAME_Y`."""

    def __init__(self, items: list[tuple[float, int]]):
        items.sort()
        self.ys = [y for y, _ in items]
        self.ids = [i for _, i in items]

    def within(self, y: float) -> list[int]:
        lo = bisect.bisect_left(self.ys, y - SAME_Y)
        hi = bisect.bisect_right(self.ys, y + SAME_Y)
        return [j for k, j in zip(range(lo, hi), self.ids[lo:hi]) if abs(self.ys[k] - y) <= SAME_Y]


def _page_offset(blocks: list[PageBlock], flags: list[bool]) -> int | None:
    """The printed page number minus the page's position, as the furniture found shows it on at least
    `MIN_LINE_PAGES` pages (its first or last number); None when no offset is that common."""
    pages: dict[int, set[int]] = {}
    for b, flag in zip(blocks, flags):
        numbers = _DIGITS.findall(b.text) if flag else []
        for n in {numbers[0], numbers[-1]} if numbers else ():
            pages.setdefault(int(n) - b.page, set()).add(b.page)
    best = max(pages.items(), key=lambda kv: len(kv[1]), default=None)
    return best[0] if best and len(best[1]) >= MIN_LINE_PAGES else None
