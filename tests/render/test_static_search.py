"""The site's search box on every way the site is opened: served by `mnote-evidence serve`, on a plain
static host (`python -m http.server`, which sends whole files, and a host that serves byte ranges),
and from file://. Real processes and real Chromium; a Chinese and an English query are typed into the box
and a result is opened onto its highlighted anchor. The static path must give the API's results in the
API's order with the same URLs, and its JavaScript must build the same FTS query as build/core/text.py.
"""

from __future__ import annotations

import random
import re
import sqlite3
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urljoin

import pytest

from mnote_evidence.build.core.assets import asset_dir
from mnote_evidence.build.core.text import (
    EN_STOPWORDS,
    ZH_FINAL,
    ZH_STOPWORDS,
    QueryError,
    fts_any_query,
    fts_query,
    meaning_terms,
    query_terms,
)
from mnote_evidence.build.render import search_fold
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import search
from mnote_evidence.functions.search import snippet
from mnote_evidence.functions.search.fts import phrase_of
from tests.conftest import shoot
from tests.servers import free_port, start, start_serve, stop

HIGHLIGHT = "rgb(230, 119, 0)"  # --accent outline of a :target block
QUERIES = ["吗啉", "retention period"]  # a two-character Chinese term, English words


def static_host(out: Path, ranges: bool) -> tuple:
    port = free_port()
    if ranges:
        cmd = [sys.executable, "-m", "tests.range_server", str(out), str(port)]
    else:
        cmd = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(out)]
    base = f"http://127.0.0.1:{port}/"
    return start(cmd, base, cwd=Path(__file__).resolve().parents[2]), base


def quiet(page):
    page.route("**/favicon.ico", lambda route: route.fulfill(status=204, body=""))  # not ours to ship


def type_query(page, query: str) -> list[str]:
    """Type `query` into the box; the hrefs of the results shown (best passage of each file first)."""
    page.fill("form.search input", query)
    page.press("form.search input", "Enter")
    page.wait_for_selector("#search-results .result", timeout=30_000)
    return page.eval_on_selector_all("#search-results .result", "els => els.map(a => a.href)")


def open_first_result(page) -> str:
    page.click("#search-results .result")
    page.wait_for_load_state("load")
    target = page.evaluate("decodeURIComponent(location.hash.slice(1))")
    assert target.startswith("b-")
    assert page.eval_on_selector(f'[id="{target}"]', "el => getComputedStyle(el).outlineColor") == HIGHLIGHT
    assert page.eval_on_selector(f'[id="{target}"]', "el => el.matches(':target')")
    return target


FIRST_ASK = 20  # passages the box asks for first (search.js FETCH)


def api_results(out: Path, query: str, top_k: int = FIRST_ASK) -> list[dict]:
    ctx = Context(db=EvidenceDB(out / "evidence.sqlite"), site_base="")
    return search({"query": query, "topK": top_k}, ctx)["results"]


def site_relative(url: str, root: str) -> str:
    assert url.startswith(root), (url, root)
    return unquote(url[len(root) :])


@pytest.mark.parametrize("ranges", [True, False], ids=["range-host", "python-http-server"])
def test_static_host_search_matches_the_api_and_opens_the_anchor(site, page, ranges):
    _, out = site
    proc, base = static_host(out, ranges)
    try:
        quiet(page)
        page.goto(base + "Projects/Evidence%20Kernel.html")
        for query in QUERIES:
            hrefs = type_query(page, query)
            data = page.evaluate("q => window.mnoteEvidence.search(q)", query)
            expected = api_results(out, query)
            assert [r["evidenceId"] for r in data["results"]] == [r["evidenceId"] for r in expected]
            assert [
                site_relative(urljoin(page.url, r["source"]["openAction"]["url"]), base)
                for r in data["results"]
            ] == [unquote(r["source"]["openAction"]["url"]) for r in expected]
            assert hrefs[0] == urljoin(page.url, data["results"][0]["source"]["openAction"]["url"])
            marks = page.eval_on_selector_all(
                "#search-results .result mark", "els => els.map(e => e.textContent)"
            )
            assert marks and all(m.lower() in query.lower() for m in marks), marks
            assert "matching passage" in page.inner_text("#search-results .result-count")
            stats = page.evaluate("window.mnoteEvidence.searchStats()")
            index = sum(f.stat().st_size for f in (out / "_search").rglob("*") if f.is_file())
            assert index < (out / "evidence.sqlite").stat().st_size  # what the box needs only
            assert stats["requests"] >= 3 and 0 < stats["bytes"] < index, stats  # the files its words need
            shoot(page, f"static-search-{'range' if ranges else 'plain'}-{'zh' if query == '吗啉' else 'en'}")
            open_first_result(page)
            page.go_back()
            page.wait_for_load_state("load")
        assert page.console_errors == [] and page.dialogs == []
    finally:
        stop(proc)


