"""Page furniture: running headers, footers and page numbers of paged documents (SPEC §6).

A pure function over the pages' blocks: `furniture_flags` says, per block, whether it is furniture.
Furniture sits between the body and the page's edge: a block can be furniture only when every block
wholly above it (or wholly below it) is furniture too, wherever on the page that is. Such a block is
- a *page number* (`12`, `iv`, `Page 3`, `3 of 17`) whose value runs with the page index: the same
  offset on `MIN_SEQUENCE` pages, each within `MAX_GAP` pages of the next (arabic and roman apart), at
  any height; or
- a *running line*: its text (with a letter in it) on `MIN_REPEATS` pages within `SAME_Y` of the same
  height, on a *furniture slot* (a height where such lines fill `LINE_SHARE` of the pages with an edge
  block there: a short body line repeats at the body's last baseline on a few pages, a header on nearly
  all). Text that differs only in its numbers counts as the same when one of them is the page number.
Invariants: body text never qualifies by position alone; documents of fewer than `MIN_SEQUENCE` pages
have none; one flag per input block, in input order.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

SAME_Y = 4.0  # points: "the same position" across pages
EPS = 1.0  # points: a block ending this little below another's top is still wholly above it
MIN_REPEATS = 3
MIN_SEQUENCE = 3
MAX_GAP = 8  # pages: a numbered page this far from the last still continues its sequence
LINE_SHARE = 0.5
MAX_FURNITURE_CHARS = 120

_ROMAN = r"[ivxlcdm]{1,7}"
PAGE_NUMBER = re.compile(
    rf"^(?:(?:page|p\.|seite|página|第)\s*)?[-–—(\[]?\s*(?:\d{{1,4}}|{_ROMAN})\s*[-–—)\]]?"
    rf"(?:\s*(?:of|/|von|de|页|頁)\s*\d{{1,4}})?\s*(?:页|頁)?$",
    re.I,
)
_VALID_ROMAN = r"m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
_NUMBER = re.compile(
    rf"(?<!\d)(\d{{1,4}})(?!\d)|(?<![^\W\d_])(?=[ivxlcdm])({_VALID_ROMAN})(?![^\W\d_])",
    re.I,
)
_LETTER = re.compile(r"[^\W\d_]")
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


@dataclass(frozen=True)
class PageBlock:
    """What detection needs of a block: its page, box (top-left origin) and text."""

    page: int
    bbox: list[float]
    text: str


def _roman(s: str) -> int:
    values = [_ROMAN_VALUES[c] for c in s.lower()]
    return sum(-v if v < w else v for v, w in zip(values, values[1:] + [0]))


def _numbers(text: str) -> list[tuple[str, int, tuple[int, int]]]:
    """(kind "a" | "r", value, span) of each arabic or roman number in `text`."""
    out = []
    for m in _NUMBER.finditer(text):
        if m.group(1):
            out.append(("a", int(m.group(1)), m.span()))
        elif m.group(2):
            out.append(("r", _roman(m.group(2)), m.span()))
    return out


@dataclass
class _Line:
    page: int
    side: str  # "top" | "bottom": the half of the page it sits in
    y: float  # its edge on that side: the top of a header, the bottom of a footer
    text: str
    numbers: list[tuple[str, int, tuple[int, int]]]
    page_number: bool  # the whole text is a page number
    short: bool  # at most MAX_FURNITURE_CHARS: only such text can be furniture
    exact: bool = False  # the same text on MIN_REPEATS pages at this height
    numbered: bool = False  # the same text but for its numbers there


def furniture_flags(blocks: list[PageBlock], heights: dict[int, float]) -> list[bool]:
    """One flag per block: True for a running header, footer or page number."""
    lines: dict[int, _Line] = {}
    for i, b in enumerate(blocks):
        text = " ".join(b.text.split())
        height = heights.get(b.page) or 0.0
        if text and height > 0:
            side = "top" if b.bbox[1] + b.bbox[3] < height else "bottom"
            short = len(text) <= MAX_FURNITURE_CHARS
            lines[i] = _Line(
                b.page,
                side,
                b.bbox[1] if side == "top" else b.bbox[3],
                text,
                _numbers(text) if short else [],
                short and bool(PAGE_NUMBER.match(text)),
                short,
            )
    _mark_repeats(lines)
    maybe = {i for i, ln in lines.items() if ln.page_number or ln.exact or ln.numbered}
    exposed = _exposed(blocks, maybe)
    edge = [i for i in exposed if i in lines and lines[i].numbers]
    # the sequence comes from page numbers and repeated numbered lines only: a body line's numbers
    # (section numbers, counts) would make chance sequences
    runs = _sequences(lines[i] for i in maybe & exposed if lines[i].page_number or lines[i].numbered)

    def in_sequence(ln: _Line) -> bool:  # a number that continues a run on this page
        return any(_near_run(runs.get((kind, value - ln.page), []), ln.page) for kind, value, _ in ln.numbers)

    numbered = {i for i in edge if in_sequence(lines[i])}  # a header holding its page's number
    running = numbered | {i for i in maybe & exposed if lines[i].exact or lines[i].page_number}
    on_slot = _slots(lines, exposed, running)
    final = {i for i in running if i in on_slot or (i in numbered and lines[i].page_number)}
    exposed = _exposed(blocks, final)
    return [i in final and i in exposed for i in range(len(blocks))]


def _mark_repeats(lines: dict[int, _Line]) -> None:
    """Set `exact` / `numbered` on lines whose text (numbers aside) repeats at their height."""
    for attr, key in (("exact", _exact_key), ("numbered", _numbered_key)):
        groups: dict[tuple[str, str], list[int]] = {}
        for i, ln in lines.items():
            k = key(ln)
            if ln.short and k and _LETTER.search(k):
                groups.setdefault((ln.side, k), []).append(i)
        for members in groups.values():
            if len({lines[i].page for i in members}) < MIN_REPEATS:
                continue
            near = _Near([(lines[i].y, i) for i in members])
            for i in members:
                if len({lines[j].page for j in near.within(lines[i].y)}) >= MIN_REPEATS:
                    setattr(lines[i], attr, True)


def _exact_key(ln: _Line) -> str:
    return ln.text.lower()


def _numbered_key(ln: _Line) -> str:
    """The text with its numbers as `#`; empty when it has none (the exact key covers it)."""
    if not ln.numbers:
        return ""
    text, last = [], 0
    for _kind, _value, (a, z) in ln.numbers:
        text += [ln.text[last:a], "#"]
        last = z
    return ("".join(text) + ln.text[last:]).lower()


def _exposed(blocks: list[PageBlock], furniture: set[int]) -> set[int]:
    """Blocks with only `furniture` wholly above them, or only `furniture` wholly below them."""
    by_page: dict[int, list[int]] = {}
    for i, b in enumerate(blocks):
        by_page.setdefault(b.page, []).append(i)
    out = set()
    for idx in by_page.values():
        body = [blocks[i].bbox for i in idx if i not in furniture]
        first_end = min((bb[3] for bb in body), default=float("inf"))  # the body's topmost bottom edge
        last_start = max((bb[1] for bb in body), default=float("-inf"))
        for i in idx:
            y0, y1 = blocks[i].bbox[1], blocks[i].bbox[3]
            if first_end > y0 + EPS or last_start < y1 - EPS:
                out.add(i)
    return out


def _sequences(lines) -> dict[tuple[str, int], list[int]]:
    """(kind, printed number minus page index) -> the sorted pages of its runs: at least `MIN_SEQUENCE`
    pages with that offset, each within `MAX_GAP` pages of the next (a number that runs with the pages)."""
    pages: dict[tuple[str, int], set[int]] = {}
    for ln in lines:
        for kind, value, _span in ln.numbers:
            pages.setdefault((kind, value - ln.page), set()).add(ln.page)
    out: dict[tuple[str, int], list[int]] = {}
    for key, found in pages.items():
        run: list[int] = []
        for page in [*sorted(found), None]:
            if run and (page is None or page - run[-1] > MAX_GAP):
                if len(run) >= MIN_SEQUENCE:
                    out.setdefault(key, []).extend(run)
                run = []
            if page is not None:
                run.append(page)
    return out


def _near_run(pages: list[int], page: int) -> bool:
    """`page` lies within `MAX_GAP` of a page of the runs `pages` (sorted)."""
    k = bisect.bisect_left(pages, page)
    return any(abs(pages[j] - page) <= MAX_GAP for j in (k - 1, k) if 0 <= j < len(pages))


def _slots(lines: dict[int, _Line], exposed: set[int], running: set[int]) -> set[int]:
    """The running lines on a furniture slot: at their height (same side), running lines on
    `MIN_REPEATS` pages and on `LINE_SHARE` of the pages with an edge line there."""
    out = set()
    for side in ("top", "bottom"):
        edge = [i for i in exposed if i in lines and lines[i].side == side]  # long blocks count too
        near = _Near([(lines[i].y, i) for i in edge])
        seen: dict[float, bool] = {}
        for i in edge:
            if i not in running:
                continue
            y = lines[i].y
            if y not in seen:
                mates = near.within(y)
                pages = {lines[j].page for j in mates}
                found = {lines[j].page for j in mates if j in running}
                seen[y] = len(found) >= MIN_REPEATS and len(found) >= LINE_SHARE * len(pages)
            if seen[y]:
                out.add(i)
    return out


class _Near:
    """Lines by their edge's y, for "which lie within `SAME_Y` of y" in log time (a long PDF has a
    header on each of thousands of pages). Same answers as the pairwise `abs(y2 - y) <= SAME_Y`."""

    def __init__(self, items: list[tuple[float, int]]):
        items.sort()
        self.ys = [y for y, _ in items]
        self.ids = [i for _, i in items]

    def within(self, y: float) -> list[int]:
        lo = bisect.bisect_left(self.ys, y - SAME_Y)
        hi = bisect.bisect_right(self.ys, y + SAME_Y)
        return [j for k, j in zip(range(lo, hi), self.ids[lo:hi]) if abs(self.ys[k] - y) <= SAME_Y]
