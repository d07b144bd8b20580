"""Text normalisation and the CJK-aware FTS segmentation shared by index and query.

CJK runs are segmented into overlapping bigrams plus a trailing unigram before indexing, unicode61
tokenizes the rest: "Thread scope 线程作用域" -> "Thread scope 线程 程作 作用 用域 域". Every character
starts some token, so a one-character query works as a prefix query; a query's CJK run becomes an FTS5
phrase of its bigrams. No custom tokenizer is needed to read or query the file.
`SEGMENTATION_VERSION` names the output of `segment_for_index` (and the form `fts_query` expects):
change it with them, and the next build re-segments every FTS row from the stored text while readers
refuse an index of another segmentation. The indexer reads both through this module at call time.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from operator import add

# Han (incl. ext. A and compatibility), kana, Hangul, CJK symbols are not.
_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
SEGMENTATION_VERSION = "1"  # bigrams + trailing unigram per CJK run, NFKC, unicode61 for the rest

# A CJK run, captured (`split` keeps the runs as its odd items); compiled once: its 64K-char set is slow
CJK_RUN = re.compile(f"([{_CJK_CLASS}]+)")


def nfkc(text: str) -> str:
    """Unicode NFKC. ASCII is its own NFKC and is not scanned again. A block's text is normalised for its
    id, then for its FTS value in the same worker: the second call hits the cache."""
    if text.isascii():
        return text
    if len(text) > _NFKC_KEPT_CHARS:  # a long block: not held in memory for a saving this small
        return unicodedata.normalize("NFKC", text)
    return _nfkc_recent(text)


_NFKC_KEPT_CHARS = 1024


@lru_cache(maxsize=4096)
def _nfkc_recent(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def normalise(text: str) -> str:
    """NFKC + collapsed whitespace: what ids and matching compare."""
    return " ".join(nfkc(text).split())


def is_cjk(ch: str) -> bool:
    return CJK_RUN.match(ch) is not None


def join_lines(lines: list[str]) -> str:
    """Join wrapped lines: no space between two CJK characters, one space otherwise."""
    out = ""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if out and not (is_cjk(out[-1]) and is_cjk(line[0])):
            if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and line[0].islower():
                out = out[:-1]  # re-join a hyphenated word
            else:
                out += " "
        out += line
    return out


def segment_for_index(text: str) -> str:
    """The string stored in the FTS column for `text`: each CJK run becomes ` 线程 程作 作 ` (its
    bigrams and its last character, spaced off from the text around it)."""
    if text.isascii():
        return text
    parts = CJK_RUN.split(nfkc(text))
    for i in range(1, len(parts), 2):
        run = parts[i]
        parts[i] = f" {' '.join(map(add, run, run[1:]))} {run[-1]} " if len(run) > 1 else f" {run} "
    return "".join(parts)


class QueryError(ValueError):
    """A user query we cannot turn into FTS syntax (reported as HTTP 400)."""


_WORD = re.compile(r"\w+", re.UNICODE)


PREFIX_MIN = 3  # a last word this long or longer is a prefix with `prefix_last` (as the user types)


def fts_query(query: str, prefix_last: bool = False) -> str:
    """Turn free text into a safe FTS5 MATCH expression (all terms must match).

    User input is never passed through as FTS syntax: words become quoted
    tokens, CJK runs become phrases of their bigrams, a single CJK character
    becomes a prefix token. Operators and quotes in the input are just text.
    With `prefix_last`, a query ending in a word of `PREFIX_MIN` or more
    characters (not CJK) matches that word as a prefix: `homol` finds `homologs`.
    """
    query = unicodedata.normalize("NFKC", query or "").replace("\x00", " ")
    terms: list[str] = []
    for piece in CJK_RUN.split(query)[::2]:
        terms.extend(f'"{w}"' for w in _WORD.findall(piece) if not CJK_RUN.search(w))
    last = _WORD.search(query[-1:]) and CJK_RUN.split(query)[-1]
    if prefix_last and last and len(_WORD.findall(last)[-1]) >= PREFIX_MIN:
        terms[-1] += " *"  # the query's last word is the last of the words
    for run in CJK_RUN.findall(query):
        if len(run) == 1:
            terms.append(f'"{run}" *')
        else:
            grams = [run[i : i + 2] for i in range(len(run) - 1)]
            terms.append('"' + " ".join(grams) + '"')
    if not terms:
        raise QueryError("query has no searchable words")
    return " AND ".join(terms)


# Words that carry no meaning of their own in a question, dropped by any-term matching (`fts_any_query`).
# English: compared lower-cased. Chinese: `ZH_STOPWORDS` are cut out of a CJK run anywhere, longest
# first; `ZH_FINAL` only at a run's end (吗 also starts 吗啉). Pieces of one character left by a cut are
# dropped. site_templates/_static/search_query.js holds the same lists (a test compares them).
EN_STOPWORDS = frozenset(
    "a about above after again against all am an and any are as at be because been before being below "
    "between both but by can could did do does doing down during each few for from further had has have "
    "having he her here hers herself him himself his how i if in into is it its itself just me more most "
    "my myself no nor not of off on once only or other our ours ourselves out over own same she should so "
    "some such than that the their theirs them themselves then there these they this those through to too "
    "under until up very was we were what when where which while who whom why will with would you your "
    "yours yourself yourselves".split()
)
ZH_STOPWORDS = (
    "为什么",
    "是什么",
    "有没有",
    "怎么样",
    "什么",
    "多少",
    "哪些",
    "哪个",
    "哪里",
    "怎么",
    "怎样",
    "如何",
    "是否",
    "请问",
    "能否",
    "的",
    "是",
    "和",
    "与",
    "及",
    "或",
)
ZH_FINAL = ("吗", "呢", "吧", "啊", "呀")
_ZH_CUT = re.compile("|".join(ZH_STOPWORDS))
_ZH_END = re.compile(f"[{''.join(ZH_FINAL)}]+$")


def meaning_terms(query: str) -> list[str]:
    """The query's meaning-bearing terms in query order (words and CJK pieces, first occurrence of
    each): stopwords removed; all of `query_terms` when nothing else is left."""
    query = unicodedata.normalize("NFKC", query or "").replace("\x00", " ")
    out: list[str] = []
    for n, piece in enumerate(CJK_RUN.split(query)):
        if n % 2 == 0:
            out += [w for w in _WORD.findall(piece) if w.lower() not in EN_STOPWORDS]
        elif len(piece) == 1:
            out.append(piece)  # a character typed on its own
        else:
            out += [p for p in _ZH_CUT.split(_ZH_END.sub("", piece)) if len(p) > 1]
    seen: set[str] = set()
    out = [t for t in out if not (t.lower() in seen or seen.add(t.lower()))]
    return out or query_terms(query)


def _match_term(term: str) -> str:
    if not CJK_RUN.match(term):
        return f'"{term}"'
    if len(term) == 1:
        return f'"{term}" *'
    return '"' + " ".join(term[i : i + 2] for i in range(len(term) - 1)) + '"'


def fts_any_query(query: str) -> str:
    """An FTS5 MATCH expression matching any of the query's `meaning_terms` (bm25 ranks blocks holding
    more of them, and rarer ones, first). Raises `QueryError` as `fts_query` does."""
    terms = meaning_terms(query)
    if not terms:
        raise QueryError("query has no searchable words")
    return " OR ".join(_match_term(t) for t in terms)


def query_terms(query: str) -> list[str]:
    """The literal terms of a query, for highlighting and re-ranking."""
    query = unicodedata.normalize("NFKC", query or "")
    terms = CJK_RUN.findall(query)
    for piece in CJK_RUN.split(query)[::2]:
        terms.extend(_WORD.findall(piece))
    return [t for t in terms if t.strip()]
