"""Where a PDF's outline entries start: the block at the entry's destination point (SPEC §3).

An outline entry names a page and, mostly, a point on it (MuPDF resolves named and explicit
destinations to page coordinates, top-left origin). The section starts at the first body block at or
just below that point; the block whose text is the entry's title becomes the section's heading: one of
the next few blocks (what lies between, such as "Chapter 1" above its title, is in the section), or a
block holding only the title further down, above the next entry's point (the section starts there).
Titles compare by `title_key`: section numbers ("9.7.7", "Chapter 1:"), whitespace (the outline writes
"到 CD", the page "到CD"), punctuation of any width and case do not count. An entry without a point
(or sharing it with another entry) is placed by that text match on its page, else at the page's first
body block. Starts never go back in reading order, so sections nest as the outline does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mnote_evidence.build.core.model import ROLE_BODY
from mnote_evidence.build.core.text import nfkc, normalise

if TYPE_CHECKING:
    import pymupdf

# a heading's bottom lies at least this far below its destination point (the point is above the heading,
# at most a point or two below its top, or on its baseline: a descender's depth above its bottom)
POINT_SLACK = 1.0
# the heading is one of the first few blocks below the point (a chapter's point is the page top); further
# down only a block that holds nothing but the title is taken for it
MAX_BLOCKS_AFTER_POINT = 4
# how much of a block's key may come before the title: "chapter1", "appendixa", "第9章", "9610"
MAX_NUMBER_PREFIX = 16
_TITLE_CHARS = 48  # a long title matches on its start (the page may wrap or shorten it)
_LEADING_NUMBER = re.compile(r"^\s*[\d.]+\s*")


class _Block(Protocol):
    page: int
    bbox: list[float]
    text: str
    role: str


@dataclass(frozen=True)
class Entry:
    level: int
    title: str
    page: int  # 1-based; < 1 when the entry points outside the document
    y: float | None  # top-left page coordinates; None when the destination names no point


@dataclass(frozen=True)
class Start:
    position: int  # index of the section's first block in reading order
    level: int
    title: str
    heading: int | None  # index of the entry's heading block (`position` or a little after), if found


def outline_entries(doc: pymupdf.Document) -> list[Entry]:
    """The outline in document order (`doc.outline`, the tree MuPDF resolved), [] when there is none."""
    out: list[Entry] = []
    if not doc.get_toc(simple=True):  # `doc.outline` is then an empty node, not None
        return out

    def walk(node, level: int) -> None:
        while node is not None:
            y = node.y if node.page is not None and node.page >= 0 else None
            point = None if y is None or math.isnan(y) else float(y)
            out.append(
                Entry(level, node.title or "", (node.page if node.page is not None else -2) + 1, point)
            )
            if node.down is not None:
                walk(node.down, level + 1)
            node = node.next

    try:
        walk(doc.outline, 1)
    except (RuntimeError, ValueError):  # a broken outline is no outline
        return []
    return out


def title_key(text: str) -> str:
    """Letters and digits only, NFKC and case-folded: "9.6.11 使用SMART 预测" and "使用 smart 预测"
    differ only by the number prefix."""
    return "".join(ch for ch in nfkc(text).casefold() if ch.isalnum())


def is_title_of(block_text: str, title: str) -> bool:
    """Whether a block's text is `title` (its start, past a short number prefix such as "9.7.7")."""
    want = title_key(_LEADING_NUMBER.sub("", nfkc(title))) or title_key(title)
    have = title_key(block_text)
    if not want or not have:
        return False
    at = have.find(want[:_TITLE_CHARS])
    if 0 <= at <= MAX_NUMBER_PREFIX:
        return True
    # a heading wrapped into two blocks: this one holds the title's start
    bare = title_key(_LEADING_NUMBER.sub("", nfkc(block_text)))
    return len(bare) >= min(8, len(want)) and want.startswith(bare)


def outline_starts(entries: list[Entry], raw: list[_Block]) -> list[Start]:
    """A start for each entry whose page is in the document, in outline order."""
    on_page: dict[int, list[int]] = {}
    for pos, b in enumerate(raw):
        if b.role == ROLE_BODY:  # a running header is never where a section starts
            on_page.setdefault(b.page, []).append(pos)
    points: dict[int, list[float]] = {}
    for e in entries:
        if e.y is not None:
            points.setdefault(e.page, []).append(e.y)
    starts: list[Start] = []
    floor = 0
    for e in entries:
        if e.y is not None and points[e.page].count(e.y) > 1:  # one point for several entries locates none
            e = Entry(e.level, e.title, e.page, None)
        found = _place(e, raw, on_page, points.get(e.page, []), floor)
        if found is None:
            continue
        pos, heading = found
        if pos < floor:  # never before the previous entry: the tree nests in outline order
            pos, heading = floor, heading if heading is not None and heading >= floor else None
        floor = pos
        starts.append(Start(pos, e.level, normalise(e.title), heading))
    return starts


def _place(e: Entry, raw: list[_Block], on_page: dict[int, list[int]], points: list[float], floor: int):
    if e.page < 1:
        return None
    here = on_page.get(e.page, [])
    if e.y is None:
        for pos in (p for p in here if p >= floor):
            if is_title_of(raw[pos].text, e.title):
                return pos, pos
        return (here[0], None) if here else _next_page_start(e.page, on_page)
    below = sorted((p for p in here if _reaches_below(raw[p], e.y)), key=lambda p: raw[p].bbox[1])
    if not below:  # the point is under the page's last block: the section starts on a later page
        return _next_page_start(e.page, on_page)
    next_point = min((y for y in points if y > e.y), default=math.inf)
    for n, pos in enumerate(below):
        if _reaches_below(raw[pos], next_point):
            break
        near = n < MAX_BLOCKS_AFTER_POINT
        if (near or _only_title(raw[pos].text, e.title)) and is_title_of(raw[pos].text, e.title):
            # what lies between the point and the heading ("Chapter 1" above its title) is the section's
            return (min(below[0], pos), pos) if near else (pos, pos)
    return below[0], None


def _reaches_below(block: _Block, y: float) -> bool:
    """Whether `block` is at or below a point at `y`: it ends below it. TeX puts the point a little
    above the heading (or, by a strut, just below its top), DocBook's FO processors on its baseline."""
    return block.bbox[3] > y + POINT_SLACK


def _only_title(text: str, title: str) -> bool:
    return len(title_key(text)) <= len(title_key(title)) + MAX_NUMBER_PREFIX


def _next_page_start(page: int, on_page: dict[int, list[int]]):
    later = [p for p in on_page if p > page]
    return (on_page[min(later)][0], None) if later else None
