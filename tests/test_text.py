"""CJK segmentation and safe FTS query building, checked against real SQLite FTS5."""

from __future__ import annotations

import sqlite3
import unicodedata

import pytest

from mnote_evidence.build.core.text import QueryError, fts_query, join_lines, normalise, segment_for_index

DOCS = ["关于线程作用域的规则", "线程池", "吗啉是一种杂环", "N-甲基吡咯烷酮", "Thread scope joins threads"]


@pytest.fixture
def fts():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61 remove_diacritics 2')")
    conn.executemany(
        "INSERT INTO t(rowid, text) VALUES (?, ?)", [(i, segment_for_index(d)) for i, d in enumerate(DOCS)]
    )
    return lambda q: [
        DOCS[r[0]] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", [fts_query(q)])
    ]


def test_cjk_substrings_two_char_terms_and_single_chars(fts):
    assert fts("线程作用域") == ["关于线程作用域的规则"]
    assert fts("线程") == ["关于线程作用域的规则", "线程池"]
    assert fts("吗啉") == ["吗啉是一种杂环"]
    assert fts("池") == ["线程池"]
    assert fts("吡咯烷") == ["N-甲基吡咯烷酮"]
    assert fts("作用线程") == []  # order matters: a phrase, not a bag of bigrams


def test_english_words_and_mixed(fts):
    assert fts("thread scope") == ["Thread scope joins threads"]
    assert fts("scope 线程") == []


@pytest.mark.parametrize(
    "hostile",
    [
        '"unbalanced',
        "AND",
        "NEAR(",
        "*",
        "text:foo",
        "a OR",
        "(((",
        "\x00x",
        "x" * 5000,
        '"线程" NOT',
        "^start",
    ],
)
def test_hostile_queries_never_raise_sql_errors(fts, hostile):
    try:
        fts(hostile)
    except QueryError:
        pass  # a clear "no searchable words", never sqlite3.OperationalError


def test_empty_query_is_a_query_error():
    with pytest.raises(QueryError):
        fts_query("  ** () ")


def test_join_lines_cjk_and_hyphenation():
    assert join_lines(["线程作", "用域 and a hyphen-", "ated word"]) == "线程作用域 and a hyphenated word"


def _segmented_v1(text: str) -> str:
    """SEGMENTATION_VERSION 1 as first written (a regex callback per CJK run): the reference."""
    from mnote_evidence.build.core.text import CJK_RUN

    def bigrams(run: str) -> str:
        return run if len(run) == 1 else " ".join([run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]])

    return CJK_RUN.sub(lambda m: f" {bigrams(m.group(0))} ", unicodedata.normalize("NFKC", text))


def test_segment_for_index_is_segmentation_version_1_exactly():
    """The FTS rows of a build are compared with those of earlier builds (deletes, versions): the
    same text must give the same string, whatever the implementation (ASCII, runs at either end)."""
    import random

    from mnote_evidence.build.core.text import SEGMENTATION_VERSION

    assert SEGMENTATION_VERSION == "1"  # a new version may change the strings: then change this test
    assert segment_for_index("a线程作用域b 池") == "a 线程 程作 作用 用域 域 b  池 "
    pool = (
        "ab ,\n-ｆ　½ﬁ，。线程作用域吗カタ한국豈\u0301"  # ASCII, full-width, compatibility, CJK of each range
    )
    rng = random.Random(17)
    samples = [
        "",
        "a",
        "线",
        "线程",
        "plain ASCII text.",
        *("".join(rng.choices(pool, k=rng.randint(1, 40))) for _ in range(3000)),
    ]
    for text in samples + [t * 40 for t in samples[-50:]]:  # and long ones (not kept by `nfkc`)
        assert segment_for_index(text) == _segmented_v1(text), text
        assert normalise(text) == " ".join(unicodedata.normalize("NFKC", text).split())


def test_a_block_is_normalised_once_for_its_id_and_its_fts_value(monkeypatch):
    from mnote_evidence.build.core import text as text_module
    from mnote_evidence.build.parse.providers.markdown import MarkdownProvider

    calls: list[str] = []
    real = unicodedata.normalize
    monkeypatch.setattr(
        text_module.unicodedata, "normalize", lambda form, s: calls.append(s) or real(form, s)
    )
    text_module._nfkc_recent.cache_clear()
    note = "# 线程作用域\n\n关于线程，作用域的规则。\n\nPlain English paragraph.\n"
    artifact = MarkdownProvider().parse_text("n.md", "h", note)
    values = [segment_for_index(b.text) for b in artifact.blocks]
    assert values[1] == " 关于 于线 线程 程 , 作用 用域 域的 的规 规则 则 。"  # full-width comma: NFKC
    assert sorted(calls) == sorted(b.text for b in artifact.blocks if not b.text.isascii())  # once each
