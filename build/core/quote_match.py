"""Quote matching, defined once: is a quote's wording in a text? (SPEC §10).

Used at build time (does the text PyMuPDF reads inside a PDF block's box hold the block's words?,
`build/parse/providers/pdf_boxes.py`) and at query time (is a search result's or citation's quote in its
block?, `functions/search/quote_check.py`; `verify_quote`, `functions/handlers/verify.py`).

Normalisation (`match_tokens`), the same for every side of a comparison:
- Unicode NFKC (ligatures, full-width forms, compatibility characters);
- a hyphen between two letters, with any whitespace after it, joins them: a word hyphenated across
  a line break (`charac-\\nteristics`) reads like the re-joined word in a block (`characteristics`),
  and `well-known` like `wellknown`; soft hyphens vanish;
- case-folded (Latin case);
- words are runs of letters and digits (punctuation, quotes and `_` separate them), except that
  every CJK character is a word of its own (CJK by characters: a line break or a space inside a
  CJK run changes nothing).

Invariants: matching compares whole words in order (a quote `psi` is not in `Upsilon`), except at
a `…` (or `...`) cut or a hyphen at the quote's edge (`-references`, cut from `cross-references`),
where the word next to it may be a part of a longer word; a quote with no words matches nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from difflib import SequenceMatcher

from mnote_evidence.build.core.text import CJK_RUN

_HYPHEN = re.compile(r"(?<=[^\W\d_])[-\u2010\u2011]\s*(?=[^\W\d_])")
_SOFT_HYPHEN = "\u00ad"
_HYPHENS = frozenset("-\u2010\u2011")
_WORD = re.compile(r"[^\W_]+")
_CUT = re.compile(r"…|\.\.\.")


def _spaced(run: re.Match[str]) -> str:
    return f" {' '.join(run.group())} "


def match_tokens(text: str) -> list[str]:
    """The words of `text` as matching compares them (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text or "").replace(_SOFT_HYPHEN, "")
    text = _HYPHEN.sub("", text).casefold()
    if CJK_RUN.search(text):
        text = CJK_RUN.sub(_spaced, text)
    return _WORD.findall(text)


def match_form(text: str) -> str:
    """`text` normalised for matching: its words joined by single spaces."""
    return " ".join(match_tokens(text))


def quote_in(quote: str, form: str) -> bool:
    """Every piece of `quote` between `…` cuts occurs, as whole words, in `form` (a `match_form`);
    the word next to a cut may be part of a longer word there."""
    pieces = _CUT.split(quote or "")
    haystack = f" {form} "
    found = 0
    for i, piece in enumerate(pieces):
        words = match_form(piece)
        if not words:
            continue
        # after a cut, or a hyphen that joins it to a word before: the first word may be the tail of a
        # longer one there (`-references` of `cross-references`); likewise the last word before a cut
        left = "" if i > 0 or piece.lstrip()[:1] in _HYPHENS else " "
        right = "" if i < len(pieces) - 1 or piece.rstrip()[-1:] in _HYPHENS else " "
        if f"{left}{words}{right}" not in haystack:
            return False
        found += 1
    return found > 0


def holds_words(outer: str, inner: str) -> bool:
    """Every word of `inner` (counted) is among the words of `outer`: does a box's text hold a block's?
    (A text without words, such as a row of dots, is held by any box.)"""
    return Counter(match_tokens(inner)) <= Counter(match_tokens(outer))


def similarity(quote: str, text: str) -> float:
    """Share of the quote's words found in `text` in the quote's order (0..1; 1.0 when all are)."""
    q = match_tokens(_CUT.sub(" ", quote or ""))
    if not q:
        return 0.0
    t = match_tokens(text)
    matcher = SequenceMatcher(None, q, t, autojunk=False)
    return round(sum(m.size for m in matcher.get_matching_blocks()) / len(q), 4)