def box_texts(page) -> list[str]:
    """The count line and the "n more in this file" buttons, as shown."""
    return [page.inner_text("#search-results .result-count")] + page.eval_on_selector_all(
        "#search-results .more-in-file, #search-results .more-results", "els => els.map(e => e.textContent)"
    )


def test_served_search_box_opens_the_same_anchors_as_the_static_host(site, page):
    """The same links, count text and "n more in this file" buttons on both paths."""
    _, out = site
    proc, base = start_serve(out)
    host, static_base = static_host(out, True)
    try:
        quiet(page)
        for query in QUERIES:
            page.goto(base + "/-/evidence/site/index.html")
            served = [site_relative(h, base + "/-/evidence/site/") for h in type_query(page, query)]
            served_text = box_texts(page)
            page.goto(static_base + "index.html")
            static = [site_relative(h, static_base) for h in type_query(page, query)]
            assert served == static and served
            assert box_texts(page) == served_text and "matching passage" in served_text[0]
            page.goto(base + "/-/evidence/site/index.html")
            type_query(page, query)
            open_first_result(page)
        assert page.console_errors == []
    finally:
        stop(host)
        stop(proc)


def test_file_url_says_what_works_and_anchors_still_highlight(site, page):
    _, out = site
    page.goto((out / "index.html").as_uri())
    for query in QUERIES:
        page.fill("form.search input", query)
        page.press("form.search input", "Enter")
        text = page.inner_text("#notice")
        assert "python -m http.server" in text and "mnote-evidence serve" in text
    # what a search would open still works from disk, without JavaScript
    hit = api_results(out, QUERIES[0])[0]["source"]["openAction"]["url"]
    page.goto(urljoin((out / "index.html").as_uri(), hit))
    page.wait_for_load_state("load")
    target = hit.split("#", 1)[1]
    assert page.eval_on_selector(f'[id="{target}"]', "el => getComputedStyle(el).outlineColor") == HIGHLIGHT
    assert page.console_errors == []


def test_kind_filter_and_grouping(site, page):
    _, out = site
    proc, base = static_host(out, True)
    try:
        quiet(page)
        page.goto(base + "index.html")
        type_query(page, "吗啉")
        groups = page.eval_on_selector_all("#search-results .result-group", "els => els.length")
        files = {r["source"]["resourcePath"] for r in api_results(out, "吗啉")}
        assert groups == len(files)
        more = page.query_selector("#search-results .more-in-file")
        assert more is not None and "more in this file" in more.inner_text()
        hidden = page.eval_on_selector_all("#search-results .group-rest .result", "els => els.length")
        more.click()
        assert (
            page.eval_on_selector_all(
                "#search-results .result", "els => els.filter(e => e.offsetParent).length"
            )
            == groups + hidden
        )
        page.select_option("form.search select[name=kind]", "markdown")
        deadline = time.monotonic() + 30  # polled from here: the page's CSP forbids wait_for_function's eval
        while not page.eval_on_selector_all(
            "#search-results small", "els => els.length > 0 && els.every(s => s.textContent.includes('.md'))"
        ):
            assert time.monotonic() < deadline, "the kind filter left other kinds in the results"
            page.wait_for_timeout(50)
        assert page.console_errors == []
    finally:
        stop(proc)


def all_result_ids(page) -> list[str]:
    return page.eval_on_selector_all("#search-results .result", "els => els.map(a => a.hash.slice(1))")


