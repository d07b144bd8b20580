"""CJK segmentation and safe FTS query building, checked against real SQLite FTS5."""

from __future__ import annotations

import sqlite3

import pytest

from mnote_evidence.build.text import QueryError, fts_query, join_lines, segment_for_index

DOCS = ["关于线程作用域的规则", "线程池", "吗啉是一种杂环", "N-甲基吡咯烷酮", "Thread scope joins threads"]


@pytest.fixture
def fts():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61 remove_diacritics 2')")
    conn.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)",
                     [(i, segment_for_index(d)) for i, d in enumerate(DOCS)])
    return lambda q: [DOCS[r[0]] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid",
                                                       [fts_query(q)])]


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


@pytest.mark.parametrize("hostile", ['"unbalanced', "AND", "NEAR(", "*", "text:foo", "a OR", "(((", "\x00x",
                                     "x" * 5000, '"线程" NOT', "^start"])
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
