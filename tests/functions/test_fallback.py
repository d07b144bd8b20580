"""Questions get passages without an LLM, and English word forms find each other, on real builds.

A question whose words no block holds together is ranked again over its meaning-bearing words (bm25,
stopwords such as what/does/the, 的/是/多少 dropped): the answer says so (`matchMode: "any"`), and
the CLI's `search` and `ask` and the MCP text say the passages match some of the words. A query some
block matches with every word keeps `matchMode: "all"` and the same results. The index stems English
words (Porter): `homolog` finds what `homologs` finds; `prefixLast` matches the last word as typed.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from click.testing import CliRunner

from mnote_evidence.build.cli.main import main
from mnote_evidence.build.core.text import meaning_terms
from mnote_evidence.build.index.schema import FTS_TOKENIZE, SCHEMA_VERSION
from mnote_evidence.functions.adapters.mcp_text import render
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import search
from mnote_evidence.functions.search.fts import search_blocks
from mnote_evidence.functions.search.results import SOME_WORDS
from tests.conftest import connect, run_build

# Questions on tests/real_documents/manuals whose words no block holds together (a model of what people
# type into the Ask page): each must bring passages holding at least half of its meaning-bearing words.
QUESTIONS = [
    "What does the E-value depend on?",
    "What are the rules for sniffing the contents of a file?",
    "Which functions of libtasn1 parse a definitions file?",
    "What is the maximum length of a DER encoding?",
    "How are MIME types matched by glob patterns?",
    "Which magic rules have priority?",
    "How can I read an Excel spreadsheet in R?",
    "How does libtasn1 decode a BER structure?",
    "What is the weight of a glob pattern?",
    "How do I save the R workspace when quitting?",
    "Where are the shared MIME database files stored?",
    "What does asn1_create_element return on error?",
    "How can I cite R in a publication?",
    "Which XML namespace does the freedesktop MIME info use?",
    "How are subclasses of a MIME type declared?",
    "Why is R called R?",
    "How does R handle missing values in data frames?",
]


def holds(text: str, term: str) -> bool:
    """`text` holds a form of `term` (its first letters as a word's start: patterns -> pattern)."""
    stem = term.lower()[: max(3, len(term) - 2)] if len(term) > 3 else term.lower()
    return re.search(r"(?<![a-z0-9])" + re.escape(stem), text.lower()) is not None


def ctx_of(out) -> Context:
    return Context(db=EvidenceDB(out / "evidence.sqlite"), site_base="")


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_question_no_block_holds_whole_gets_the_passages_holding_most_of_it(real_index, question):
    body = search({"query": question, "topK": 3, "pathPrefix": "manuals/"}, ctx_of(real_index))
    assert body["matchMode"] == "any" and body["results"], body
    terms = meaning_terms(question)
    best = max(sum(holds(r["quote"], t) for t in terms) for r in body["results"])
    assert best >= max(2, len(terms) / 2), (question, terms, [r["quote"][:120] for r in body["results"]])
    assert not any(t.lower() in ("what", "does", "the", "how", "is") for t in terms)
    marked = {
        r["snippet"]["text"][a:b].lower() for r in body["results"] for a, b in r["snippet"]["highlights"]
    }
    assert marked and not marked & {"what", "does", "the", "how", "is", "of", "on"}  # stopwords unmarked


def test_a_query_every_word_of_which_one_block_holds_keeps_all_mode_and_its_results(real_index):
    query = "anova order factors"
    body = search({"query": query, "topK": 10}, ctx_of(real_index))
    assert body["matchMode"] == "all" and body["results"]
    hits = search_blocks(connect(real_index), query, 10)
    assert [r["evidenceId"] for r in body["results"]] == [h.block_id for h in hits]
    for h in hits:
        if h.level == "block":  # page hits (after every block) hold the words across their blocks
            assert all(holds(h.text, w) for w in query.split()), h.text


def test_paging_and_grouping_stay_in_any_mode(real_index):
    ctx = ctx_of(real_index)
    question = "How can I cite R in a publication?"
    first = search({"query": question, "topK": 3}, ctx)
    second = search({"query": question, "topK": 3, "offset": first["nextOffset"]}, ctx)
    assert second["matchMode"] == "any" and second["results"]
    ids = [r["evidenceId"] for r in first["results"] + second["results"]]
    assert len(set(ids)) == 6
    grouped = search({"query": question, "topK": 2, "groupBy": "document"}, ctx)
    assert grouped["matchMode"] == "any" and grouped["groups"]


def test_a_word_nothing_holds_answers_no_results_in_all_mode(real_index):
    body = search({"query": "zebrafishretina", "topK": 3}, ctx_of(real_index))
    assert body["results"] == [] and body["matchMode"] == "all"  # one word: nothing else to try


def test_the_chinese_question_finds_passages_of_its_terms(stale_site):
    _, out = stale_site
    body = search({"query": "吡咯烷 的沸点是多少？", "topK": 5}, ctx_of(out))
    assert body["matchMode"] == "any" and body["results"]
    assert any("吡咯烷" in r["quote"] for r in body["results"])
    assert search({"query": "吡咯烷", "topK": 5}, ctx_of(out))["matchMode"] == "all"


def test_cli_search_and_mcp_say_the_passages_match_some_of_the_words(real_index):
    question = "What does the E-value depend on?"
    done = CliRunner().invoke(main, ["search", question, "--site", str(real_index)])
    assert done.exit_code == 0, done.output
    assert SOME_WORDS in done.output and "1. " in done.output
    body = search({"query": question, "topK": 3}, ctx_of(real_index))
    assert SOME_WORDS in render("evidence_search", body)
    whole = search({"query": "anova order factors", "topK": 3}, ctx_of(real_index))
    assert SOME_WORDS not in render("evidence_search", whole)


def test_cli_ask_without_lightrag_prints_the_passages_and_why(real_index, monkeypatch):
    monkeypatch.delenv("LIGHTRAG_URL", raising=False)
    done = CliRunner().invoke(main, ["ask", "What does the E-value depend on?", "--site", str(real_index)])
    assert done.exit_code == 1 and "knowledge_rag_unconfigured" in done.output
    assert "Passages of the notes that match the question" in done.output and SOME_WORDS in done.output
    assert "1. manuals/" in done.output


def test_answers_without_lightrag_carry_the_passages_in_json_and_mcp(real_index, monkeypatch):
    """`ask --json`, `/-/knowledge/ask` and `knowledge_query` (MCP) without an answer: `passages`."""
    from mnote_evidence.functions.handlers import knowledge

    monkeypatch.delenv("LIGHTRAG_URL", raising=False)
    question = "What does the E-value depend on?"
    done = CliRunner().invoke(main, ["ask", question, "--site", str(real_index), "--json"])
    assert done.exit_code == 1, done.output
    body = json.loads(done.output)
    assert body["answer"] is None and body["degradedReason"] == "knowledge_rag_unconfigured"
    found = body["passages"]
    assert found["matchMode"] == "any" and found["results"] and found["total"] >= len(found["results"])
    assert found["results"][0]["source"]["resourcePath"].startswith("manuals/")
    request = {"query": question, "mode": "mix", "topK": 3}
    retrieved = knowledge.query(request, ctx_of(real_index))
    assert not retrieved["ok"] and len(retrieved["passages"]["results"]) == 3
    text = render("knowledge_query", retrieved)
    assert "Passages of the evidence that match the question" in text and SOME_WORDS in text
    assert "manuals/" in text
    nothing = knowledge.query({**request, "query": "zebrafishretina"}, ctx_of(real_index))
    assert nothing["passages"]["results"] == []
    assert "No passage of the evidence matches" in render("knowledge_query", nothing)


@pytest.fixture(scope="module")
def word_forms(tmp_path_factory):
    base = tmp_path_factory.mktemp("forms")
    root = base / "ws"
    root.mkdir()
    (root / "genes.md").write_text(
        "# Genes\n\nThe homologs of this gene were aligned.\n\nIt depends on the alignment.\n", "utf-8"
    )
    (root / "other.md").write_text("# Other\n\nA homing table, and homeostasis.\n", "utf-8")
    out = base / "out"
    run_build(root, out)
    return out


def texts(out, request: dict) -> list[str]:
    return [r["quote"] for r in search({"topK": 10, **request}, ctx_of(out))["results"]]


def test_english_word_forms_find_each_other(word_forms):
    assert texts(word_forms, {"query": "homolog"}) == texts(word_forms, {"query": "homologs"})
    assert texts(word_forms, {"query": "homolog"}) == ["The homologs of this gene were aligned."]
    assert texts(word_forms, {"query": "depend"}) == ["It depends on the alignment."]
    assert texts(word_forms, {"query": "aligning"}) == texts(word_forms, {"query": "aligned"}) != []


def test_snippets_mark_the_word_forms_the_index_matched(word_forms):
    [hit] = search({"query": "homolog aligning"}, ctx_of(word_forms))["results"]
    snip = hit["snippet"]
    assert [snip["text"][a:b] for a, b in snip["highlights"]] == ["homologs", "aligned"]


def test_prefix_last_matches_the_last_word_as_typed(word_forms):
    assert texts(word_forms, {"query": "homol"}) == []
    typed = texts(word_forms, {"query": "homol", "prefixLast": True})
    assert typed == ["The homologs of this gene were aligned."]
    assert texts(word_forms, {"query": "ho", "prefixLast": True}) == []  # under 3 characters: a word
    assert texts(word_forms, {"query": "homol ", "prefixLast": True}) == []  # a finished word
    assert texts(word_forms, {"query": "gene homol", "prefixLast": True}) == [
        "The homologs of this gene were aligned."
    ]
    ctx = ctx_of(word_forms)
    first = search({"query": "homol gene", "prefixLast": True}, ctx)  # only the last word is a prefix
    assert first["matchMode"] == "any"


def test_the_search_pages_placeholders_are_generic_words(datasette_server):
    """No sample text of the fixtures (研究, 线程作用域, 吡咯烷) in the product's own inputs."""
    import httpx

    page = datasette_server.rstrip("/") + "/-/evidence/search-page"
    html = httpx.get(page, timeout=30).text
    assert 'placeholder="Search the evidence"' in html and 'placeholder="all folders"' in html
    assert not re.search(r'placeholder="[^"]*[\u4e00-\u9fff]', html)
    question = httpx.get(page, params={"q": "吡咯烷 的沸点是多少？"}, timeout=30).text
    assert SOME_WORDS in question and "吡咯烷" in question


def test_an_index_of_schema_7_is_rebuilt_with_the_stemming_tokenizer(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nThe homologs align.\n", "utf-8")
    out = tmp_path / "out"
    run_build(root, out)
    conn = sqlite3.connect(out / "evidence.sqlite")
    conn.execute("UPDATE build_meta SET value = '7' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    report = run_build(root, out)
    assert report.redone["schema"]["from"] == "7" and report.redone["schema"]["to"] == SCHEMA_VERSION
    assert texts(out, {"query": "homolog"}) == ["The homologs align."]
    sql = connect(out).execute("SELECT sql FROM sqlite_master WHERE name = 'evidence_fts'").fetchone()[0]
    assert f"tokenize = '{FTS_TOKENIZE}'" in sql
