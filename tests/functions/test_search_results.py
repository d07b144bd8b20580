"""Results that explain themselves: snippets and highlights, total, pagination,
grouping by document, kind/folder filters and the numeric tie order, on a real build of a workspace
made for it (Markdown notes in 研究/ and 研究2/, a 1,100-paragraph note, a 12-page PDF)."""

from __future__ import annotations

import pymupdf
import pytest

from mnote_evidence.build.core.text import segment_for_index
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.evidence import Context, search
from mnote_evidence.functions.search.fts import RANK_WINDOW
from mnote_evidence.functions.search.snippet import SNIPPET_CHARS, code_points, marked, snippet
from tests.conftest import run_build

LONG_CN = (
    "前言部分介绍背景。" * 30
    + "这里讨论线程作用域的规则，以及 Thread scope 如何影响借用检查。"
    + "后记总结要点。" * 40
)
MANY = 1100  # paragraphs of notes/ledger.md that match "ledger": more than the exact counts cover


def cut(text: str, highlights) -> list[str]:
    return [text[s:e] for s, e in code_points(text, highlights)]


def collapsed(text: str) -> str:
    return " ".join(text.split())


# -- snippets: the pure function -----------------------------------------------------
def test_chinese_snippet_is_the_unsegmented_text_around_the_term():
    snip = snippet(LONG_CN, ["线程作用域"])
    body = snip["text"].strip("…")
    assert body in LONG_CN and len(body) <= SNIPPET_CHARS  # a window of the stored text: no bigram spaces
    assert segment_for_index("线程作用域") not in snip["text"] and "线程 程作" not in snip["text"]
    assert snip["text"].startswith("…") and snip["text"].endswith("…")
    assert cut(snip["text"], snip["highlights"]) == ["线程作用域"]
    start = snip["highlights"][0][0]
    assert 20 <= start <= 60  # the term sits early in the window, with context before it


def test_mixed_snippet_holds_several_terms_and_marks_each():
    snip = snippet(LONG_CN, ["线程作用域", "thread", "借用检查"])
    assert cut(snip["text"], snip["highlights"]) == ["线程作用域", "Thread", "借用检查"]  # case-insensitive
    assert marked(snip, "[", "]").count("[") == 3 and "[Thread] scope" in marked(snip, "[", "]")


def test_english_terms_are_whole_words_like_the_index():
    text = "Threads differ from a thread; THREAD-safe code is rare. Rethread nothing. Café au lait."
    snip = snippet(text, ["thread", "cafe"])
    # the index stems words: Threads is a form of thread; Rethread is another word
    assert cut(snip["text"], snip["highlights"]) == ["Threads", "thread", "THREAD", "Café"]


def test_terms_at_the_start_and_end_of_a_long_block():
    words = " ".join(f"word{n}" for n in range(200))
    first = snippet("Alpha " + words, ["alpha"])
    assert first["text"].startswith("Alpha ") and cut(first["text"], first["highlights"]) == ["Alpha"]
    assert first["text"].endswith("…") and len(first["text"]) <= SNIPPET_CHARS + 2
    last = snippet(words + " Omega", ["omega"])
    assert last["text"].startswith("…") and last["text"].endswith("Omega")
    assert cut(last["text"], last["highlights"]) == ["Omega"]
    assert not last["text"][1].isspace() and last["text"].split()[0][1:].startswith("word")  # cut at a space


def test_highlights_are_utf16_offsets():
    text = "𝒳 marks 线程 and 𝒴 marks thread"
    snip = snippet(text, ["线程", "thread"])
    js = snip["text"].encode("utf-16-le")
    assert [js[2 * s : 2 * e].decode("utf-16-le") for s, e in snip["highlights"]] == ["线程", "thread"]
    assert snip["highlights"][0] == [9, 11]  # 𝒳 is two UTF-16 units: index 8 in Python, 9 in JavaScript


def test_no_match_gives_the_start_of_the_block():
    snip = snippet("x " * 200, ["absent"])
    assert snip["highlights"] == [] and snip["text"].startswith("x x") and snip["text"].endswith("…")