def more_until_done(page) -> int:
    clicks = 0
    while page.query_selector("#search-results .more-results"):
        before = len(all_result_ids(page))
        page.click("#search-results .more-results")
        deadline = time.monotonic() + 30  # polled from here: the page's CSP forbids wait_for_function's eval
        while len(all_result_ids(page)) <= before and page.query_selector("#search-results .more-results"):
            assert time.monotonic() < deadline, "More results added nothing"
            page.wait_for_timeout(50)
        clicks += 1
    return clicks


PARITY_QUERIES = ["线程作用域", "evidence", "the", "吗啉", "线程"]  # Chinese, English, two-character Chinese
# questions no block holds whole: any-term matching (matchMode "any") on both paths
FALLBACK_QUERIES = [
    "吡咯烷 的沸点是多少？",
    "What is the retention period of thread scope evidence?",
    "thread sco",  # and with prefixLast: thread AND sco*
]


def comparable(answer: dict, url=lambda u: unquote(u)) -> dict:
    """An answer's page as both paths must give it: ids in order, opened URLs, snippets, quotes, totals,
    pages, groups."""
    return {
        "ids": [r["evidenceId"] for r in answer["results"]],
        "urls": [url(r["source"]["openAction"]["url"]) for r in answer["results"]],
        "snippets": [r["snippet"] for r in answer["results"]],
        "quotes": [r["quote"] for r in answer["results"]],
        **{k: answer.get(k) for k in ("matchMode", "total", "totalIsLowerBound", "nextOffset", "groups")},
    }


def assert_same_pages(page, out: Path, queries: list[str], requests: list[dict]) -> int:
    """Every request, then its next page (offset = nextOffset), on the static path and the Python handler;
    how many second pages were compared."""
    ctx = Context(db=EvidenceDB(out / "evidence.sqlite"), site_base="")
    base = page.url.rsplit("/", 1)[0] + "/"
    seconds = 0
    for query in queries:
        for shape in requests:
            request = {"query": query, **shape}
            while True:
                want = comparable(search(request, ctx))
                relative = lambda u: site_relative(urljoin(page.url, u), base)  # noqa: E731
                got = comparable(page.evaluate("r => window.mnoteEvidence.searchExact(r)", request), relative)
                assert got == want, request
                if "groupBy" not in request:  # what the box asks: the same page, a total counted less deep
                    lean = comparable(page.evaluate("r => window.mnoteEvidence.search(r)", request), relative)
                    assert {**lean, "total": None, "totalIsLowerBound": None} == {
                        **want,
                        "total": None,
                        "totalIsLowerBound": None,
                    }, request
                    assert lean["total"] <= want["total"] and (lean["totalIsLowerBound"] or lean == want)
                if want["nextOffset"] is None or request.get("offset"):
                    break
                request = {**request, "offset": want["nextOffset"]}
                seconds += 1
    return seconds


def test_static_pages_and_groups_are_the_apis(site, page):
    """Flat pages (offset → nextOffset) and grouped pages of the static path are the handler's, id for id."""
    _, out = site
    proc, base = static_host(out, True)
    try:
        quiet(page)
        page.goto(base + "index.html")
        seconds = assert_same_pages(
            page,
            out,
            PARITY_QUERIES + FALLBACK_QUERIES,
            [
                {"topK": 2},
                {"topK": 2, "prefixLast": True},
                {"topK": 3, "resourceKinds": ["markdown"]},
                {"topK": 2, "groupBy": "document", "perDocument": 2},
                {"topK": 1, "groupBy": "document"},
            ],
        )
        assert seconds >= 10  # second pages were compared, for every kind of query
        assert page.console_errors == []
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def crowded_site(tmp_path_factory) -> Path:
    """A site where the terms match more than the 250 passages ranked at first: many ties (the same sentence
    in many notes and on the 12 pages of a PDF), chunks re-ranked apart, totals that are lower bounds."""
    import pymupdf

    from tests.conftest import run_build

    base = tmp_path_factory.mktemp("crowded")
    root = base / "ws"
    for n in range(40):
        folder = root / ("线程" if n % 3 else "notes")
        folder.mkdir(parents=True, exist_ok=True)
        paras = [
            "线程作用域 thread scope evidence.",
            f"第 {n} 条：线程池和线程作用域的区别 evidence of thread pools.",
            "吗啉的线程 the morpholine thread.",
            f"The thread scope of note {n}, evidence retained.",
        ]
        (folder / f"note {n}.md").write_text(
            f"# Note {n}\n\n" + "\n\n".join(paras * (1 + n % 3)) + "\n", "utf-8"
        )
    long = " ".join(f"word{i} 线程作用域说明{i}" if i == 60 else f"filler{i} 填充" for i in range(120))
    (root / "notes/long.md").write_text(
        f"# Long\n\n{long} thread scope evidence {long}\n", "utf-8"
    )  # cut quotes
    doc = pymupdf.open()
    for i in range(12):  # at a different height on each page: body, not a running header
        doc.new_page().insert_text((72, 100 + 40 * i), "thread scope evidence on every page", fontsize=11)
    doc.save(root / "notes/repeated.pdf")
    out = base / "out"
    run_build(root, out, site=True)
    return out


