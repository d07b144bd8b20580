"""The site in real headless Chromium (Debian chromium + Playwright), opened from file://.

Screenshots of every scenario are written to test-artifacts/ for a reviewer.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.conftest import CHEM_DOCX, SPEC_PDF, run_build, shoot
from tests.render.conftest import block_id

PDF_PAGE = SPEC_PDF + ".html"
HIGHLIGHT = "rgb(230, 119, 0)"  # --accent outline colour


def open_page(page, out, rel: str, query: str = "", fragment: str = ""):
    url = (out / rel).as_uri() + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_timeout(150)  # let scrolling settle


def in_viewport(page, selector: str) -> bool:
    return page.eval_on_selector(
        selector,
        """el => { const r = el.getBoundingClientRect();
        return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }""",
    )


def outline_color(page, selector: str) -> str:
    return page.eval_on_selector(selector, "el => getComputedStyle(el).outlineColor")


def rect(page, selector: str) -> dict:
    return page.eval_on_selector(selector, "el => el.getBoundingClientRect().toJSON()")


def test_pdf_block_url_highlights_the_box_on_the_words(site, page):
    _, out = site
    bid = block_id(out, "The retention period for audit evidence is seven%")
    open_page(page, out, PDF_PAGE, fragment=bid)
    sel = f'[id="{bid}"]'
    assert in_viewport(page, sel)
    assert outline_color(page, sel) == HIGHLIGHT
    conn = sqlite3.connect(out / "evidence.sqlite")
    bbox = json.loads(
        conn.execute("SELECT bbox_json FROM evidence_block WHERE block_id = ?", [bid]).fetchone()[0]
    )
    width, height = 595.0, 842.0
    page.wait_for_function("document.querySelector('#page-2 img').complete")
    img = rect(page, "#page-2 img")
    box = rect(page, sel)
    expected = {
        "x": img["x"] + bbox[0] / width * img["width"],
        "y": img["y"] + bbox[1] / height * img["height"],
        "width": (bbox[2] - bbox[0]) / width * img["width"],
        "height": (bbox[3] - bbox[1]) / height * img["height"],
    }
    for key in expected:
        assert abs(box[key] - expected[key]) <= 2, (key, box[key], expected[key])
    # and the image really shows those words there: the rendered page image is 2x PDF points
    natural = page.eval_on_selector("#page-2 img", "el => [el.naturalWidth, el.naturalHeight]")
    assert natural == [1190, 1684]
    shoot(page, "pdf-block-highlight")
    assert page.dialogs == [] and page.console_errors == []


def test_hl_param_highlights_blocks_on_two_pages(site, page):
    _, out = site
    first = block_id(out, "format-01 %")
    last = block_id(out, "format-40 %")
    open_page(page, out, PDF_PAGE, query=f"hl={first},{last}")
    for bid in (first, last):
        assert page.eval_on_selector(f'[id="{bid}"]', "el => el.classList.contains('hl')")
        assert outline_color(page, f'[id="{bid}"]') == HIGHLIGHT
    pages = page.eval_on_selector_all(".overlay.hl", "els => els.map(e => e.dataset.page)")
    assert sorted(pages) == ["2", "3"]  # the table spans the page break
    assert in_viewport(page, f'[id="{first}"]')
    shoot(page, "pdf-hl-two-pages")


def test_page_bbox_params_draw_an_arbitrary_box(site, page):
    _, out = site
    open_page(page, out, PDF_PAGE, query="page=3&bbox=72,100,300,160")
    assert page.eval_on_selector("#page-3 .adhoc", "el => el.classList.contains('hl')")
    assert in_viewport(page, "#page-3 .adhoc")
    shoot(page, "pdf-page-bbox")


def test_note_block_url_scrolls_and_marks(site, page):
    _, out = site
    bid = block_id(out, "The retention period for audit evidence comes from section 3%")
    open_page(page, out, "Projects/Evidence Kernel.html", fragment=bid)
    sel = f'[id="{bid}"]'
    assert in_viewport(page, sel) and outline_color(page, sel) == HIGHLIGHT
    shoot(page, "note-block")


def test_docx_paragraph_url_scrolls_and_marks(site, page):
    _, out = site
    bid = block_id(out, "吡咯烷（pyrrolidine%")
    page.set_viewport_size({"width": 1280, "height": 400})  # small window: must scroll
    open_page(page, out, "研究/化学笔记.assets/溶剂与杂环.docx.html", fragment=bid)
    sel = f'[id="{bid}"]'
    assert in_viewport(page, sel) and outline_color(page, sel) == HIGHLIGHT
    assert page.eval_on_selector(sel, "el => el.dataset.paragraph") == "5"
    shoot(page, "docx-paragraph")


def test_hostile_content_executes_nothing(site, page):
    _, out = site
    for rel in ("Inbox/Hostile.html", "Inbox/Hostile.assets/evil.pdf.html"):
        open_page(page, out, rel)
        page.wait_for_timeout(300)
        assert page.evaluate("window.__pwned === undefined")
        scripts = page.eval_on_selector_all("script", "els => els.map(e => e.src.split('/').pop())")
        # ours: the theme (before the first paint), the site's, previews, graph, live reload, the search box's
        assert scripts == [
            "theme.js",
            "site.js",
            "preview.js",
            "graph.js",
            "live.js",
            "search_query.js",
            "search.js",
        ]
    open_page(page, out, "Inbox/Hostile.html")
    page.click("text=click me")  # the javascript: link is rendered as plain text
    page.click("text=bold")  # its onclick attribute is shown, not attached
    page.wait_for_timeout(200)
    assert page.evaluate("window.__pwned === undefined")
    assert page.dialogs == [] and page.console_errors == []
    shoot(page, "hostile-note")


def test_old_anchor_lands_on_successor_after_edit(workspace, tmp_path, page):
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    old = block_id(out, "The retention period for audit evidence comes from section 3%")
    note = workspace / "Projects/Evidence Kernel.md"
    note.write_text(
        note.read_text("utf-8").replace("comes from section 3", "is defined in section 3"), "utf-8"
    )
    run_build(workspace, out, site=True)
    new = block_id(out, "The retention period for audit evidence is defined in section 3%")
    assert new != old
    open_page(page, out, "Projects/Evidence Kernel.html", fragment=old)
    assert in_viewport(page, f'[id="{new}"]')
    assert outline_color(page, f'[id="{new}"]') == HIGHLIGHT
    notice = page.eval_on_selector(f'[id="{old}"]', "el => getComputedStyle(el, '::before').content")
    assert "changed since it was cited" in notice
    shoot(page, "anchor-successor")
    # an id nothing resembles: the page says so instead of silently showing the top
    open_page(page, out, "Projects/Evidence Kernel.html", fragment="b-aaaaaaaaaaaa")
    assert page.is_visible("#notice") and "changed or removed" in page.inner_text("#notice")


@pytest.mark.parametrize("rel", ["index.html", "研究/Rust 并发.assets/thread-scope.png.html"])
def test_pages_load_without_errors(site, page, rel):
    _, out = site
    open_page(page, out, rel)
    assert page.console_errors == []
    shoot(page, rel.replace("/", "_").replace(" ", "_"))


@pytest.mark.parametrize("width", [1280, 700])
def test_image_ocr_overlay_lands_on_the_text_at_any_size(site, page, width):
    _, out = site
    bid = block_id(out, "线程作用域")
    conn = sqlite3.connect(out / "evidence.sqlite")
    bbox = json.loads(
        conn.execute("SELECT bbox_json FROM evidence_block WHERE block_id = ?", [bid]).fetchone()[0]
    )
    page.set_viewport_size({"width": width, "height": 700})
    open_page(page, out, "研究/Rust 并发.assets/thread-scope.png.html", fragment=bid)
    page.wait_for_function("document.querySelector('#page-1 img').complete")
    img, box = rect(page, "#page-1 img"), rect(page, f'[id="{bid}"]')
    natural = page.eval_on_selector("#page-1 img", "el => [el.naturalWidth, el.naturalHeight]")
    sx, sy = img["width"] / natural[0], img["height"] / natural[1]
    assert abs(box["x"] - (img["x"] + bbox[0] * sx)) <= 2 and abs(box["y"] - (img["y"] + bbox[1] * sy)) <= 2
    assert abs(box["width"] - (bbox[2] - bbox[0]) * sx) <= 2
    assert outline_color(page, f'[id="{bid}"]') == HIGHLIGHT
    shoot(page, f"image-ocr-overlay-{width}")


def highlighted(page) -> list[dict]:
    """Every element drawn with the highlight outline, with its box."""
    return page.evaluate(
        """accent => [...document.querySelectorAll('*')]
        .filter(e => { const s = getComputedStyle(e);
                       return s.outlineStyle !== 'none' && s.outlineColor === accent; })
        .map(e => ({tag: e.tagName, id: e.id, box: e.getBoundingClientRect().toJSON()}))""",
        HIGHLIGHT,
    )


def _edit_docx(path, starts: str, change) -> None:
    import docx

    d = docx.Document(path)
    para = next(p for p in d.paragraphs if p.text.startswith(starts))
    text = change(para.text)
    for run in para.runs[1:]:
        run.text = ""
    para.runs[0].text = text
    d.save(path)


def test_old_docx_anchors_land_on_one_paragraph_or_the_page_top(workspace, tmp_path, page):
    """A rewritten paragraph (no successor) shows the notice at the page top and highlights nothing; an
    edited one (twice, so two generations of old ids) highlights exactly its successor paragraph."""
    out, docx_path = tmp_path / "out", workspace / CHEM_DOCX
    run_build(workspace, out, site=True)
    rewritten = block_id(out, "吗啉是一种同时含氧和氮的六元杂环%")
    edited = block_id(out, "N-甲基吡咯烷酮（NMP）是一种强极性非质子溶剂%")
    _edit_docx(
        docx_path, "吗啉是一种", lambda _: "Completely different English text about corrosion inhibitors."
    )
    _edit_docx(docx_path, "N-甲基吡咯烷酮", lambda t: t + "（已修订）")
    run_build(workspace, out, site=True)
    middle = block_id(out, "N-甲基吡咯烷酮%（已修订）")
    _edit_docx(docx_path, "N-甲基吡咯烷酮", lambda t: t + "（第二版）")
    run_build(workspace, out, site=True)
    successor = block_id(out, "N-甲基吡咯烷酮%（第二版）")
    rel = CHEM_DOCX + ".html"

    open_page(page, out, rel, fragment=rewritten)
    assert highlighted(page) == []  # not the whole <article>
    notice = page.eval_on_selector(f'[id="{rewritten}"]', "el => getComputedStyle(el, '::before').content")
    assert "removed or changed" in notice
    assert page.evaluate("window.scrollY") == 0
    shoot(page, "docx-removed-paragraph")

    body = rect(page, "article.docx")
    para = rect(page, f'[id="{successor}"]')
    for old in (edited, middle):
        open_page(page, out, rel, fragment=old)
        marks = highlighted(page)
        assert [m["id"] for m in marks] == [successor], (old, marks)
        box = marks[0]["box"]
        assert (box["width"], box["height"]) == (para["width"], para["height"])
        assert box["height"] < body["height"] / 4
        assert in_viewport(page, f'[id="{successor}"]')
    shoot(page, "docx-successor-paragraph")
