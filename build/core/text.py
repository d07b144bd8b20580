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


def fts_query(query: str) -> str:
    """Turn free text into a safe FTS5 MATCH expression (all terms must match).

    User input is never passed through as FTS syntax: words become quoted
    tokens, CJK runs become phrases of their bigrams, a single CJK character
    becomes a prefix token. Operators and quotes in the input are just text.
    """
    query = unicodedata.normalize("NFKC", query or "").replace("\x00", " ")
    terms: list[str] = []
    for piece in CJK_RUN.split(query)[::2]:
        terms.extend(f'"{w}"' for w in _WORD.findall(piece) if not CJK_RUN.search(w))
    for run in CJK_RUN.findall(query):
        if len(run) == 1:
            terms.append(f'"{run}" *')
        else:
            grams = [run[i : i + 2] for i in range(len(run) - 1)]
            terms.append('"' + " ".join(grams) + '"')
    if not terms:
        raise QueryError("query has no searchable words")
    return " AND ".join(terms)


def query_terms(query: str) -> list[str]:
    """The literal terms of a query, for highlighting and re-ranking."""
    query = unicodedata.normalize("NFKC", query or "")
    terms = CJK_RUN.findall(query)
    for piece in CJK_RUN.split(query)[::2]:
        terms.extend(_WORD.findall(piece))
    return [t for t in terms if t.strip()]
