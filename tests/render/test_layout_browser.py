"""The site's layout in real headless Chromium, from file://.

At a phone's width (375 px) and a desktop's (1280 px) the front page, a note and a PDF page
must not overflow sideways: the document is no wider than the window and no element sticks out
of it (content inside a scrolling box, e.g. a wide table or code, may scroll there). Dark mode
follows `prefers-color-scheme`; keyboard focus is always drawn. Screenshots go to the temporary
folder (`tests.conftest.SCREENSHOTS`) for a reviewer.
"""

from __future__ import annotations

import pytest

from tests.conftest import CHEM_DOCX, SPEC_PDF, shoot
from tests.render.conftest import block_id
from tests.render.test_site_browser import HIGHLIGHT, open_page, outline_color

PAGES = {"front": "index.html", "note": "Projects/Evidence Kernel.html", "pdf": SPEC_PDF + ".html"}
OTHERS = {
    "docx": CHEM_DOCX + ".html",
    "image": "研究/Rust 并发.assets/thread-scope.png.html",
    "ask": "ask.html",
    "error": "Inbox/Broken Files.assets/encrypted.pdf.html",
    "obsidian": "Obsidian/Project Plan.html",
}

# Elements that stick out of the window, except inside a box that scrolls or clips them.
OVERFLOWING = """() => {
  const width = window.innerWidth, out = [];
  const clipped = el => { for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== 'visible') return true; } return false; };
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if ((r.width > width || r.right > width + 0.5 || r.left < -0.5) && !clipped(el))
      out.push(`${el.tagName}.${el.className} ${Math.round(r.left)}..${Math.round(r.right)}`);
  }
  return out;
}"""


def luminance(css_rgb: str) -> float:
    r, g, b = (int(v) / 255 for v in css_rgb[css_rgb.index("(") + 1 : css_rgb.index(")")].split(",")[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("name", list(PAGES) + list(OTHERS))
def test_nothing_overflows_sideways(site, page, name, width):
    _, out = site
    page.set_viewport_size({"width": width, "height": 800})
    open_page(page, out, {**PAGES, **OTHERS}[name])
    page.wait_for_function("[...document.images].filter(i => i.loading !== 'lazy').every(i => i.complete)")
    scroll_width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert scroll_width <= inner, (scroll_width, inner)
    assert page.evaluate(OVERFLOWING) == []
    # the breadcrumb is readable, not cut to "Wo…": every crumb is shown in full
    crumbs = page.eval_on_selector(".crumbs", "el => [el.scrollWidth, el.clientWidth, el.innerText]")
    assert crumbs[0] <= crumbs[1] and "…" not in crumbs[2]
    shoot(page, f"layout-{name}-{width}")
    assert page.console_errors == []


@pytest.mark.parametrize("width", [375, 1280])
def test_phone_and_desktop_order_content_and_side_panel(site, page, width):
    _, out = site
    page.set_viewport_size({"width": width, "height": 800})
    open_page(page, out, PAGES["note"])
    main = page.eval_on_selector("main", "el => el.getBoundingClientRect().toJSON()")
    side = page.eval_on_selector("aside.side", "el => el.getBoundingClientRect().toJSON()")
    if width == 375:  # one column, the note first, its outline and backlinks below it
        assert side["top"] >= main["bottom"] and main["width"] > 320
    else:  # the side panel to the left of the note
        assert side["right"] <= main["left"] and abs(side["top"] - main["top"]) < 5


def test_dark_mode_follows_the_system_and_keeps_the_highlight(site, page):
    _, out = site
    bid = block_id(out, "The retention period for audit evidence comes from section 3%")
    colours = "() => [getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]"
    page.emulate_media(color_scheme="light")
    open_page(page, out, PAGES["note"], fragment=bid)
    background, ink = page.evaluate(colours)
    assert luminance(background) > 0.9 and luminance(ink) < 0.2
    page.emulate_media(color_scheme="dark")
    open_page(page, out, PAGES["note"], fragment=bid)
    background, ink = page.evaluate(colours)
    assert luminance(background) < 0.15 and luminance(ink) > 0.8
    assert outline_color(page, f'[id="{bid}"]') == HIGHLIGHT  # the cited block is still marked
    link = page.eval_on_selector("article a", "el => getComputedStyle(el).color")
    assert luminance(link) > 0.5  # links stay readable on the dark background
    shoot(page, "layout-note-dark")
    for name in ("front", "pdf"):
        open_page(page, out, PAGES[name])
        assert luminance(page.evaluate(colours)[0]) < 0.15
        shoot(page, f"layout-{name}-dark")
    open_page(page, out, OTHERS["obsidian"])  # Obsidian's ==highlights== stay readable: light text, dark mark
    mark_bg, mark_ink = page.eval_on_selector(
        ".note mark", "el => [getComputedStyle(el).backgroundColor, getComputedStyle(el).color]"
    )
    assert luminance(mark_ink) - luminance(mark_bg) > 0.45, (mark_bg, mark_ink)
    shoot(page, "layout-obsidian-dark")


@pytest.mark.parametrize("name", ["note", "pdf"])
def test_keyboard_focus_is_always_visible(site, page, name):
    """Tab through the first stops of the page: every focused element draws a visible outline."""
    _, out = site
    open_page(page, out, PAGES[name])
    seen = []
    for _ in range(12):
        page.keyboard.press("Tab")
        focus = page.evaluate("""() => { const el = document.activeElement, s = getComputedStyle(el);
            return {tag: el.tagName, text: (el.innerText || el.value || el.id || '').slice(0, 30),
                    style: s.outlineStyle, width: parseFloat(s.outlineWidth),
                    visible: el.matches(':focus-visible')}; }""")
        if focus["tag"] == "BODY":
            break
        seen.append(focus)
        assert focus["visible"] and focus["style"] != "none" and focus["width"] >= 2, focus
    assert len(seen) >= 5 and seen[0]["text"] == "Skip to content"
    shoot(page, f"layout-focus-{name}")
    # the skip link's target: Enter moves past the header and side panel, to the content
    open_page(page, out, PAGES[name])
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == "#main"


def test_without_javascript_anchors_highlight_and_every_part_shows(site, browser):
    """The site's promise: anchors, highlights, the front page and the side panels need no JavaScript."""
    _, out = site
    context = browser.new_context(java_script_enabled=False, viewport={"width": 375, "height": 800})
    try:
        pg = context.new_page()
        bid = block_id(out, "The retention period for audit evidence is seven%")
        pg.goto((out / PAGES["pdf"]).as_uri() + f"#{bid}")
        assert pg.eval_on_selector(f'[id="{bid}"]', "el => getComputedStyle(el).outlineColor") == HIGHLIGHT
        box = pg.eval_on_selector(f'[id="{bid}"]', "el => el.getBoundingClientRect().toJSON()")
        assert 0 <= box["top"] < 800  # scrolled to it
        pg.goto((out / PAGES["front"]).as_uri())
        assert pg.is_visible("article.front-note h1") and pg.is_visible(".recent-list")
        assert pg.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
        pg.goto((out / PAGES["note"]).as_uri())
        assert pg.is_visible(".backlinks mark") and pg.is_visible('nav[aria-label="Outline"]')
    finally:
        context.close()
