"""An edit re-renders exactly the pages that show changed content, and the site it leaves is the site
a full render of the same index gives (`render_dirty`, page keys on what a page shows;
docs/performance.md)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mnote_evidence.build.pipeline import DB_NAME
from mnote_evidence.build.render.site import render_site
from tests.conftest import run_build

NOTES = {
    "A.md": "# A\n\n## Part\n\nalpha words here.\n\n## Other\n\nbeta words.\n",
    "B.md": "# B\n\nSee [[A]] for more.\n",  # a plain link: shows only A's URL
    "C.md": "# C\n\n![[A#Part]]\n",  # an embed: shows A's Part section
    "D.md": "# D\n\nRead [[A#Other]] first. #topic\n",  # a fragment: shows where #Other lands
    "E.md": "# E\n\nNothing to do with A. #topic\n",
    "F.md": "# F\n\nAbout #other-tag only.\n",
}


def _workspace(root: Path) -> Path:
    root.mkdir()
    old = time.time() - 86400
    for name, text in NOTES.items():
        (root / name).write_text(text, "utf-8")
        os.utime(root / name, (old, old))
    return root


def _html(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.html")}


def _mtimes(out: Path) -> dict[str, int]:
    return {p.relative_to(out).as_posix(): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}


def _edit(root: Path, name: str, old: str, new: str) -> None:
    path = root / name
    path.write_text(path.read_text("utf-8").replace(old, new), "utf-8")
    os.utime(path, (time.time() - 3600, time.time() - 3600))


def _rebuild_and_check(root: Path, out: Path, tmp: Path) -> set[str]:
    """Build; return the files the build rewrote. The site must equal a full render of the same index."""
    before = _mtimes(out)
    report = run_build(root, out, site=True)
    after = _mtimes(out)
    fresh = tmp / f"fresh-{len(list(tmp.iterdir()))}"
    render_site(root, fresh, out / DB_NAME)
    assert _html(out) == _html(fresh)  # nothing stale, nothing missing
    changed = {k for k in after if after[k] != before.get(k)}
    # every page rendered again came out different (page keys hold what a page shows, nothing more)
    pages = {k for k in changed if k.endswith(".html") and k != "index.html" and not k.startswith("_tags/")}
    assert report.site.pages_written == len(pages)
    return changed


def test_an_edit_rewrites_exactly_the_pages_showing_it(tmp_path):
    root, out = _workspace(tmp_path / "ws"), tmp_path / "out"
    run_build(root, out, site=True)
    site = {"_site_state": ".mnote-state.sqlite", "db": DB_NAME}

    # A's Part section: A's page, the page embedding it; not B (plain link) nor D (#Other lands the same)
    changed = _rebuild_and_check(root, out, tmp_path)
    assert not changed  # a no-op first: nothing written at all
    _edit(root, "A.md", "alpha words here", "alpha words changed")
    changed = _rebuild_and_check(root, out, tmp_path)
    assert {k for k in changed if k.endswith(".html")} - {"index.html"} == {"A.html", "C.html"}
    assert set(site.values()) <= changed

    # a heading D links to is renamed: D's link now finds nothing there (a missing marker)
    _edit(root, "A.md", "## Other", "## Elsewhere")
    changed = _rebuild_and_check(root, out, tmp_path)
    assert {k for k in changed if k.endswith(".html")} - {"index.html"} == {"A.html", "D.html"}
    assert "missing" in (out / "D.html").read_text("utf-8")

    # a tag moves from E to F: both notes, the two tag pages and the tag index; not A-D
    _edit(root, "E.md", "#topic", "#other-tag")
    changed = _rebuild_and_check(root, out, tmp_path)
    html = {k for k in changed if k.endswith(".html")}
    assert "E.html" in html and not html & {"A.html", "B.html", "C.html", "D.html"}
    assert {k for k in html if k.startswith("_tags/")} == {
        "_tags/topic.html",
        "_tags/other-tag.html",
        "_tags/index.html",
    }
    assert "F.html" not in html  # F's page shows its own tag only: unchanged
