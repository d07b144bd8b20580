"""Obsidian constructs in real headless Chromium, from file://: no JavaScript is needed to
reach a block inside a folded callout or an author's `^id`, and MathML is laid out by the browser."""

from __future__ import annotations

from tests.conftest import shoot
from tests.render.conftest import block_id
from tests.render.test_site_browser import HIGHLIGHT, in_viewport, open_page, outline_color

PLAN = "Obsidian/Project Plan.html"


def test_fragment_inside_a_folded_callout_opens_it(site, page):
    _, out = site
    bid = block_id(out, "Open me for the one rule of the plan.")
    page.context.set_offline(True)
    open_page(page, out, PLAN)
    assert page.eval_on_selector("details.callout", "d => d.open") is False
    open_page(page, out, PLAN, fragment=bid)
    assert page.eval_on_selector("details.callout", "d => d.open") is True
    assert in_viewport(page, f'[id="{bid}"]')
    assert page.console_errors == []
    shoot(page, "obsidian-folded-callout")


def test_author_anchor_and_math_render_without_scripts(site, page):
    _, out = site
    page.context.set_offline(True)
    open_page(page, out, PLAN, fragment="^ship-date")
    ship = block_id(out, "The kernel ships in March.")
    assert in_viewport(page, f'[id="{ship}"]') and outline_color(page, f'[id="{ship}"]') == HIGHLIGHT
    # the author's own name for the block: no "changed since cited" notice
    assert (
        page.eval_on_selector('[id="^ship-date"]', "s => getComputedStyle(s, '::before').content") == "none"
    )
    boxes = page.eval_on_selector_all("math", "els => els.map(e => e.getBoundingClientRect().toJSON())")
    assert len(boxes) == 2 and all(b["width"] > 5 and b["height"] > 5 for b in boxes)
    display = page.eval_on_selector("div.math math", "m => getComputedStyle(m).display")
    assert display in ("block", "block math")
    shoot(page, "obsidian-plan")
    open_page(page, out, PLAN, fragment="^spec-task")  # in a tight list: the anchor sits in the <li>
    task = block_id(out, "[x] Write the spec")
    assert outline_color(page, f'[id="{task}"]') == HIGHLIGHT


def test_review_page_embeds_and_missing_markers(site, page):
    _, out = site
    open_page(page, out, "Obsidian/Review.html")
    assert (
        page.eval_on_selector_all(".missing-marker", "els => els.filter(e => e.offsetWidth > 0).length") == 3
    )
    page.eval_on_selector_all(".embed img", "els => els.forEach(i => i.scrollIntoView())")
    page.wait_for_timeout(300)
    loaded = page.eval_on_selector_all(".embed img", "els => els.map(i => i.complete && i.naturalWidth > 0)")
    assert loaded == [True, True]  # the image and the PDF page image, from file://
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, "obsidian-review")
