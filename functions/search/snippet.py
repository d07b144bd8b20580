"""Search snippets: a window of a block's own text around the query's terms, with highlight offsets (SPEC §9).

The window is cut from the block's stored, unsegmented text (whitespace collapsed), never from the
FTS column: the CJK bigram segmentation (`build/core/text.py`) cannot leak into a snippet.

Invariants:
- matching follows the index: NFKC, case-folded, diacritics removed (unicode61 `remove_diacritics 2`);
  a CJK term matches as a substring, any other term as a whole word (not inside a longer Latin word)
  in its English inflections (`word_forms`: the index stems words, so `homolog` finds `homologs`);
- the window (`SNIPPET_CHARS` characters of text, plus "…" at each cut) covers the most distinct
  terms it can, and is cut at spaces inside Latin text;
- `highlights` are sorted, non-overlapping `[start, end)` pairs in **UTF-16 code units** of the
  snippet text (what JavaScript's `String.slice` takes); `marked` converts them back for Python.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from mnote_evidence.build.core.text import is_cjk

SNIPPET_CHARS = 160
MAX_SNIPPET = SNIPPET_CHARS + 2  # the window plus an ellipsis at each end
ELLIPSIS = "…"
_WORD_CUT = 15  # how far a cut may move to land on a space
_MAX_LEADS = 64


@lru_cache(maxsize=65536)
def _fold(ch: str) -> str:
    """What the index compares for one character: NFKC, case-folded, without combining marks."""
    out = unicodedata.normalize("NFKC", ch).casefold()
    if out.isascii():
        return out
    return "".join(c for c in unicodedata.normalize("NFD", out) if not unicodedata.combining(c))


def _folded(text: str) -> tuple[str, list[int] | None]:
    """The folded text and, unless it is the identity, the original index of each folded character."""
    if text.isascii():
        return text.lower(), None
    parts = [_fold(c) for c in text]
    if all(len(p) == 1 for p in parts):
        return "".join(parts), None
    owner = [i for i, p in enumerate(parts) for _ in p]
    return "".join(parts), owner


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() and not is_cjk(ch)


_ENDINGS = ("ing", "ies", "ied", "es", "ed", "s")  # one is cut off a word for its base, longest first


def word_forms(term: str) -> list[str]:
    """A folded ASCII word of 3+ letters and its English inflections (-s, -es, -ed, -ing, y/ies, a
    final e dropped), found from its base: what the index's Porter stems match, short of derivations."""
    if len(term) < 3 or not (term.isascii() and term.isalpha()):
        return [term]
    base = term
    for end in _ENDINGS:
        if term.endswith(end) and len(term) - len(end) >= 3 and not (end == "s" and term.endswith("ss")):
            base = term[: -len(end)] + ("y" if end in ("ies", "ied") else "")
            break
    root = base[:-1] if base.endswith("e") else base
    forms = {term, base, root + "e", root + "ing", root + "ed"}
    forms |= {b + e for b in (base, root) for e in ("s", "es")}
    if base.endswith("y"):
        forms |= {base[:-1] + "ies", base[:-1] + "ied"}
    return sorted(f for f in forms if len(f) >= 3)


def find_terms(text: str, terms: list[str]) -> list[tuple[int, int, int]]:
    """Every occurrence of each term in `text`: sorted `(start, end, term index)`, code points, merged
    where they overlap (the earlier term's index kept)."""
    folded, owner = _folded(text)
    spans: list[tuple[int, int, int]] = []
    for n, term in enumerate(terms):
        needle = "".join(_fold(c) for c in term)
        if not needle:
            continue
        whole_word = not is_cjk(needle[0])
        for form in word_forms(needle) if whole_word else [needle]:
            at = folded.find(form)
            while at >= 0:
                end = at + len(form)
                if not whole_word or (
                    (at == 0 or not _is_word_char(folded[at - 1]))
                    and (end == len(folded) or not _is_word_char(folded[end]))
                ):
                    if owner is None:
                        spans.append((at, end, n))
                    else:
                        spans.append((owner[at], owner[end - 1] + 1, n))
                at = folded.find(form, at + 1)
    spans.sort()
    merged: list[tuple[int, int, int]] = []
    for s, e, n in spans:
        if merged and s < merged[-1][1]:
            ps, pe, pn = merged[-1]
            merged[-1] = (ps, max(pe, e), pn)
        else:
            merged.append((s, e, n))
    return merged


def _best_start(spans: list[tuple[int, int, int]], length: int, width: int) -> int:
    """Start of the window holding the most distinct terms (then the most matches, then the earliest),
    among windows led by one of the first `_MAX_LEADS` matches (a long block can match hundreds of times)."""
    best, best_key = 0, (-1, -1, 0)
    for s, _, _ in spans[:_MAX_LEADS]:
        start = max(0, min(s - width // 4, length - width))
        inside = [(a, b, n) for a, b, n in spans if a >= start and b <= start + width]
        key = (len({n for *_, n in inside}), len(inside), -start)
        if key > best_key:
            best, best_key = start, key
    return best


def _utf16(text: str, index: int) -> int:
    return index + sum(1 for c in text[:index] if ord(c) > 0xFFFF)


def snippet(text: str, terms: list[str], width: int = SNIPPET_CHARS) -> dict:
    """`{"text", "highlights"}`: up to `width` characters of `text` around the terms, "…" at cuts."""
    text = " ".join((text or "").split())
    spans = find_terms(text, terms)
    if len(text) <= width:
        start, end = 0, len(text)
    else:
        start = _best_start(spans, len(text), width) if spans else 0
        end = start + width
        first_hit = next((s for s, _, _ in spans if s >= start), end)
        if start and _is_word_char(text[start - 1]) and _is_word_char(text[start]):
            cut = text.find(" ", start, min(start + _WORD_CUT, first_hit))
            start = cut + 1 if cut >= 0 else start
        if end < len(text) and _is_word_char(text[end - 1]) and _is_word_char(text[end]):
            last_hit = max((e for _, e, _ in spans if e <= end), default=start)
            cut = text.rfind(" ", max(start, end - _WORD_CUT, last_hit), end)
            end = cut if cut > start else end
    body = text[start:end].strip()
    lead = text[start:end].find(body) if body else 0
    base = start + lead
    prefix = ELLIPSIS if start > 0 else ""
    out = prefix + body + (ELLIPSIS if start + lead + len(body) < len(text) else "")
    highlights = []
    for s, e, _ in spans:
        s, e = max(s, base), min(e, base + len(body))
        if s < e:
            a, b = len(prefix) + s - base, len(prefix) + e - base
            highlights.append([_utf16(out, a), _utf16(out, b)])
    return {"text": out, "highlights": highlights}


def code_points(text: str, highlights: list[list[int]]) -> list[tuple[int, int]]:
    """UTF-16 highlight offsets of `text` as Python string indices."""
    units, to_index = 0, {}
    for i, c in enumerate(text):
        to_index[units] = i
        units += 2 if ord(c) > 0xFFFF else 1
    to_index[units] = len(text)
    return [(to_index[s], to_index[e]) for s, e in highlights]


def marked(snip: dict, open_: str, close: str, escape=lambda s: s) -> str:
    """The snippet text with each highlight wrapped in `open_` … `close`; `escape` applies to the text
    only (e.g. `markupsafe.escape` with `<mark>` … `</mark>`)."""
    text, out, at = snip["text"], [], 0
    for s, e in code_points(text, snip["highlights"]):
        out += [escape(text[at:s]), open_, escape(text[s:e]), close]
        at = e
    out.append(escape(text[at:]))
    return "".join(str(p) for p in out)
