"""Link previews, the local graph, the theme toggle and live reload, in real headless Chromium.

A small vault of its own (notes that link each other, a heading, an Obsidian block id, a PDF and a
hostile note) is built once with the site; pages are opened from file://, from a static host (Python's
`http.server`: no headers of ours, only the pages' own `<meta>` CSP) and from a real `serve --watch`.
Screenshots at 375 and 1280 px, light and dark, go to `tests.conftest.SCREENSHOTS`.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import run_build, shoot
from tests.functions.test_serve import wait_for_line
from tests.render.conftest import HOSTILE_NOTE
from tests.render.test_layout_browser import OVERFLOWING, luminance
from tests.render.test_site_browser import HIGHLIGHT, outline_color
from tests.servers import free_port, start, start_serve, stop

NOTES = {
    "Atlas.md": "# Atlas\n\nThe atlas links [[Beacon]], [[Compass#Bearings]], [[Compass#^north]], "
    "[[Hostile]] and the [chart](Atlas.assets/chart.pdf).\n\nSee also [[Atlas#Appendix]].\n\n"
    "## Appendix\n\nAppendix words about the lighthouse keeper.\n",
    "Beacon.md": "# Beacon\n\nThe beacon burns on the headland every night.\n\n"
    "A second paragraph about the tides.\n\nBack to [[Atlas]].\n",
    "Compass.md": "# Compass\n\nThe compass intro.\n\n## Bearings\n\nBearings are measured clockwise.\n\n"
    "- north is zero\n- east is ninety\n\n## Other\n\nNot in the bearings section.\n\n"
    "True north differs from magnetic north. ^north\n",
    "Dusk.md": "# Dusk\n\nAt dusk read the [[Atlas]] again.\n",
    "Hostile.md": HOSTILE_NOTE + "\nIt links the [[Atlas]].\n",
}
CARD = ".preview-card"
WAIT_MS = 5000


def write_vault(root: Path) -> Path:
    import pymupdf

    root.mkdir(parents=True)
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    (root / "Atlas.assets").mkdir()
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "Chart of the northern coast.", fontsize=11)
    doc.save(root / "Atlas.assets/chart.pdf")
    return root


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    """(workspace, out): the vault built with its site; read-only for tests."""
    base = tmp_path_factory.mktemp("enhance")
    root = write_vault(base / "ws")
    out = base / "out"
    run_build(root, out, site=True)
    return root, out


@pytest.fixture(scope="module")
def static_host(vault):
    """The built site on a plain static file server: its base URL."""
    _, out = vault
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(out)]
    proc = start(cmd, base + "/index.html")
    yield base
    stop(proc)


def hover(page, selector: str) -> None:
    page.hover(selector)
    page.wait_for_selector(f"{CARD}:not([hidden]) .preview-body > *", timeout=WAIT_MS)


def card_text(page) -> str:
    return page.inner_text(f"{CARD} .preview-body")


def test_hovering_a_link_shows_the_target_notes_title_and_first_blocks(static_host, page):
    page.goto(static_host + "/Atlas.html")
    hover(page, 'main a[href="Beacon.html"]')
    assert page.inner_text(f"{CARD} .preview-title") == "Beacon"
    text = card_text(page)
    assert "The beacon burns on the headland" in text and "second paragraph about the tides" in text
    # drawn from our markup only: no ids of the other page land in this one, links are not followable
    assert page.eval_on_selector_all(f"{CARD} [id]", "els => els.length") == 0
    page.mouse.move(5, 5)
    page.wait_for_selector(CARD, state="hidden", timeout=WAIT_MS)
    assert page.console_errors == []


def test_a_block_link_previews_exactly_that_block_and_a_heading_its_section(static_host, page):
    page.goto(static_host + "/Atlas.html")
    hover(page, 'main a[href="Compass.html#^north"]')
    assert card_text(page).strip() == "True north differs from magnetic north."
    page.mouse.move(5, 5)
    page.wait_for_selector(CARD, state="hidden", timeout=WAIT_MS)
    hover(page, 'main a[href^="Compass.html#b-"]')
    text = card_text(page)
    assert "Bearings are measured clockwise" in text and "east is ninety" in text
    assert "Not in the bearings section" not in text and "compass intro" not in text
    page.mouse.move(5, 5)
    page.wait_for_selector(CARD, state="hidden", timeout=WAIT_MS)
    # a link into this same page needs no fetch: it works from file:// too
    hover(page, 'main a[href^="Atlas.html#b-"]')
    assert "lighthouse keeper" in card_text(page)
    assert page.console_errors == []


def test_keyboard_focus_shows_the_preview_and_escape_hides_it(static_host, page):
    page.goto(static_host + "/Atlas.html")
    page.focus('main a[href="Beacon.html"]')
    page.wait_for_selector(f"{CARD}:not([hidden]) .preview-body > *", timeout=WAIT_MS)
    described = page.eval_on_selector('main a[href="Beacon.html"]', "a => a.getAttribute('aria-describedby')")
    assert described and page.eval_on_selector(CARD, "c => c.id") == described
    page.keyboard.press("Escape")
    page.wait_for_selector(CARD, state="hidden", timeout=WAIT_MS)


def test_a_preview_of_a_hostile_page_runs_nothing_and_shows_its_text(static_host, page):
    page.goto(static_host + "/Atlas.html")
    hover(page, 'main a[href="Hostile.html"]')
    assert "A harmless paragraph that must still render." in card_text(page)
    inside = page.eval_on_selector(
        CARD, "c => c.querySelectorAll('script, iframe, [onclick], [onerror], a[href^=javascript]').length"
    )
    assert inside == 0
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None and page.dialogs == []


def test_a_pdf_link_previews_its_first_page(static_host, page):
    page.goto(static_host + "/Atlas.html")
    hover(page, 'main a[href="Atlas.assets/chart.pdf.html"]')
    assert page.inner_text(f"{CARD} .preview-title") == "chart.pdf"
    loaded = f"() => {{ const i = document.querySelector('{CARD} img'); return i && i.naturalWidth > 0; }}"
    page.wait_for_function(loaded, timeout=WAIT_MS)


def test_from_file_other_pages_are_not_fetched_and_nothing_fails(vault, page):
    _, out = vault
    page.goto((out / "Atlas.html").as_uri())
    page.hover('main a[href="Beacon.html"]')
    page.wait_for_timeout(900)
    assert page.eval_on_selector_all(f"{CARD}:not([hidden])", "els => els.length") == 0
    assert page.console_errors == []


def test_the_local_graph_links_the_note_its_links_and_its_backlinks(vault, page):
    _, out = vault
    page.goto((out / "Atlas.html").as_uri())
    page.wait_for_selector(".local-graph svg")
    nodes = page.eval_on_selector_all(
        ".local-graph svg a", "els => els.map(a => [a.textContent.trim(), a.getAttribute('href')])"
    )
    assert sorted(nodes) == [
        ["Beacon", "Beacon.html"],
        ["Compass", "Compass.html"],
        ["Dusk", "Dusk.html"],
        ["Hostile note", "Hostile.html"],
        ["chart.pdf", "Atlas.assets/chart.pdf.html"],
    ]
    assert page.eval_on_selector(".local-graph svg .node.current", "n => n.textContent.trim()") == "Atlas"
    kinds = page.eval_on_selector_all(
        ".local-graph svg line", "ls => ls.map(l => l.getAttribute('class')).sort()"
    )
    # Beacon and Hostile link back (both ways), Compass and the PDF are linked to, Dusk only links here
    assert kinds == ["edge both", "edge both", "edge in", "edge out", "edge out"]
    page.click('.local-graph svg a[href="Dusk.html"]')
    page.wait_for_load_state("load")
    assert page.url.endswith("/Dusk.html")
    assert page.eval_on_selector_all(".local-graph svg a", "els => els.length") == 1
    assert page.console_errors == []


def test_theme_toggle_cycles_is_remembered_and_never_flashes(vault, page):
    _, out = vault
    url = (out / "Atlas.html").as_uri()
    background = "() => getComputedStyle(document.body).backgroundColor"
    page.emulate_media(color_scheme="light")
    page.goto(url)
    toggle = "button.theme-toggle"
    assert page.get_attribute(toggle, "aria-label") == "Theme: system"
    page.click(toggle)
    assert page.get_attribute(toggle, "aria-label") == "Theme: dark"
    assert luminance(page.evaluate(background)) < 0.15
    # the theme is set before the body is parsed: the first paint already has it
    page.add_init_script(
        """new MutationObserver((_, obs) => { if (document.body) { window.__firstTheme =
             document.documentElement.dataset.theme || 'none'; obs.disconnect(); } })
           .observe(document, {childList: true, subtree: true});"""
    )
    page.goto(url)
    assert page.evaluate("window.__firstTheme") == "dark"
    assert luminance(page.evaluate(background)) < 0.15
    field = page.eval_on_selector("form.search input", "i => getComputedStyle(i).backgroundColor")
    assert luminance(field) < 0.3  # the search box follows the chosen theme too
    page.click(toggle)
    page.emulate_media(color_scheme="dark")
    assert page.get_attribute(toggle, "aria-label") == "Theme: light"
    assert luminance(page.evaluate(background)) > 0.9  # light, though the system is dark
    page.click(toggle)  # under a dark system: light, then dark, then the system's
    assert page.get_attribute(toggle, "aria-label") == "Theme: dark"
    page.click(toggle)
    assert page.get_attribute(toggle, "aria-label") == "Theme: system"
    page.emulate_media(color_scheme="light")
    assert luminance(page.evaluate(background)) > 0.9  # the system's again
    page.goto(url)
    assert page.evaluate("window.__firstTheme") == "none"


def test_a_pdf_highlight_stays_marked_under_the_chosen_dark_theme(vault, page):
    _, out = vault
    page.emulate_media(color_scheme="light")
    page.goto((out / "Atlas.html").as_uri())
    page.click("button.theme-toggle")  # dark, remembered for every page of the site
    page.goto((out / "Atlas.assets/chart.pdf.html").as_uri())
    block = page.eval_on_selector(".overlay.block", "a => a.id")
    page.goto((out / "Atlas.assets/chart.pdf.html").as_uri() + "#" + block)
    assert outline_color(page, f'[id="{block}"]') == HIGHLIGHT
    assert luminance(page.evaluate("() => getComputedStyle(document.body).backgroundColor")) < 0.15
    shoot(page, "enhance-pdf-dark")


def test_without_javascript_the_toggle_is_not_offered(vault, browser):
    _, out = vault
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto((out / "Atlas.html").as_uri())
        assert not page.is_visible("button.theme-toggle")
    finally:
        context.close()


@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_screenshots_with_a_preview_and_the_graph(static_host, page, width, theme):
    page.set_viewport_size({"width": width, "height": 900})
    page.emulate_media(color_scheme=theme)
    page.goto(static_host + "/Atlas.html")
    page.wait_for_selector(".local-graph svg")
    page.focus('main a[href="Beacon.html"]')
    page.wait_for_selector(f"{CARD}:not([hidden]) .preview-body > *", timeout=WAIT_MS)
    card = page.eval_on_selector(CARD, "c => c.getBoundingClientRect().toJSON()")
    assert card["left"] >= 0 and card["right"] <= width
    assert page.evaluate(OVERFLOWING) == []
    shoot(page, f"enhance-preview-{width}-{theme}")
    page.eval_on_selector(".local-graph", "g => g.scrollIntoView()")
    shoot(page, f"enhance-graph-{width}-{theme}")


def test_a_static_host_polls_nothing(static_host, page):
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(static_host + "/Atlas.html")
    page.wait_for_timeout(2500)
    assert [u for u in requests if "/-/" in u] == []


def test_serve_watch_reloads_an_open_page_after_an_edit(tmp_path, page):
    root, out = write_vault(tmp_path / "ws"), tmp_path / "out"
    run_build(root, out, site=True)
    proc, base = start_serve(out, "--watch", str(root), "--jobs", "1", "--no-ocr")
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()
    try:
        page.goto(base + "/-/evidence/site/Beacon.html")
        wait_for_line(lines, "catching up")  # its build is done and changed nothing: no reload
        page.evaluate("window.__sameDocument = true")
        note = root / "Beacon.md"
        started = time.monotonic()
        note.write_text(note.read_text("utf-8") + "\nThe keeper quenched the lantern at dawn.\n", "utf-8")
        page.wait_for_function(
            "() => document.body.innerText.includes('quenched the lantern')", timeout=60_000, polling=100
        )
        print(f"save -> the open page shows it: {time.monotonic() - started:.2f}s")
        assert page.evaluate("window.__sameDocument") is None  # the page reloaded itself
        assert page.console_errors == []
    finally:
        stop(proc)


def test_a_rebuild_between_a_pages_request_and_its_first_question_reloads_it(tmp_path, page):
    """The page knows the build it was sent at: its first question, answered after a rebuild that
    landed since, reloads it (the first answer is never taken as the page's own build)."""
    root, out = write_vault(tmp_path / "ws"), tmp_path / "out"
    run_build(root, out, site=True)
    proc, base = start_serve(out, "--watch", str(root), "--jobs", "1", "--no-ocr")
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()
    held: list = []  # the page's questions, until the edit is built; then None: questions go through
    try:
        wait_for_line(lines, "catching up")
        page.route("**/-/evidence/live", lambda r: r.continue_() if held is None else held.append(r))
        page.goto(base + "/-/evidence/site/Beacon.html")
        while not held:
            page.wait_for_timeout(50)
        note = root / "Beacon.md"
        note.write_text(note.read_text("utf-8") + "\nThe keeper quenched the lantern at dawn.\n", "utf-8")
        wait_for_line(lines, "; change)")  # the edit is built: the page was sent before it
        assert "quenched the lantern" not in page.inner_text("body")
        waiting, held = held, None
        for route in waiting:
            route.continue_()
        page.wait_for_function(
            "() => document.body.innerText.includes('quenched the lantern')", timeout=30_000, polling=100
        )
        assert page.console_errors == []
    finally:
        stop(proc)


def test_serve_without_watch_offers_no_reload(vault, page):
    _, out = vault
    proc, base = start_serve(out)
    try:
        requests: list[tuple[str, int]] = []
        page.on("response", lambda r: requests.append((r.url, r.status)))
        page.goto(base + "/-/evidence/site/Beacon.html")
        page.wait_for_timeout(2500)
        live = [r for r in requests if r[0].endswith("/-/evidence/live")]
        assert len(live) == 1  # one question, answered "not watching": no polling
        assert page.console_errors == []
    finally:
        stop(proc)
