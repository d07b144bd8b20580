"""The Datasette evidence search page in a real `datasette` process over a real build:
escaped snippets with marked terms, locators linking into the mounted site, pages, filters, groups,
4xx with a message for bad parameters, linked from Datasette's menu, raw tables still there."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import lxml.html
import pytest

from tests.conftest import run_build
from tests.servers import start_datasette, stop

PAGE = "/-/evidence/search-page"
HOSTILE = 'Escape `<script>alert("x")</script>` & <b>tags</b> in harbour notes.'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("page")
    root = base / "ws"
    (root / "研究").mkdir(parents=True)
    (root / "研究2").mkdir()
    (root / "研究" / "港口.md").write_text(
        "# 港口\n\n"
        + "\n\n".join(f"Harbour log {n}: 线程 ships arrived." for n in range(23))
        + "\n\n"
        + HOSTILE
        + "\n",
        "utf-8",
    )
    (root / "研究2" / "别处.md").write_text("# 别处\n\nAnother harbour, elsewhere.\n", "utf-8")
    out = base / "out"
    run_build(root, out, site=True)
    proc, url = start_datasette(out / "evidence.sqlite")
    yield url
    stop(proc)


def get(server: str, url: str, **params) -> httpx.Response:
    return httpx.get(urljoin(server, url), params=params or None, timeout=30)


def doc(r: httpx.Response):
    return lxml.html.fromstring(r.text)


def css(el, selector: str) -> list:
    """The few selectors used here, as XPath: `.class`, `.class tag`, `tag[attr=value]`, `tag`."""
    xpath = ".//*"
    for part in selector.split():
        if part.startswith("."):
            xpath += f"[contains(concat(' ', @class, ' '), ' {part[1:]} ')]"
        elif "[" in part:
            tag, attr, value = re.fullmatch(r"(\w+)\[(\w+)=(\w+)\]", part).groups()
            xpath += f"//{tag}[@{attr}='{value}']"
        else:
            xpath += f"//{part}"
    return el.xpath(xpath.replace(".//*//", ".//"))


def test_snippets_are_escaped_and_marked(server):
    r = get(server, PAGE, q="script")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "<script>alert" not in r.text  # the note's text is shown, never run
    snippet = css(doc(r), ".ev-snippet")[0]
    assert [m.text for m in css(snippet, "mark")] == ["script", "script"]
    assert "&lt;<mark>script</mark>&gt;alert(&#34;x&#34;)&lt;/<mark>script</mark>&gt;" in r.text
    assert "&amp; tags in harbour" in r.text


def test_locators_link_into_the_site(server):
    page = doc(get(server, PAGE, q="线程", topK="3"))
    links = css(page, ".ev-where a")
    assert len(links) == 3
    for a in links:
        assert a.text_content().startswith("研究/港口.md · line ") and " · 港口" in a.text_content()
        url = urlsplit(a.get("href"))
        assert url.path.startswith("/-/evidence/site/")
        target = get(server, url.path)
        assert target.status_code == 200 and f'id="{url.fragment}"' in target.text


def test_pages_and_filters(server):
    first = get(server, PAGE, q="harbour")
    page = doc(first)
    assert "25 matching blocks · results 1–10" in css(page, ".ev-total")[0].text_content()
    assert not css(page, "a[rel=prev]")
    seen = [a.get("href") for a in css(page, ".ev-where a")]
    for expected in ("results 11–20", "results 21–25"):
        page = doc(get(server, css(page, "a[rel=next]")[0].get("href")))
        assert expected in css(page, ".ev-total")[0].text_content()
        seen += [a.get("href") for a in css(page, ".ev-where a")]
    assert len(seen) == len(set(seen)) == 25 and not css(page, "a[rel=next]")
    back = doc(get(server, css(page, "a[rel=prev]")[0].get("href")))
    assert "results 11–20" in css(back, ".ev-total")[0].text_content()
    folder = doc(get(server, PAGE, q="harbour", folder="研究2"))
    assert [a.text_content() for a in css(folder, ".ev-where a")] == ["研究2/别处.md · line 3 · 别处"]
    assert css(folder, "input[name=folder]")[0].get("value") == "研究2"
    assert not css(doc(get(server, PAGE, q="harbour", kind="pdf")), ".ev-where a")


def test_grouped_by_file_with_more(server):
    page = doc(get(server, PAGE, q="harbour", group="1"))
    heads = [css(h, "a")[0].text for h in css(page, ".ev-group")]
    assert sorted(heads) == ["研究/港口.md", "研究2/别处.md"]
    more = css(page, ".ev-more a")
    assert len(more) == 1 and more[0].text.startswith("21 more in this file")
    query = parse_qs(urlsplit(more[0].get("href")).query)
    assert query["file"] == ["研究/港口.md"]
    expanded = doc(get(server, more[0].get("href")))
    assert "24 matching blocks in 研究/港口.md" in css(expanded, ".ev-total")[0].text_content()


@pytest.mark.parametrize(
    "params, message",
    [
        ({"q": "x", "offset": "-4"}, "'offset'"),
        ({"q": "x", "topK": "many"}, "'topK'"),
        ({"q": "x", "kind": "spreadsheet"}, "unknown resourceKinds"),
        ({"q": "!!!"}, "nothing to search for"),
    ],
)
def test_bad_parameters_are_400_with_a_message(server, params, message):
    r = get(server, PAGE, **params)
    assert r.status_code == 400 and "Traceback" not in r.text
    assert message in css(doc(r), ".ev-error")[0].text_content()


def test_linked_from_datasette_and_raw_tables_stay(server):
    empty = get(server, PAGE)
    assert empty.status_code == 200 and css(doc(empty), "input[name=q]")
    assert get(server, "/evidence").text.count(f'href="{PAGE}"') == 2  # the menu and the database's actions
    assert get(server, "/-/plugins").text.count(f'href="{PAGE}"') == 1  # the menu, on every page
    assert get(server, "/evidence/evidence_block", _search="线程").status_code == 200
