"""The site folder as hostile ground (docs/security.md, "What a build writes"): what the build writes
there lands in real folders below it, one file per placement.

- symlinks in the site folder (a shipped `_site/` with `_static`, `Projects`, `_file` leading out)
  are replaced by real folders: nothing is written outside the site folder, and the link's target is
  left as it was;
- names too long for a file system (a page `x.pdf.html` of a 251-byte name) move to a short hashed
  page under `_page/` (`name_too_long`), never a crash;
- no two files of the site are one file by case, Unicode form or file-versus-folder: a folder named
  like a page, or attachments `a.pdf` and `A.pdf`, move the loser (`page_collision`);
- a tag named `index` has its own page, not the tag index;
- `serve` sends as HTML or script only the pages the build wrote and its own `_static` assets.
Every test runs a real build (the library API, or the CLI where a process is needed) and reads what
it wrote.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pymupdf

from mnote_evidence.build.core.urls import same_file_key
from tests.conftest import connect, run_build


def _pdf(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    doc.save(path)
    doc.close()


def _page_urls(out: Path) -> dict[str, str]:
    return {
        path: unquote(url)
        for path, url in connect(out).execute(
            "SELECT source_root_relative_path, page_url FROM evidence_resource"
        )
    }


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir())


def _codes(report, path: str) -> set[str]:
    return {p["code"] for p in report.site.problems + report.site.warnings if p["path"] == path}


def _source_link(page: Path) -> Path:
    """The file a resource page's download link (its copy in the site) points at."""
    href = re.search(r'<a class="source" href="([^"]+)" download>', page.read_text("utf-8")).group(1)
    return Path(os.path.normpath(page.parent / unquote(href)))


def test_symlinked_folders_in_the_site_are_replaced_never_written_through(tmp_path):
    root, out, outside = tmp_path / "ws", tmp_path / "out", tmp_path / "outside"
    (root / "Projects").mkdir(parents=True)
    (root / "Projects" / "n.md").write_text("A note with #tagged words and ![[doc.pdf]] and ![[x.html]].\n")
    _pdf(root / "Projects" / "doc.pdf", "The PDF of the project.")
    (root / "Projects" / "x.html").write_text("<b>an attachment</b>\n")
    out.mkdir()
    for name in ("_static", "Projects", "_tags", "_pages", "_file"):
        (outside / name).mkdir(parents=True)
        (out / name).symlink_to(outside / name)
    report = run_build(root, out, site=True)
    assert _files(outside) == []  # nothing written through a link
    for name in ("_static", "Projects", "_tags", "_pages", "_file"):
        assert (out / name).is_dir() and not (out / name).is_symlink(), name
    assert (out / "_static" / "site.css").is_file() and (out / "Projects" / "n.html").is_file()
    assert (out / "_file" / "Projects" / "x.html").read_bytes() == (root / "Projects" / "x.html").read_bytes()
    assert any((out / "_pages").rglob("p1.*")) and (out / "_tags" / "tagged.html").is_file()
    assert report.site.pages_written == 3
    # a link placed in a built site is replaced too, where the next build writes
    (outside / "deeper").mkdir()
    (out / "Projects").rename(tmp_path / "old-projects")
    (out / "Projects").symlink_to(outside / "deeper")
    (root / "Projects" / "n.md").write_text("An edited note with #tagged words.\n")
    run_build(root, out, site=True)
    assert _files(outside) == [] and not (out / "Projects").is_symlink()
    assert "An edited note" in (out / "Projects" / "n.html").read_text("utf-8")


LONG_NAMES = [
    "a" * 251 + ".txt",
    "b" * 252 + ".md",
    "p" * 251 + ".pdf",
    "h" * 250 + ".html",
    "图" * 83 + ".png",
]


