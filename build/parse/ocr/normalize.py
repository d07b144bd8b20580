"""Text normalisation of OCR output, so substring search and citation matching work (SPEC §4).

OCR engines split CJK runs into "words" (Tesseract: 线程 作用 域) and sometimes
space out Latin letters (RapidOCR: R u s t). Normalising changes the text only:
each line keeps the box the engine reported, in the image's own coordinates.

Latin spacing is the engine's own (`respaced`): RapidOCR's line text is already
spaced as a reader sees it, in Latin lines and in lines that mix Chinese and Latin
text alike; in a Latin line a space is removed only where the engine's word boxes
show it split a word. Digits and Latin letters are never joined to, or turned into,
CJK characters; CJK runs only lose the spaces between their characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mnote_evidence.build.core.text import CJK_RUN, is_cjk

_SPACED_LETTERS = re.compile(r"(?<![A-Za-z])(?:[A-Za-z] ){2,}[A-Za-z](?![A-Za-z])")
_CJK_PUNCT = "，。、；：？！（）【】《》「」『』—…·"


@dataclass
class OcrLine:
    text: str
    bbox: list[float]
    confidence: float


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


REVISION = "3"  # part of every engine version (so cached OCR lines are re-read when this changes)
_LATIN = re.compile(r"[A-Za-z]")
_WORD_LETTERS = frozenset("aAI")  # one-letter English words: a lone one is not a fragment
TOUCH_GAP = 0.1  # word boxes: "touching" = at most 10 % of a character width apart


def respaced(text: str, pieces: list[tuple[str, float, float]]) -> str:
    """The engine's line text, with a space removed only where its boxes show a split word.

    `pieces` are RapidOCR's word boxes as (text, x0, x1), in line order. A line with CJK keeps the
    engine's spacing: its pieces are single characters placed from the recogniser's columns, and on
    rendered Chinese manuals the gap across a real space is often 0 while gaps inside a word reach 0.9
    of a character width, so no gap tells a space from a split there. For Latin lines the pieces are
    words, whose gaps cannot tell a real space from a split either, so only lone letters that are not
    words (`i cons`, `T h re ad`) are joined to the touching word next to them; a touching run with two
    or more such letters is joined whole. Any mismatch between pieces and text leaves the engine's
    text as it is."""
    tokens = text.split()
    spans = None if has_cjk(text) or len(tokens) < 2 else _token_spans(tokens, pieces)
    if spans is None:
        return " ".join(tokens)
    widths = sorted((x1 - x0) / len(t.strip()) for t, x0, x1 in pieces if t.strip() and x1 > x0)
    width = widths[len(widths) // 2] if widths else 0.0
    latin = [bool(_LATIN.fullmatch(a[-1]) and _LATIN.fullmatch(b[0])) for a, b in zip(tokens, tokens[1:])]
    gaps = [nxt[0] - cur[1] for cur, nxt in zip(spans, spans[1:])]
    join = _fragment_joins(tokens, [lat and gap <= TOUCH_GAP * width for lat, gap in zip(latin, gaps)])
    out = tokens[0]
    for joined, token in zip(join, tokens[1:]):
        out += ("" if joined else " ") + token
    return out


def _token_spans(tokens: list[str], pieces) -> list[tuple[float, float]] | None:
    """(x0 of its first piece, x1 of its last) per token; None if pieces do not spell the tokens."""
    spans, i = [], 0
    for token in tokens:
        acc, x0, x1 = "", None, None
        while i < len(pieces) and len(acc) < len(token):
            text, p0, p1 = pieces[i]
            acc += text.strip()
            x0 = p0 if x0 is None else x0
            x1 = p1
            i += 1
        if acc != token:
            return None
        spans.append((x0, x1))
    return spans if i == len(pieces) else None


def _fragment_joins(tokens: list[str], touching: list[bool]) -> list[bool]:
    """Which boundaries of a Latin line to close: around lone non-word letters, inside touching runs."""
    lone = [len(t) == 1 and _LATIN.fullmatch(t) is not None and t not in _WORD_LETTERS for t in tokens]
    join = [False] * len(touching)
    start = 0
    for end in range(len(tokens)):
        if end < len(touching) and touching[end]:
            continue
        if sum(lone[start : end + 1]) >= 2:
            join[start:end] = [True] * (end - start)
        else:
            for k in range(start, end):
                join[k] = lone[k] or lone[k + 1]
        start = end + 1
    return join


def lines_text(lines: list[OcrLine]) -> str:
    return "\n".join(line.text for line in lines)


def has_cjk(text: str) -> bool:
    return bool(CJK_RUN.search(text))