@pytest.fixture(scope="module")
def pages_site(tmp_path_factory) -> Path:
    """tests/functions/test_page_matching.py's manual and note, with the site: page and section hits."""
    from tests.conftest import run_build
    from tests.functions.test_page_matching import write_workspace

    root = write_workspace(tmp_path_factory.mktemp("pages") / "ws")
    run_build(root, root.parent / "out", site=True)
    return root.parent / "out"


def test_static_phrase_page_and_section_matches_are_the_apis(pages_site, page):
    """Exact-phrase blocks first, page and section hits below the block hits, with their other blocks:
    the static path answers as the handler does, page by page and grouped."""
    proc, base = static_host(pages_site, True)
    try:
        quiet(page)
        page.goto(base + "index.html")
        queries = [
            "polargraph yzero",
            "bounded by a path",
            "congestion retransmits router segments",
            "polargraph function",
            "bounded path",
        ]
        for query in queries:
            want = search(
                {"query": query}, Context(db=EvidenceDB(pages_site / "evidence.sqlite"), site_base="")
            )
            got = page.evaluate("r => window.mnoteEvidence.searchExact(r)", {"query": query})
            assert [(r.get("matchLevel"), r.get("alsoMatched")) for r in got["results"]] == [
                (r.get("matchLevel"), r.get("alsoMatched")) for r in want["results"]
            ], query
        want = search({"query": "polargraph yzero"}, Context(db=EvidenceDB(pages_site / "evidence.sqlite")))
        top = want["results"][0]
        type_query(page, "polargraph yzero")
        page.click("#search-results .result")
        page.wait_for_load_state("load")
        marked = page.eval_on_selector_all(".hl", "els => els.map(e => e.id)")
        assert sorted(marked) == sorted([top["evidenceId"], *top["alsoMatched"]])  # the page's blocks, marked
        page.goto(base + "index.html")
        seconds = assert_same_pages(
            page,
            pages_site,
            queries,
            [{"topK": 1}, {"topK": 2, "prefixLast": True}, {"topK": 1, "groupBy": "document"}],
        )
        assert seconds >= 3
        assert page.console_errors == []
    finally:
        stop(proc)


REAL = Path(__file__).resolve().parents[1] / "real_documents"


@pytest.fixture(scope="module")
def manuals_site(tmp_path_factory) -> Path:
    """Real documents nobody here wrote: three PDF manuals (R FAQ, libtasn1, shared-mime-info), Word
    files and vimtutor's Chinese translation (GB2312), with the site."""
    from tests.conftest import run_build

    root = tmp_path_factory.mktemp("manuals") / "ws"
    for folder in ("manuals", "docx"):
        for path in sorted((REAL / folder).glob("*.*")):
            if path.suffix in (".pdf", ".docx"):
                (root / folder).mkdir(parents=True, exist_ok=True)
                (root / folder / path.name).write_bytes(path.read_bytes())
    (root / "vimtutor.md").write_bytes((REAL / "encodings/vimtutor-zh-gb2312.md").read_bytes())
    run_build(root, root.parent / "out", site=True)
    return root.parent / "out"


