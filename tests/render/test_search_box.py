"""The site's search box as people know it from other sites, in real Chromium at a phone's width (375 px)
and a desktop's (1280 px), on a site served by a real `mnote-evidence serve` and by a static host that
serves byte ranges: results as you type (debounced, never for one Latin letter, stale answers dropped),
`/` and Ctrl-K (Cmd-K) to focus, Escape to clear, arrow keys and Enter through the results (a listbox
for screen readers), and counts of every matching file and passage, not only of those loaded.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from tests.conftest import run_build, shoot
from tests.render.test_static_search import HIGHLIGHT, quiet, static_host
from tests.servers import start_serve, stop

WIDTHS = [375, 1280]
PATHS = ["served", "static"]
HEAVY = "The zephyr wind turns the vane; a zephyr again by evening."
# 2 files with 12 short passages each (ranked first), 3 with one long passage each, 1 PDF page: the box's
# first ask (20 passages) holds fewer of the 6 files
ZEPHYR_FILES, ZEPHYR_PASSAGES = 6, 12 + 12 + 3 + 1


@pytest.fixture(scope="module")
def vault(tmp_path_factory) -> Path:
    import pymupdf

    base = tmp_path_factory.mktemp("search-box")
    root = base / "ws"
    for name in ("Heavy one", "Heavy two"):
        (root / "Weather").mkdir(parents=True, exist_ok=True)
        paras = [f"{HEAVY} Day {n}." for n in range(12)]
        (root / f"Weather/{name}.md").write_text(f"# {name}\n\n" + "\n\n".join(paras) + "\n", "utf-8")
    filler = " ".join(f"word{i}" for i in range(80))
    for name in ("Light a", "Light b", "Light c"):
        (root / "Notes").mkdir(parents=True, exist_ok=True)
        (root / f"Notes/{name}.md").write_text(f"# {name}\n\n{filler} zephyr {filler}\n", "utf-8")
    (root / "Notes/Chemistry.md").write_text(
        "# 化学\n\n吗啉是一种杂环化合物，沸点 129 °C。\n\n吡咯烷的沸点是 87 °C。\n", "utf-8"
    )
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "A zephyr measured on the roof.", fontsize=11)
    doc.save(root / "Notes/zephyr-report.pdf")
    out = base / "out"
    run_build(root, out, site=True)
    return out


@pytest.fixture(scope="module")
def hosts(vault):
    """{"served": base URL of a real `serve`'s site, "static": base URL of a range-serving static host}."""
    served, served_base = start_serve(vault)
    static, static_base = static_host(vault, True)
    try:
        yield {"served": served_base + "/-/evidence/site/", "static": static_base}
    finally:
        stop(static)
        stop(served)


def open_page(page, hosts, path: str, width: int, rel: str = "index.html") -> None:
    quiet(page)
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(hosts[path] + rel)
    page.wait_for_load_state("load")


def search_requests(page) -> list[str]:
    """The queries the page sends to the served search API, in order (filled as requests leave)."""
    sent: list[str] = []

    def record(request):
        url = urlsplit(request.url)
        if url.path == "/-/evidence/search":
            sent.append(parse_qs(url.query).get("query", [""])[0])

    page.on("request", record)
    return sent


def wait_until(page, predicate, what: str, timeout: float = 30) -> None:
    """Poll `predicate()` (Python, reading the page): the served pages' CSP forbids wait_for_function."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        page.wait_for_timeout(50)


def results(page) -> list[str]:
    return page.eval_on_selector_all("#search-results .result", "els => els.map(a => a.textContent)")


def shown(page) -> bool:
    return page.eval_on_selector("#search-results", "el => !el.hidden && el.offsetParent !== null")


def count_text(page) -> str:
    return page.inner_text("#search-results .result-count")


def wait_for_results(page, term: str) -> None:
    wait_until(page, lambda: any(term in r for r in results(page)), f"results for {term}")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PATHS)
def test_results_as_you_type(hosts, page, path, width):
    """Typing shows results without Enter, one query per pause (not per key); one Latin letter asks
    nothing, one Chinese character is a query."""
    open_page(page, hosts, path, width)
    sent = search_requests(page)
    page.click("form.search input")
    page.keyboard.type("z")
    page.wait_for_timeout(600)
    assert not shown(page) and sent == []
    page.keyboard.type("ephyr", delay=40)
    wait_for_results(page, "zephyr")
    if path == "served":
        assert sent[-1] == "zephyr" and len(sent) <= 2, sent  # debounced: not one per key
    box = page.eval_on_selector("#search-results", "el => el.getBoundingClientRect().toJSON()")
    assert box["left"] >= 0 and box["right"] <= width, box  # the whole panel on the screen
    shoot(page, f"search-box-as-you-type-{path}-{width}")
    page.fill("form.search input", "")
    page.keyboard.type("吗")
    wait_for_results(page, "吗")
    assert page.eval_on_selector_all("#search-results mark", "els => els.map(e => e.textContent)")[0] == "吗"
    page.keyboard.press("Backspace")
    wait_until(page, lambda: not shown(page), "an emptied box hides the results")
    assert page.console_errors == [] and page.dialogs == []


def test_a_slower_earlier_answer_never_overwrites_a_later_one(hosts, page):
    """The answer for "zephyr" is held back until "吗啉" is answered and shown; then it arrives."""
    open_page(page, hosts, "served", 1280)
    held = []

    def hold_zephyr(route):
        if "query=zephyr" in route.request.url and not held:
            held.append(route)
        else:
            route.continue_()

    page.route("**/-/evidence/search?*", hold_zephyr)
    page.click("form.search input")
    page.keyboard.type("zephyr")
    wait_until(page, lambda: bool(held), "the zephyr request left")
    page.fill("form.search input", "")
    page.keyboard.type("吗啉")
    wait_for_results(page, "吗啉")
    try:
        held[0].continue_()
    except Exception:  # the box cancelled it: Playwright reports the request as gone
        pass
    page.wait_for_timeout(1000)
    assert results(page) and all("吗啉" in r for r in results(page)), results(page)
    assert "zephyr" not in count_text(page)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PATHS)
def test_slash_and_ctrl_k_focus_the_box_and_escape_clears_it(hosts, page, path, width):
    open_page(page, hosts, path, width, "Notes/Chemistry.html")
    focused = "() => document.activeElement && document.activeElement.matches('form.search input')"
    page.click("main")
    assert page.is_visible("form.search .search-key")  # the key's hint, until the box is focused
    shoot(page, f"search-box-hint-{path}-{width}")
    page.keyboard.press("/")
    assert page.evaluate(focused) and not page.is_visible("form.search .search-key")
    assert page.input_value("form.search input") == ""  # the key focuses, it is not typed
    page.keyboard.type("zephyr")
    wait_for_results(page, "zephyr")
    page.keyboard.press("Escape")
    assert page.input_value("form.search input") == "" and not shown(page)
    for combo in ("Control+k", "Meta+k"):
        page.click("main")
        assert not page.evaluate(focused)
        page.keyboard.press(combo)
        assert page.evaluate(focused), combo
    # typing `/` into another field types it there
    page.evaluate(
        "() => { const i = document.createElement('input'); i.id = 'other'; document.querySelector('main')"
        ".prepend(i); }"
    )
    page.click("#other")
    page.keyboard.type("a/b")
    assert page.input_value("#other") == "a/b" and not page.evaluate(focused)
    page.click("main")
    page.keyboard.press("/")
    shoot(page, f"search-box-focus-{path}-{width}")
    assert page.evaluate(focused)
    assert page.console_errors == [] and page.dialogs == []


def active(page) -> dict:
    return page.evaluate(
        """() => {
          const input = document.querySelector('form.search input');
          const id = input.getAttribute('aria-activedescendant');
          const el = id && document.getElementById(id);
          return {id, role: el && el.getAttribute('role'), selected: el && el.getAttribute('aria-selected'),
                  text: el && el.textContent, href: el && el.href,
                  background: el && getComputedStyle(el).backgroundColor,
                  visible: !!el && el.getBoundingClientRect().bottom <= innerHeight};
        }"""
    )


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PATHS)
def test_arrow_keys_and_enter_open_the_selected_hit(hosts, page, path, width):
    open_page(page, hosts, path, width)
    page.click("form.search input")
    page.keyboard.type("zephyr")
    wait_for_results(page, "zephyr")
    assert page.get_attribute("form.search input", "role") == "combobox"
    assert page.get_attribute("form.search input", "aria-expanded") == "true"
    assert page.eval_on_selector("#search-results [role=listbox]", "el => el.id") == page.get_attribute(
        "form.search input", "aria-controls"
    )
    options = page.eval_on_selector_all("#search-results [role=option]", "els => els.map(e => e.id)")
    assert len(options) >= 3 and len(set(options)) == len(options)
    plain = page.eval_on_selector(
        "#search-results [role=option]", "el => getComputedStyle(el).backgroundColor"
    )
    page.keyboard.press("ArrowDown")
    first = active(page)
    assert first["id"] == options[0] and first["selected"] == "true" and first["background"] != plain
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert active(page)["id"] == options[2]
    page.keyboard.press("ArrowUp")
    second = active(page)
    assert second["id"] == options[1] and second["visible"]
    assert page.eval_on_selector_all("#search-results [aria-selected=true]", "els => els.map(e => e.id)") == [
        options[1]
    ]
    shoot(page, f"search-box-arrows-{path}-{width}")
    assert second["href"] and "#b-" in second["href"]
    page.keyboard.press("Enter")
    page.wait_for_url(second["href"])
    target = unquote(urlsplit(page.url).fragment)
    assert page.eval_on_selector(f'[id="{target}"]', "el => el.matches(':target')")
    assert page.eval_on_selector(f'[id="{target}"]', "el => getComputedStyle(el).outlineColor") == HIGHLIGHT
    # the mouse still opens a hit
    page.go_back()
    page.wait_for_load_state("load")
    page.fill("form.search input", "吡咯烷")
    wait_for_results(page, "吡咯烷")
    href = page.get_attribute("#search-results .result", "href")
    page.click("#search-results .result")
    page.wait_for_load_state("load")
    assert unquote(urlsplit(page.url).fragment) == unquote(href.split("#", 1)[1])
    assert page.console_errors == [] and page.dialogs == []


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PATHS)
def test_enter_on_more_in_this_file_shows_them_and_keeps_the_place(hosts, page, path, width):
    open_page(page, hosts, path, width)
    page.click("form.search input")
    page.keyboard.type("zephyr")
    wait_for_results(page, "zephyr")
    options = page.eval_on_selector_all("#search-results [role=option]", "els => els.map(e => e.className)")
    at = options.index("more-in-file")
    at_first = len(page.query_selector_all("#search-results .result:visible"))
    for _ in range(at + 1):
        page.keyboard.press("ArrowDown")
    assert "more in this file" in active(page)["text"]
    page.keyboard.press("Enter")
    assert shown(page)
    assert len(page.query_selector_all("#search-results .result:visible")) > at_first
    now = active(page)
    assert now["role"] == "option" and "#b-" in now["href"]  # the first passage it showed
    assert (
        page.eval_on_selector_all(
            "#search-results [role=option]",
            "els => els.filter(e => e.getClientRects().length).map(e => e.id)",
        ).index(now["id"])
        == at
    )
    # the mouse on "More results" keeps the box open too
    page.click("#search-results .more-results")
    wait_until(page, lambda: page.query_selector("#search-results .more-results") is None, "all results")
    assert shown(page)
    assert page.console_errors == [] and page.dialogs == []


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PATHS)
def test_counts_every_matching_file_not_only_those_loaded(hosts, page, path, width):
    """6 files match; the first answer's passages are in fewer: the box counts all 6, on both paths."""
    open_page(page, hosts, path, width)
    page.click("form.search input")
    page.keyboard.type("zephyr")
    wait_for_results(page, "zephyr")
    groups = page.eval_on_selector_all("#search-results .result-group", "els => els.length")
    assert groups < ZEPHYR_FILES  # the first answer's passages are in fewer files than match
    assert count_text(page) == f"{ZEPHYR_FILES} files, showing {groups} · {ZEPHYR_PASSAGES} matching passages"
    shoot(page, f"search-box-counts-{path}-{width}")
    page.select_option("form.search select[name=kind]", "pdf")
    wait_until(page, lambda: count_text(page) == "1 file · 1 matching passage", "the PDF's count")
    page.select_option("form.search select[name=kind]", "")
    page.fill("form.search input", "吗啉")
    wait_until(page, lambda: count_text(page) == "1 file · 1 matching passage", "one Chinese passage")
    assert page.console_errors == [] and page.dialogs == []


def test_file_url_still_says_what_works_while_typing(vault, page):
    page.goto((vault / "index.html").as_uri())
    page.click("form.search input")
    page.keyboard.type("zephyr")
    wait_until(page, lambda: page.is_visible("#notice"), "the file:// notice")
    text = page.inner_text("#notice")
    assert "python -m http.server" in text and "mnote-evidence serve" in text
    assert page.console_errors == []