def test_names_too_long_for_a_page_move_to_a_short_page_and_never_crash_the_render(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    for name in LONG_NAMES:
        if name.endswith(".pdf"):
            _pdf(root / name, "A PDF with a long name.")
        elif name.endswith(".png"):
            from PIL import Image

            Image.new("RGB", (8, 8), "white").save(root / name)
        else:
            (root / name).write_text(f"The file {name[:4]}.\n")
    (root / "links.md").write_text(" ".join(f"[[{name}]]" for name in LONG_NAMES) + "\n")
    report = run_build(root, out, site=True, sidecars="mnote")
    urls = _page_urls(out)
    for name in LONG_NAMES:
        page = out / urls[name]
        assert page.is_file() and max(len(part.encode()) for part in Path(urls[name]).parts) <= 255, name
        if name.endswith(".md"):
            continue
        assert _source_link(page).read_bytes() == (root / name).read_bytes(), name
    moved = {p for p in LONG_NAMES if "name_too_long" in _codes(report, p)}
    assert moved == set(LONG_NAMES)  # each page's name passes 255 bytes: `x.pdf.html`, `图….png.html`
    assert all(urls[p].startswith("_page/") for p in moved)
    links = (out / "links.html").read_text("utf-8")
    assert all(f'href="{urls[p]}"' in links for p in moved)
    assert not [p for p in out.rglob("*.tmp")]


def test_a_folder_named_like_a_page_moves_the_page_and_never_crashes_the_render(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    _pdf(root / "spec.pdf", "The specification.")
    (root / "x.md").write_text("# x\n\nThe note x.\n")
    run_build(root, out, site=True)
    assert _page_urls(out)["spec.pdf"] == "spec.pdf.html"
    # folders appear where the pages are: the folders keep their names, the pages move
    (root / "spec.pdf.html").mkdir()
    (root / "spec.pdf.html" / "t.txt").write_text("inside the folder\n")
    (root / "x.html").mkdir()
    _pdf(root / "x.html" / "p.pdf", "A PDF in a folder named like a page.")
    report = run_build(root, out, site=True)
    urls = _page_urls(out)
    assert urls["spec.pdf"].startswith("_page/") and urls["x.md"].startswith("_page/")
    assert "page_collision" in _codes(report, "spec.pdf") and "page_collision" in _codes(report, "x.md")
    assert "The note x" in (out / urls["x.md"]).read_text("utf-8")
    assert (out / "spec.pdf.html" / "t.txt").read_bytes() == b"inside the folder\n"
    assert (out / urls["spec.pdf.html/t.txt"]).is_file() and (out / urls["x.html/p.pdf"]).is_file()
    keys = [same_file_key(u) for u in urls.values()]
    assert len(set(keys)) == len(keys)
    # and a fresh site of the same workspace is the same
    fresh = tmp_path / "fresh"
    run_build(root, fresh, site=True)
    assert _page_urls(fresh) == urls and (fresh / urls["spec.pdf"]).is_file()


def test_attachment_copies_that_would_be_one_file_by_case_or_unicode_form_are_kept_apart(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    _pdf(root / "a.pdf", "The lower case PDF.")
    _pdf(root / "A.pdf", "The upper case PDF.")
    nfc, nfd = unicodedata.normalize("NFC", "café.txt"), unicodedata.normalize("NFD", "café.txt")
    (root / nfc).write_text("NFC text\n")
    (root / nfd).write_text("NFD text\n")
    (root / "n.md").write_text("![[a.pdf]] ![[A.pdf]]\n")
    report = run_build(root, out, site=True)
    urls = _page_urls(out)
    copies = {}
    for path in ("a.pdf", "A.pdf", nfc, nfd):
        copy = _source_link(out / urls[path])
        assert copy.read_bytes() == (root / path).read_bytes(), path
        copies[path] = copy.relative_to(out).as_posix()
    keys = [same_file_key(p) for p in [*copies.values(), *urls.values()]]
    assert len(set(keys)) == len(keys), copies
    assert {p for p in copies if "page_collision" in _codes(report, p)} == {"a.pdf", nfc}
    assert copies["A.pdf"] == "A.pdf" and copies["a.pdf"].startswith("_file/")


def test_a_tag_named_index_has_its_own_page_not_the_tag_index(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    (root / "t.md").write_text("Words under #index and #other.\n")
    run_build(root, out, site=True)
    note = (out / "t.html").read_text("utf-8")
    href = re.search(r'<a class="tag" href="([^"]+)">#index</a>', note).group(1)
    assert unquote(href) != "_tags/index.html"
    page = (out / unquote(href)).read_text("utf-8")
    assert "Words under" in page and 'href="other.html"' not in page
    assert 'href="other.html"' in (out / "_tags" / "index.html").read_text("utf-8")


def test_serve_sends_as_html_or_script_only_what_the_build_wrote(tmp_path):
    """A site folder that arrives with planted files (as a shipped `_site/` would): built over, then
    served."""
    import httpx

    from mnote_evidence.functions.adapters.datasette_plugin import SITE_BASE
    from tests.servers import start_serve, stop

    root = tmp_path / "ws"
    root.mkdir()
    out = tmp_path / "_site"  # outside the workspace: a site folder inside it is refused
    (out / "_static").mkdir(parents=True)
    (out / "evil").mkdir()
    script = "fetch('/evidence.json?sql=select+1')\n"
    (out / "_static" / "extra.js").write_text(script)
    (out / "_static" / "site.js").write_text(script)  # a packaged asset's name, other bytes
    (out / "evil" / "page.html").write_text('<script src="../_static/extra.js"></script>\n')
    (out / "_tags").mkdir()
    (out / "_tags" / "planted.html").write_text("<script>alert(1)</script>\n")
    (root / "n.md").write_text("A note with #tagged words.\n")
    run_build(root, out, site=True)
    proc, base = start_serve(out)
    try:

        def get(rel: str) -> httpx.Response:
            r = httpx.get(base + SITE_BASE + rel, timeout=10)
            assert r.status_code == 200, rel
            return r

        for rel in ("evil/page.html", "_static/extra.js", "_tags/planted.html"):
            r = get(rel)
            assert r.headers["content-type"] == "application/octet-stream", rel
            assert r.headers.get("content-disposition") == "attachment", rel
        for rel in ("n.html", "index.html", "_tags/tagged.html", "_tags/index.html"):
            assert get(rel).headers["content-type"].startswith("text/html"), rel
        assert get("_static/site.js").text != script  # the build wrote its own over it
        assert "javascript" in get("_static/site.js").headers["content-type"]
        (out / "_static" / "site.js").write_text(script)  # changed after the build: no longer ours
        assert get("_static/site.js").headers["content-type"] == "application/octet-stream"
    finally:
        stop(proc)