def sampled_queries(db: Path, seed: int = 5) -> list[str]:
    """Words, two-word phrases and Chinese substrings (two and four characters) of the indexed text."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    texts = [
        t for (t,) in conn.execute("SELECT text FROM evidence_block_row WHERE role = 'body' ORDER BY id")
    ]
    conn.close()
    rnd = random.Random(seed)
    words = [w for t in texts for w in re.findall(r"[A-Za-z]{4,}", t)]
    pairs = [m for t in texts for m in re.findall(r"[A-Za-z]{3,} [A-Za-z]{3,}", t)]
    runs = [r for t in texts for r in re.findall(r"[\u4e00-\u9fff]{4,}", t)]
    chinese = [
        r[i : i + n] for r in rnd.sample(runs, 6) for n in (2, 4) for i in [rnd.randrange(len(r) - n + 1)]
    ]
    return rnd.sample(words, 6) + rnd.sample(pairs, 4) + chinese


def test_static_answers_are_the_apis_on_real_manuals(manuals_site, page):
    """On real PDF manuals, Word files and a Chinese text, sampled words, phrases and Chinese substrings
    get the handler's pages, totals, snippets and groups from the static index."""
    queries = sampled_queries(manuals_site / "evidence.sqlite")
    assert len(queries) == 22 and sum(bool(re.search(r"[\u4e00-\u9fff]", q)) for q in queries) == 12
    ctx = Context(db=EvidenceDB(manuals_site / "evidence.sqlite"), site_base="")
    kinds = {r["source"]["resourceKind"] for q in queries for r in search({"query": q}, ctx)["results"]}
    assert {"pdf", "markdown"} <= kinds, kinds
    proc, base = static_host(manuals_site, True)
    try:
        quiet(page)
        page.goto(base + "index.html")
        assert_same_pages(
            page,
            manuals_site,
            queries,
            [
                {"topK": 10},
                {"topK": 5, "prefixLast": True},
                {"topK": 5, "groupBy": "document", "perDocument": 2},
            ],
        )
    finally:
        stop(proc)


def test_static_pages_and_groups_are_the_apis_past_the_ranked_window(crowded_site, page):
    """Deep pages (crossing re-rank chunks), lower-bound totals, grouped files whose `more` is counted
    in the file, kind and folder filters: the static path answers as the handler does."""
    proc, base = static_host(crowded_site, True)
    try:
        quiet(page)
        page.goto(base + "index.html")
        ctx = Context(db=EvidenceDB(crowded_site / "evidence.sqlite"), site_base="")
        first = search({"query": "thread", "topK": 10}, ctx)
        assert first["totalIsLowerBound"] and first["total"] >= 250  # the window is the handler's
        seconds = assert_same_pages(
            page,
            crowded_site,
            ["线程", "thread scope", "线程作用域"],
            [
                {"topK": 10},
                {"topK": 7, "offset": 49},
                {"topK": 10, "offset": 240},
                {"topK": 5, "folder": "线程"},
                {"topK": 4, "resourceKinds": ["pdf"]},
                {"topK": 3, "groupBy": "document", "perDocument": 2},
                {"topK": 4, "groupBy": "document", "offset": 4},
            ],
        )
        assert seconds >= 3
        assert page.console_errors == []
    finally:
        stop(proc)


@pytest.mark.parametrize("path", ["static", "served"])
def test_more_results_reaches_every_passage(site, page, path):
    _, out = site
    proc, base = static_host(out, True) if path == "static" else start_serve(out)
    try:
        quiet(page)
        page.goto(base + ("index.html" if path == "static" else "/-/evidence/site/index.html"))
        type_query(page, "the")
        want = [r["evidenceId"] for r in api_results(out, "the", 50)]
        assert len(want) > FIRST_ASK  # the query needs a second ask
        assert len(all_result_ids(page)) == FIRST_ASK
        assert more_until_done(page) >= 1
        assert sorted(all_result_ids(page)) == sorted(want)
        assert page.console_errors == []
    finally:
        stop(proc)


