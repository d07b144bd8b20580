"""Navigation: the explorer on every page, folder pages, the landing note, one notice on a deleted
note's page, a front page that a stopped render never leaves missing, and the favicon.

Real builds of a small workspace made here (folders, titles in front matter and headings, one folder
of 60 notes); the pages are read as HTML (lxml) and, for the layout, in real Chromium at a phone's and
a desktop's width, light and dark, with JavaScript off (the explorer is plain `<details>`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import lxml.html
import pytest

from mnote_evidence.build.render.explorer import SHOWN
from tests.conftest import shoot

NOTES = {
    "Home.md": "# Welcome home\n\nStart at [[Alpha]] or [[Inner]].\n",
    "Alpha.md": "---\ntitle: The Alpha Note\n---\nAlpha body.\n",
    "Projects/Plan.md": "# Project plan\n\nThe plan.\n",
    "Projects/Deep/Inner.md": "# Inner thoughts\n\nInner body.\n",
    "Projects/Deep/Second.md": "# Second idea\n\nSecond body.\n",
    "_folders/Trap.md": "# Trap\n\nA note in a folder whose name the site reserves.\n",
    **{f"Many/n{i:03d}.md": f"# Many {i:03d}\n\nItem {i}.\n" for i in range(60)},
}
DAY_AGO = time.time() - 86400


def _workspace(root: Path, notes: dict[str, str] = NOTES) -> Path:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        os.utime(path, (DAY_AGO, DAY_AGO))
    return root


def _build(root: Path, out: Path):
    from tests.conftest import run_build

    return run_build(root, out, site=True, sidecars="mnote")


@pytest.fixture(scope="module")
def nav_site(tmp_path_factory):
    base = tmp_path_factory.mktemp("nav")
    root, out = _workspace(base / "ws"), base / "out"
    _build(root, out)
    return root, out


def _doc(out: Path, rel: str):
    return lxml.html.fromstring((out / rel).read_bytes())


def _explorer(doc):
    (nav,) = doc.xpath("//nav[@class='explorer']")
    return nav


def _target(out: Path, page: str, href: str) -> Path:
    from urllib.parse import unquote

    return (out / page).parent.joinpath(unquote(href)).resolve()


def test_every_page_has_an_explorer_of_titles_with_its_folders_open_and_itself_marked(nav_site):
    _, out = nav_site
    page = "Projects/Deep/Inner.html"
    nav = _explorer(_doc(out, page))
    text = nav.text_content()
    assert "Inner thoughts" in text and "Second idea" in text and ".md" not in text  # titles
    (current,) = nav.xpath(".//a[@aria-current='page']")
    assert current.text == "Inner thoughts" and _target(out, page, current.get("href")) == (out / page)
    # the folders it lies in, open, each opening its folder page; collapsible without a script
    summaries = nav.xpath(".//details[@open]/summary/a")
    assert [a.text for a in summaries] == ["Projects", "Deep"]
    assert _target(out, page, summaries[1].get("href")) == out / "_folders/Projects/Deep/index.html"
    # front matter title, and the note's page in a PDF or any other resource page has one too
    root_nav = _explorer(_doc(out, "Alpha.html"))
    assert "The Alpha Note" in root_nav.text_content() and "Projects" in root_nav.text_content()


def test_a_big_folder_shows_a_bounded_list_and_links_the_rest(nav_site):
    _, out = nav_site
    page = "Many/n059.html"
    nav = _explorer(_doc(out, page))
    files = nav.xpath(".//li[contains(@class, 'file')]")
    assert len(files) == SHOWN + 1  # the first SHOWN by title, and the page itself
    assert nav.xpath(".//a[@aria-current='page']")[0].text == "Many 059"
    (more,) = nav.xpath(".//li[@class='more']/a")
    assert more.text == f"… {60 - SHOWN - 1} more"
    assert _target(out, page, more.get("href")) == out / "_folders/Many/index.html"
    listed = _doc(out, "_folders/Many/index.html").xpath("//main//li/a/text()")
    assert listed == [f"Many {i:03d}" for i in range(60)]


def test_folder_pages_list_titles_and_subfolders_and_the_crumbs_link_them(nav_site):
    _, out = nav_site
    page = "Projects/Deep/Inner.html"
    crumbs = _doc(out, page).xpath("//nav[@class='crumbs']/a[@class='dir']")
    assert [a.text for a in crumbs] == ["Projects", "Deep"]
    assert [_target(out, page, a.get("href")) for a in crumbs] == [
        out / "_folders/Projects/index.html",
        out / "_folders/Projects/Deep/index.html",
    ]
    folder = _doc(out, "_folders/Projects/index.html")
    assert folder.xpath("//main/h1/text()") == ["Projects"]
    links = {a.text: a.get("href") for a in folder.xpath("//main//li/a")}
    assert set(links) == {"Deep", "Project plan"}
    assert _target(out, "_folders/Projects/index.html", links["Project plan"]) == out / "Projects/Plan.html"
    # a folder named like the reserved prefix keeps its notes' pages apart from the folder pages
    assert not (out / "_folders/Trap.html").exists()
    assert "A note in a folder" in (out / "_page/_folders/Trap.md.html").read_text("utf-8")


def test_home_md_is_the_landing_page_after_index_and_readme(nav_site, tmp_path):
    _, out = nav_site
    assert "Welcome home" in _doc(out, "index.html").xpath("//main")[0].text_content()
    root = _workspace(tmp_path / "ws", {"Home.md": "# Welcome home\n", "README.md": "# The readme\n"})
    _build(root, tmp_path / "out")
    main = _doc(tmp_path / "out", "index.html").xpath("//main")[0].text_content()
    assert "The readme" in main and "Welcome home" not in main


def _html(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.html")}


def test_tag_pages_and_the_ask_page_show_the_top_folder_and_follow_its_changes(tmp_path):
    notes = {**NOTES, "Tagged.md": "# Tagged note\n\nWords with #idea in them.\n"}
    root, out = _workspace(tmp_path / "ws", notes), tmp_path / "out"
    _build(root, out)
    for page in ("_tags/idea.html", "_tags/index.html", "ask.html"):
        nav = _explorer(_doc(out, page))
        text = nav.text_content()
        assert "The Alpha Note" in text and "Projects" in text and "Many 000" not in text, page
        assert all(not _target(out, page, h).is_relative_to(out / "_tags") for h in nav.xpath(".//a/@href"))
    tag_page = (out / "_tags/idea.html").read_bytes()
    note = root / "Tagged.md"
    note.write_text(note.read_text("utf-8") + "\nMore words.\n", "utf-8")
    _build(root, out)
    assert (out / "_tags/idea.html").read_bytes() == tag_page  # a body edit: the explorer is the same
    (root / "Beta.md").write_text("# The Beta Note\n", "utf-8")  # the top folder's listing changes
    _build(root, out)
    for page in ("_tags/idea.html", "ask.html"):
        assert "The Beta Note" in _explorer(_doc(out, page)).text_content(), page


def test_a_title_change_rewrites_only_the_pages_that_show_it(tmp_path):
    root, out = _workspace(tmp_path / "ws"), tmp_path / "out"
    _build(root, out)
    before = _html(out)
    note = root / "Projects/Deep/Second.md"
    note.write_text(note.read_text("utf-8") + "\nMore body.\n", "utf-8")
    report = _build(root, out).site
    assert report.pages_written == 1 and report.folder_pages == 0  # a body edit: its own page
    before = _html(out)
    note.write_text("# Second thoughts\n\nSecond body.\n", "utf-8")
    report = _build(root, out).site
    after = _html(out)
    changed = {p for p in after if after[p] != before.get(p)}
    # the note, the page beside it (its explorer), their folder's page, the front page's tree
    assert changed == {
        "Projects/Deep/Second.html",
        "Projects/Deep/Inner.html",
        "_folders/Projects/Deep/index.html",
        "index.html",
    }
    assert report.pages_written == 2 and report.folder_pages == 1
    # a note added to a folder: the folder's pages list it; a folder removed loses its page
    (root / "Projects/Deep/Third.md").write_text("# Third\n", "utf-8")
    _build(root, out)
    assert "Third" in _explorer(_doc(out, "Projects/Deep/Inner.html")).text_content()
    for rel in ("Projects/Deep/Inner.md", "Projects/Deep/Second.md", "Projects/Deep/Third.md"):
        (root / rel).unlink()
    _build(root, out)
    _build(root, out)  # the stale rows go: the folder is gone
    assert not (out / "_folders/Projects/Deep/index.html").exists()
    assert "Deep" not in _doc(out, "_folders/Projects/index.html").xpath("//main")[0].text_content()


def test_a_deleted_note_shows_one_notice(tmp_path):
    root, out = _workspace(tmp_path / "ws", {"A.md": "# A\n\nText.\n", "B.md": "# B\n"}), tmp_path / "out"
    _build(root, out)
    (root / "A.md").unlink()
    report = _build(root, out)
    banners = _doc(out, "A.html").xpath("//main//p[contains(@class, 'banner')]")
    assert [b.get("class") for b in banners] == ["banner stale"], [b.text_content() for b in banners]
    assert not [p for p in report.site.problems if p["code"] == "note_changed"]
    _build(root, out)  # then a tombstone
    banners = _doc(out, "A.html").xpath("//main//p[contains(@class, 'banner')]")
    assert len(banners) == 1 and "removed" in banners[0].text_content()


def test_every_page_links_the_favicon(nav_site):
    _, out = nav_site
    for page in ("index.html", "Alpha.html", "Projects/Deep/Inner.html", "_folders/Many/index.html"):
        (icon,) = _doc(out, page).xpath("//link[@rel='icon']")
        assert icon.get("type") == "image/svg+xml"
        assert _target(out, page, icon.get("href")).read_text("utf-8").startswith("<svg")


def _big_pdf(path: Path, pages: int) -> None:
    import pymupdf

    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page()
        page.insert_text((72, 100), f"Page {n + 1} of a long report.", fontsize=11)
    doc.save(path)


def test_ctrl_c_during_rendering_leaves_a_front_page(tmp_path):
    """SIGINT once the first PDF's page images are written, while the second one's are drawn."""
    root = _workspace(tmp_path / "ws", {"Note.md": "# Note\n\nSee [[a.pdf]] and [[b.pdf]].\n"})
    _big_pdf(root / "a.pdf", 1)
    _big_pdf(root / "b.pdf", 400)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnote_evidence", "build", str(root), "--out", str(out), "-j", "1"]
        + ["--no-ocr", "--sidecars", "mnote"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not list(out.glob("_pages/*/*/p1.*")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]  # it ended before its images
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert proc.returncode != 0 and not (out / "ask.html").exists()  # stopped before the render's end
    assert not list(out.glob("_pages/*/*/p400.*"))  # while the second PDF's images were drawn
    front = (out / "index.html").read_text("utf-8")
    assert front.rstrip().endswith("</html>") and "Note" in front
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [375, 1280])
def test_the_explorer_in_chromium_without_javascript(nav_site, browser, width, scheme):
    _, out = nav_site
    context = browser.new_context(
        viewport={"width": width, "height": 800}, java_script_enabled=False, color_scheme=scheme
    )
    try:
        page = context.new_page()
        page.goto((out / "Projects/Deep/Inner.html").as_uri())
        explorer, main = page.locator("nav.explorer"), page.locator("main")
        assert explorer.is_visible()
        box, main_box = explorer.bounding_box(), main.bounding_box()
        if width == 375:  # the note first, the explorer below it
            assert box["y"] >= main_box["y"] + main_box["height"] - 1
        else:  # left of the note, at the top of the side panel
            assert box["x"] + box["width"] <= main_box["x"] and box["y"] < 200
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        current = page.locator("nav.explorer a[aria-current=page]")
        assert current.inner_text() == "Inner thoughts" and current.is_visible()
        # a folder closes and opens with a click on its summary, no script needed
        deep = page.locator("nav.explorer details").nth(1)
        deep.locator("summary").click(position={"x": 2, "y": 5})
        assert not current.is_visible()
        deep.locator("summary").click(position={"x": 2, "y": 5})
        assert current.is_visible()
        current.scroll_into_view_if_needed()
        shoot(page, f"explorer-note-{width}-{scheme}")
        page.goto((out / "_folders/Many/index.html").as_uri())
        assert page.locator("main li").count() == 60
        shoot(page, f"explorer-folder-{width}-{scheme}")
    finally:
        context.close()
