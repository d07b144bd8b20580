"""The per-PDF page-image cap (`max_page_images`): a real 5-page PDF built with a cap of 3."""

from __future__ import annotations

import re

from tests.conftest import run_build

CAP, PAGES = 3, 5


def _long_pdf(path) -> None:
    import pymupdf

    doc = pymupdf.open()
    for n in range(1, PAGES + 1):
        doc.new_page().insert_text((72, 100), f"Page {n} speaks of wombat{n}.", fontsize=12)
    doc.save(path)


def _build(tmp_path, cap: int = CAP):
    root, out = tmp_path / "ws", tmp_path / "out"
    (root / "Long.assets").mkdir(parents=True, exist_ok=True)
    _long_pdf(root / "Long.assets/long.pdf")
    (root / "Long.md").write_text("# Long\n\n[the manual](Long.assets/long.pdf)\n", "utf-8")
    return root, out, run_build(root, out, site=True, max_page_images=cap)


def test_pages_past_the_cap_have_text_and_anchors_but_no_image(tmp_path):
    _, out, report = _build(tmp_path)
    images = sorted(p.name for p in (out / "_pages").rglob("p*.*"))
    assert images == [f"p{n}.jpg" for n in range(1, CAP + 1)]
    assert report.site.page_images == CAP
    capped = [w for w in report.warnings if w["code"] == "page_images_capped"]
    assert [w["path"] for w in capped] == ["Long.assets/long.pdf"]
    assert f"1-{CAP} of {PAGES}" in capped[0]["message"] and "--max-page-images" in capped[0]["message"]
    html = next(out.rglob("long.pdf.html")).read_text("utf-8")
    for n in range(1, PAGES + 1):
        section = re.search(rf'<section class="page" id="page-{n}".*?</section>', html, re.S).group(0)
        assert ("<img " in section) == (n <= CAP)  # an image only up to the cap
        assert re.search(r'class="overlay block[^"]*" id="b-', section)  # every page keeps its block anchors
        assert ("No image for this page" in section) == (n > CAP)
    assert f"wombat{PAGES}" in html


def test_the_warning_stays_on_unchanged_builds_and_a_higher_cap_renders_the_rest(tmp_path):
    root, out, _ = _build(tmp_path)
    again = run_build(root, out, site=True, max_page_images=CAP)  # nothing changed: still reported
    assert [w["code"] for w in again.warnings] == ["page_images_capped"]
    raised = run_build(root, out, site=True, max_page_images=PAGES)
    assert raised.warnings == [] and raised.site.page_images == PAGES - CAP  # only the missing pages rendered
    html = next(out.rglob("long.pdf.html")).read_text("utf-8")
    assert html.count("<img ") == PAGES and "No image for this page" not in html
