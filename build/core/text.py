"""Text normalisation and the CJK-aware FTS segmentation shared by index and query.

SQLite's stock `unicode61` tokenizer treats a whole run of Chinese characters as
one token, so 线程作用域 inside 线程作用域的规则 is not found; `trigram` finds
substrings but nothing shorter than three characters (吗啉, 线程). We segment CJK
runs into overlapping bigrams *before* indexing (what search engines' CJK
analyzers do) and keep unicode61 for everything else:

    "Thread scope 线程作用域"  ->  "Thread scope 线程 程作 作用 用域 域"

The trailing unigram makes every character the start of some token, so a
one-character query works as a prefix query. A query is segmented the same way
and each CJK run becomes an FTS5 phrase, which matches the consecutive bigrams
of the substring exactly. The file stays self-contained: no custom tokenizer is
needed to read or query it.

`SEGMENTATION_VERSION` names the output of `segment_for_index` (and the query
form `fts_query` expects). Change it with them: the next build re-segments every
FTS row from the stored block text, without re-parsing a file, and readers
refuse an index of another segmentation (`build/versions.py`). The indexer
reads both through this module at call time, so a test can swap the pair.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from operator import add

# Han (incl. ext. A and compatibility), kana, Hangul, CJK symbols are not.
_CJK_CLASS = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf"  # CJK ext A
    "\u4e00-\u9fff"  # CJK unified
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
)
SEGMENTATION_VERSION = "1"  # bigrams + trailing unigram per CJK run, NFKC, unicode61 for the rest

# A CJK run, captured: `split` keeps the runs (its odd items). The one pattern of this class: each
# compile of it costs ~2 ms (a 64K-character set), paid by every process that imports this module.
CJK_RUN = re.compile(f"([{_CJK_CLASS}]+)")


def nfkc(text: str) -> str:
    """Unicode NFKC. ASCII is its own NFKC: that (most notes' text) is not scanned again. A block's
    text is normalised for its id (`ids.py`), then for its FTS value (`segment_for_index`), in the
    same parse worker: the second is the first's result while it is recent (CJK text, full of
    full-width punctuation, is really rewritten: ~3 us a block)."""
    if text.isascii():
        return text
    if len(text) > _NFKC_KEPT_CHARS:  # a long block: not held in memory for a saving this small
        return unicodedata.normalize("NFKC", text)
    return _nfkc_recent(text)


_NFKC_KEPT_CHARS = 1024


@lru_cache(maxsize=4096)  # the blocks of a parse task (32 notes) and more; at most 4096 x 2 x 4 KB
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
    if text.isascii():  # no CJK, and already NFKC
        return text
    parts = CJK_RUN.split(nfkc(text))
    for i in range(1, len(parts), 2):  # the runs (a regex callback per run costs more)
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
    for piece in CJK_RUN.split(query)[::2]:  # the text between the runs
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