# -- the handler on a real build -----------------------------------------------------
@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    base = tmp_path_factory.mktemp("results")
    root = base / "ws"
    (root / "研究").mkdir(parents=True)
    (root / "研究2").mkdir()
    (root / "notes").mkdir()
    (root / "研究" / "并发.md").write_text(
        "# 并发\n\n" + LONG_CN + "\n\n线程池与线程作用域。\n\nA thread pool runs tasks.\n", "utf-8"
    )
    (root / "研究2" / "其他.md").write_text("# 其他\n\n另一个线程的笔记。\n", "utf-8")
    (root / "notes" / "ledger.md").write_text(
        "# Ledger\n\n"
        + "\n\n".join(  # two lengths: bm25 ranks port.md and
            # tides.pdf after the 110 short entries, before the long ones, inside the first ranked window
            f"Ledger entry {n} for the harbour office{'' if n % 10 == 0 else ' of the northern district'}."
            for n in range(MANY)
        )
        + "\n",
        "utf-8",
    )
    (root / "notes" / "port.md").write_text(
        "# Port\n\nPort notes: the harbour basin is dredged each spring.\n", "utf-8"
    )
    doc = pymupdf.open()
    for n in range(1, 13):  # one repeated body line on 12 pages: a tie broken by page number
        page = doc.new_page()  # at another height on each page: body, not a running header
        page.insert_text((72, 120 + 30 * n), "Tide tables: harbour basin.")
        page.insert_text((72, 140 + 30 * n), f"Page {n} lists arrivals.")
    doc.save(root / "notes" / "tides.pdf")
    out = base / "out"
    run_build(root, out)
    return Context(EvidenceDB(out / "evidence.sqlite"), "/site/")


def ask(ctx, **request):
    status, body = call(lambda r: search(r, ctx), request)
    assert status == 200, body
    return body


def test_each_result_carries_a_snippet_of_its_block(ws):
    body = ask(ws, query="线程作用域", topK=5)
    assert body["results"]
    for r in body["results"]:
        snip = r["snippet"]
        assert "线程作用域" in cut(snip["text"], snip["highlights"])
        assert "线程 程作" not in snip["text"]
        assert r["source"]["sectionPath"] == ["并发"]  # the locator already names section and line


def test_pages_partition_the_ranking(ws):
    whole = ask(ws, query="harbour", topK=50)
    assert whole["total"] == RANK_WINDOW and whole["totalIsLowerBound"]  # 1,113 match: counted to the window
    seen, offset, pages = [], 0, 0
    while offset < 120:
        body = ask(ws, query="harbour", topK=7, offset=offset)
        assert body["offset"] == offset and body["total"] == whole["total"]
        seen += [r["evidenceId"] for r in body["results"]]
        offset, pages = body["nextOffset"], pages + 1
    assert len(seen) == len(set(seen)) == 7 * pages  # no duplicates
    everything = {r["evidenceId"] for r in ask(ws, query="harbour basin", topK=50)["results"]}
    paged, offset = [], 0
    while offset is not None:  # pages of the same topK
        body = ask(ws, query="harbour basin", topK=3, offset=offset)
        paged += [r["evidenceId"] for r in body["results"]]
        offset = body.get("nextOffset")
    assert len(paged) == len(set(paged)) == len(everything) == 13 and set(paged) == everything  # no omissions
    last = ask(ws, query="tide", topK=5, offset=10)
    assert last["total"] == 12 and len(last["results"]) == 2 and "nextOffset" not in last


def test_total_is_a_lower_bound_past_the_counted_window(ws):
    body = ask(ws, query="ledger", topK=3)
    assert body["totalIsLowerBound"] and body["total"] == RANK_WINDOW
    assert ask(ws, query="ledger", topK=3, folder="研究")["total"] == 0
    exact = ask(ws, query="线程")
    assert not exact["totalIsLowerBound"] and exact["total"] == 3  # 研究/并发.md x2 blocks + 研究2/其他.md
    assert "nextOffset" not in exact