INPUTS = [
    "吗啉",
    "线程作用域",
    "线",
    "Thread scope 线程作用域",
    "retention period",
    "  ",
    "AND OR NOT",
    '"quoted" (x)*',
    "吡咯烷 boiling point",
    "ｒｅｔｅｎｔｉｏｎ",
    "N-甲基吡咯烷酮",
    "café naïve",
    "under_score 2024 v1.2",
    "日本語のテキスト",
    "한국어 검색",
    "mixed中文English混合",
    "\x00",
    "ｶﾀｶﾅ",
    "①②",
    "𠀀𠀁 test",
    "e\u0301t\u00e9",
    "Ünïcödé ß",
    "What does the E-value depend on?",
    "吡咯烷 的沸点是多少？",
    "请问吗啉是什么呢",
    "the of",
    "retention peri",
    "homol ",
    "吗啉 ret",
    *(f"{w} zebra" for w in sorted(EN_STOPWORDS)),  # every stopword of both lists, in both
    *(f"吗啉{w}沸点" for w in ZH_STOPWORDS),
    *(f"沸点{w}" for w in ZH_FINAL),
]


def test_js_builds_the_same_fts_query_as_python(site, page):
    """Every way a query becomes FTS syntax and terms: all terms, the last one as a prefix, any-term
    matching of the meaning-bearing terms (each stopword of both lists tried)."""
    _, out = site
    page.goto((out / "index.html").as_uri())
    js = page.evaluate(
        """qs => qs.map(q => {
             const Q = window.mnoteSearchQuery, tried = f => { try { return [f(), null]; }
                                                            catch (e) { return [null, e.message]; } };
             return [tried(() => Q.ftsQuery(q)), tried(() => Q.ftsQuery(q, true)),
                     tried(() => Q.ftsAnyQuery(q)), Q.queryTerms(q), Q.meaningTerms(q),
                     tried(() => Q.phraseOf(q)), tried(() => Q.phraseOf(q, true))];
           })""",
        INPUTS,
    )

    def tried(f, *args):
        try:
            return [f(*args), None]
        except QueryError as exc:
            return [None, str(exc)]

    for q, got in zip(INPUTS, js):
        want = [
            tried(fts_query, q),
            tried(fts_query, q, True),
            tried(fts_any_query, q),
            query_terms(q),
            meaning_terms(q),
            tried(phrase_of, q),
            tried(phrase_of, q, True),
        ]
        assert got == want, q


SNIPPET_CASES = [
    (
        "The retention period for audit evidence is seven years from the end of the fiscal year.",
        "retention period",
    ),
    ("补充吗啉的毒理数据。吗啉是一种杂环化合物，沸点 129 °C。" * 8, "吗啉 沸点"),
    ("Café NAÏVE résumé straße and more words " * 6, "cafe naive"),
    ("𠀀𠀁 test emoji 😀 test 线程作用域 after " * 10, "test 线程"),
    ("Nothing matches here at all, a long sentence " * 8, "zebra"),
    ("wordwordword retention, retentionist retention. " * 9, "retention"),
    (
        "The homologs of these genes were created by creating copies of libraries. " * 3,
        "homolog gene create library",
    ),
]


def js_snippet(page, text: str, query: str) -> dict:
    return page.evaluate(
        "([t, terms]) => window.mnoteSearchQuery.snippet(t, terms)", [text, query_terms(query)]
    )


def test_js_snippet_windows_and_highlights_the_terms(site, page):
    _, out = site
    page.goto((out / "index.html").as_uri())
    for text, query in SNIPPET_CASES:
        snip = js_snippet(page, text, query)
        assert len(snip["text"]) <= 162 + 2 and snip["text"].strip("…") in " ".join(
            text.split()
        )  # +2: astral
        marked = page.evaluate("""s => s.highlights.map(h => s.text.slice(h[0], h[1]))""", snip)
        if query == "zebra":
            assert marked == []
            continue
        assert marked, query
        for m in marked:  # whole words for Latin terms, substrings for CJK, never a bigram of the index
            assert any(
                m.lower() in t.lower() or t.lower() in m.lower()
                for t in ("retention", "period", "吗啉", "沸点", "café", "naïve", "test", "线程")
                + ("homolog", "gene", "creat", "librar")  # word forms: homologs, creating, libraries
            ), m
        assert "retentionist" not in marked and "wordwordword" not in marked


def test_js_snippet_is_the_apis(site, page):
    _, out = site
    page.goto((out / "index.html").as_uri())
    for text, query in SNIPPET_CASES:
        assert js_snippet(page, text, query) == snippet.snippet(text, query_terms(query)), query


