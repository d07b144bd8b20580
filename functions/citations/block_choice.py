"""Which block of a chunk's span a citation opens: the one the query's meaning-bearing terms point to.

SPEC §10.

- Terms: Latin words of two or more characters that are not English stopwords; CJK runs
  of the query (build/core/text.py's segmentation) with Chinese function words cut off their
  edges and question words split out (吡咯烷的沸点是多少 -> 吡咯烷, 沸点). Stopwords and
  single characters never decide.
- Matching: Latin terms as whole words (`psi` is not in `Upsilon`; a term of five or more
  letters also matches with a short suffix: format -> formats); a CJK term where it
  occurs, weighted down when embedded in a longer compound (吡咯烷 inside
  N-甲基吡咯烷酮), and by its bigram share when the whole run occurs nowhere.
- Scoring: each distinct term found adds its weight, rarer terms among the span's
  blocks weigh more (a word in every block decides nothing); a heading counts half.
  Ties go to the block that comes first in the chunk.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mnote_evidence.build.core.text import CJK_RUN, is_cjk, query_terms
from mnote_evidence.functions.search.fts import flank_weight

HEADING_WEIGHT = 0.5

STOPWORDS_EN = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our
out over own same she should so some such than that the their them then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you your yours
also may might must shall us via per e g ie eg etc vs
""".split()
)
# Function words and question words; single characters among them are cut only at a run's edge,
# since inside a run they are often part of a word (和 in 饱和, 的 in 目的).
STOPWORDS_ZH = frozenset(
    """
的 了 是 在 和 与 及 或 也 都 就 而 但 并 把 被 对 从 向 为 以 于 之 其 这 那
哪 吗 呢 吧 啊 有 个 中 上 下 里 时 将 会 能 要
什么 怎么 怎样 如何 为什么 哪些 哪个 哪里 多少 是否 请问 可以 一个 一种
这个 那个 我们 你们 他们 以及 或者 还是 没有 关于
""".split()
)
_SPLIT_ZH = sorted((w for w in STOPWORDS_ZH if len(w) > 1), key=len, reverse=True) + ["的"]


@dataclass(frozen=True)
class Term:
    text: str
    cjk: bool
    pattern: re.Pattern | None  # whole-word pattern for Latin terms


def _cjk_terms(run: str) -> list[str]:
    pieces = [run]
    for word in _SPLIT_ZH:
        pieces = [p for piece in pieces for p in piece.split(word)]
    out = []
    for piece in pieces:
        while piece and (piece[0] in STOPWORDS_ZH or piece[:2] in STOPWORDS_ZH):
            piece = piece[2:] if piece[:2] in STOPWORDS_ZH else piece[1:]
        while piece and (piece[-1] in STOPWORDS_ZH or piece[-2:] in STOPWORDS_ZH):
            piece = piece[:-2] if piece[-2:] in STOPWORDS_ZH else piece[:-1]
        if len(piece) >= 2:
            out.append(piece)
    return out


def meaning_terms(query: str) -> list[Term]:
    """The query's terms that can decide a block, in query order, without repeats."""
    out: dict[str, Term] = {}
    for raw in query_terms(query):
        if CJK_RUN.fullmatch(raw):
            for t in _cjk_terms(raw):
                out.setdefault(t, Term(t, True, None))
            continue
        word = raw.lower()
        if len(word) < 2 or word in STOPWORDS_EN or any(is_cjk(ch) for ch in word):
            continue
        suffix = r"\w{0,3}" if len(word) >= 5 and word.isalpha() else ""
        out.setdefault(word, Term(word, False, re.compile(rf"(?<!\w){re.escape(word)}{suffix}(?!\w)", re.I)))
    return list(out.values())


def occurrences(text: str, term: Term) -> list[tuple[int, int, float]]:
    """(start, end, weight) of each occurrence of `term` in `text`."""
    if term.pattern is not None:
        if term.text not in text.lower():  # the cheap test first: most blocks lack most terms
            return []
        return [(m.start(), m.end(), 1.0) for m in term.pattern.finditer(text)]
    out, start = [], text.find(term.text)
    while start >= 0:
        end = start + len(term.text)
        out.append((start, end, flank_weight(text, start, end)))
        start = text.find(term.text, start + 1)
    return out


def term_weight(text: str, term: Term) -> float:
    """Best occurrence weight of `term` in `text` (0 when absent); a long CJK run absent as a whole
    scores half its share of bigrams present."""
    found = occurrences(text, term)
    if found:
        return max(w for _, _, w in found)
    if term.cjk and len(term.text) >= 3:
        grams = [term.text[i : i + 2] for i in range(len(term.text) - 1)]
        return 0.5 * sum(g in text for g in grams) / len(grams)
    return 0.0


def choose(texts: list[tuple[str, bool]], terms: list[Term]) -> tuple[int | None, Term | None]:
    """Index of the best of `texts` ((text, is_heading), in chunk order) and its strongest term; (None, None)
    when no meaning-bearing term occurs in any of them."""
    if not terms or not texts:
        return None, None
    joined = "\n".join(text for text, _ in texts)
    lowered = joined.lower()
    terms = [
        t
        for t in terms
        if (
            t.text in lowered
            if not t.cjk
            else any(t.text[i : i + 2] in joined for i in range(len(t.text) - 1))
        )
    ]
    if not terms:
        return None, None
    table = [[term_weight(text, t) for t in terms] for text, _ in texts]
    n = len(texts)
    idf = [math.log(1 + n / max(1, sum(1 for row in table if row[j] > 0))) for j in range(len(terms))]
    best, best_score = None, 0.0
    for i, ((_, heading), row) in enumerate(zip(texts, table)):
        score = sum(w * f for w, f in zip(row, idf)) * (HEADING_WEIGHT if heading else 1.0)
        if score > best_score + 1e-9:  # strictly better: ties stay with the earlier block
            best, best_score = i, score
    if best is None:
        return None, None
    j = max(range(len(terms)), key=lambda k: (table[best][k] * idf[k], -k))
    return best, terms[j]