def test_ties_come_in_page_order_across_pages(ws):
    pages = []
    for offset in (0, 5, 10):
        body = ask(ws, query="tide tables harbour", topK=5, offset=offset)
        pages += [r["source"]["page"] for r in body["results"]]
    assert pages == list(range(1, 13))  # p.2 before p.10, and page boundaries keep the order


def test_grouped_by_document(ws):
    pages, offset = [], 0
    while offset is not None:
        body = ask(ws, query="harbour", groupBy="document", topK=1, perDocument=2, offset=offset)
        [g] = body["groups"]
        block = body["results"][g["first"] : g["first"] + g["count"]]
        assert {r["source"]["resourcePath"] for r in block} == {g["resourcePath"]}
        expanded = ask(ws, query="harbour", topK=50, **g["expand"])
        assert {r["source"]["resourcePath"] for r in expanded["results"]} == {g["resourcePath"]}
        assert [r["evidenceId"] for r in block] == [
            r["evidenceId"] for r in expanded["results"][: len(block)]
        ]
        pages.append(g)
        offset = body.get("nextOffset")
    assert sorted(g["resourcePath"] for g in pages) == ["notes/ledger.md", "notes/port.md", "notes/tides.pdf"]
    found = {g["resourcePath"]: (g["count"], g["more"], g["moreIsLowerBound"]) for g in pages}
    assert found["notes/tides.pdf"] == (2, 10, False) and found["notes/port.md"] == (1, 0, False)
    # the short ledger entries rank first; its 1,100 matches are counted past the 250 ranked, up to
    # 1,000 (`more` is then "at least"); the last page widens to every match looking for a 4th file
    assert [g["resourcePath"] for g in pages] == ["notes/ledger.md", "notes/tides.pdf", "notes/port.md"]
    assert found["notes/ledger.md"] == (2, 998, True)
    assert ask(ws, query="harbour", groupBy="document", topK=2, offset=3)["groups"] == []


def test_grouping_widens_until_it_finds_enough_files(ws):
    body = ask(ws, query="ledger", groupBy="document", perDocument=1)
    [group] = body["groups"]  # one file holds every match: all of them are ranked to look for a second
    assert group["resourcePath"] == "notes/ledger.md" and group["count"] == 1
    assert group["more"] == MANY and not group["moreIsLowerBound"]  # the heading and 1,100 entries, exact
    assert body["total"] == MANY + 1 and not body["totalIsLowerBound"] and "nextOffset" not in body


def test_folder_is_a_folder_not_a_prefix(ws):
    paths = {r["source"]["resourcePath"] for r in ask(ws, query="线程", folder="研究")["results"]}
    assert paths == {"研究/并发.md"}
    assert {r["source"]["resourcePath"] for r in ask(ws, query="线程", folder="研究/")["results"]} == paths
    raw_prefix = {r["source"]["resourcePath"] for r in ask(ws, query="线程", pathPrefix="研究")["results"]}
    assert raw_prefix == {"研究/并发.md", "研究2/其他.md"}  # pathPrefix stays a plain string prefix
    kinds = ask(ws, query="harbour", resourceKinds=["pdf"], topK=50)
    assert kinds["total"] == 12 and {r["source"]["resourceKind"] for r in kinds["results"]} == {"pdf"}


@pytest.mark.parametrize(
    "request_, message",
    [
        ({"query": "x", "offset": -1}, "'offset'"),
        ({"query": "x", "offset": 995, "topK": 10}, "at most 1000"),
        ({"query": "x", "groupBy": "page"}, "'groupBy'"),
        ({"query": "x", "perDocument": 9}, "'perDocument'"),
        ({"query": "x", "mode": "graph", "offset": 10}, "mode fts"),
        ({"query": "x", "mode": "hybrid", "groupBy": "document"}, "mode fts"),
        ({"query": "x", "folder": 3}, "'folder'"),
    ],
)
def test_bad_paging_requests_are_400_with_a_message(ws, request_, message):
    status, body = call(lambda r: search(r, ws), request_)
    assert status == 400 and message in body["error"]["message"], body