def test_the_tokenizer_table_is_sqlites():
    """search_fold.js is what FTS5 itself says of every code point (regenerated here, compared whole)."""
    assert (asset_dir("site_templates") / "_static/search_fold.js").read_text("utf-8") == search_fold.table()


def fts5_tokens(texts: list[str]) -> list[list[str]]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", list(enumerate(texts, 1)))
    found: dict[int, list] = {}
    for term, doc, offset in conn.execute("SELECT term, doc, offset FROM v"):
        found.setdefault(doc, []).append((offset, term))
    return [[t for _, t in sorted(found.get(i, []))] for i in range(1, len(texts) + 1)]


def test_js_tokenizes_as_the_index_does(site, page):
    """A query word becomes the index's tokens in the browser exactly as FTS5's `porter unicode61
    remove_diacritics 2` makes them: every word of the fixture's index, English inflections (porter's
    steps), and random text over Latin, Greek, Cyrillic, symbols, marks and CJK."""
    _, out = site
    conn = sqlite3.connect(out / "evidence.sqlite")
    words = sorted({w for (t,) in conn.execute("SELECT text FROM evidence_block_row") for w in t.split()})
    conn.close()
    rnd = random.Random(3)
    pools = [
        (0x20, 0x24F),
        (0x300, 0x52F),
        (0x2000, 0x2FFF),
        (0x3000, 0x9FFF),
        (0xFF00, 0xFFEF),
        (0x41, 0x7A),
    ]
    noise = []
    for _ in range(3000):
        chars = []
        while len(chars) < rnd.randint(1, 10):
            lo, hi = rnd.choice(pools)
            chars.append(chr(rnd.randint(lo, hi)))
        noise.append("".join(chars))
    english = (
        "caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized "
        "hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational "
        "valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization "
        "predication operator feudalism decisiveness hopefulness callousness formaliti sensitiviti "
        "sensibiliti triplicate formative formalize electriciti electrical hopeful goodness revival "
        "allowance inference airliner gyroscopic adjustable defensible irritant replacement adjustment "
        "dependent adoption homologou communism activate angulariti homologous effective bowdlerize "
        "probate rate cease controll roll generalizations Straße Crème brûlée naïve ﬁnance ǅemal ΣΊΣΥΦΟΣ"
    ).split()
    texts = words + english + noise
    for name in ("search_fold.js", "search_index.js"):
        page.add_script_tag(path=str(asset_dir("site_templates") / "_static" / name))
    got = page.evaluate("texts => texts.map(t => window.mnoteSearchIndex.tokens(t))", texts)
    want = fts5_tokens(texts)
    wrong = [(t, g, w) for t, g, w in zip(texts, got, want, strict=True) if g != w]
    assert not wrong, wrong[:10]
    assert len(words) > 300


def test_js_constants_are_the_handlers():
    """The ranking's and the request's numbers in search_query.js are functions/'s (a change there must
    reach the static path too)."""
    import re

    from mnote_evidence.functions.handlers import evidence
    from mnote_evidence.functions.search import fts
    from mnote_evidence.functions.search import results as search_results

    source = (asset_dir("site_templates") / "_static/search_query.js").read_text("utf-8")
    js = {name: int(value) for name, value in re.findall(r"\b([A-Z_]+) = (\d+)\b", source)}
    want = {
        "CANDIDATES_PER_RESULT": fts.CANDIDATES_PER_RESULT,
        "MIN_CANDIDATES": fts.MIN_CANDIDATES,
        "MAX_WINDOW": fts.MAX_WINDOW,
        "RANK_WINDOW": fts.RANK_WINDOW,
        "MAX_DEPTH": search_results.MAX_DEPTH,
        "COUNT_CAP": search_results.COUNT_CAP,
        "MAX_TOP_K": evidence.MAX_TOP_K,
        "DEFAULT_TOP_K": evidence.DEFAULT_TOP_K,
        "DEFAULT_PER_DOCUMENT": evidence.DEFAULT_PER_DOCUMENT,
        "MAX_PER_DOCUMENT": evidence.MAX_PER_DOCUMENT,
        "UNIT_TERM_CAP": fts.UNIT_TERM_CAP,
    }
    assert {k: js.get(k) for k in want} == want
