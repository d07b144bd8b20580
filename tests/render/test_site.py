"""The rendered site as files: pages, links, escaping, incrementality, tombstones."""

from __future__ import annotations

import re
import shutil
import sqlite3
from urllib.parse import unquote

from mnote_evidence.build.core.urls import page_path
from mnote_evidence.build.render import state as site_state
from tests.conftest import SPEC_PDF, run_build
from tests.render.conftest import block_id

PDF_PAGE = SPEC_PDF + ".html"


def test_every_resource_and_note_has_a_page(site):
    root, out = site
    for rel in (
        "index.html",
        "README.html",
        "研究/化学笔记.html",
        PDF_PAGE,
        "Unfiled/budget.csv.html",
        "Inbox/Broken Files.assets/encrypted.pdf.html",
        "研究/Rust 并发.assets/thread-scope.png.html",
    ):
        assert (out / rel).is_file(), rel
    assert (out / SPEC_PDF).read_bytes() == (root / SPEC_PDF).read_bytes()  # original for download
    encrypted = (out / "Inbox/Broken Files.assets/encrypted.pdf.html").read_text("utf-8")
    assert "pdf_encrypted" in encrypted and "password-protected" in encrypted
    index = (out / "index.html").read_text("utf-8")
    for code in ("pdf_corrupt", "pdf_encrypted", "empty_file", "not_a_pdf", "docx_corrupt"):
        assert code in index


def test_links_are_relative_and_resolve(site):
    _, out = site
    for page in out.rglob("*.html"):
        html = page.read_text("utf-8")
        for href in re.findall(r'(?:href|src)="([^"]+)"', html):
            assert not href.startswith("/"), (page, href)
            if href.startswith(("#", "http:", "https:", "mailto:")):
                continue
            target = (page.parent / unquote(href.split("#")[0])).resolve()
            assert target.exists(), (page.relative_to(out), href)


def test_note_links_and_wikilinks_point_at_pages(site):
    _, out = site
    html = (out / "Projects/Evidence Kernel.html").read_text("utf-8")
    assert 'href="Evidence%20Kernel.assets/evidence-kernel-spec.pdf.html"' in html
    assert 'class="wikilink" href="Meeting%20Notes/Kickoff.html"' in html
    assert 'href="../README.html"' in html
    broken = (out / "Inbox/Broken Files.html").read_text("utf-8")
    assert "passwd" not in " ".join(re.findall(r'href="([^"]*)"', broken))  # never linked
    assert '<span class="broken-link" title="not found in this workspace">outside the root</span>' in broken


def test_hostile_markup_is_text_not_markup(site):
    _, out = site
    html = (out / "Inbox/Hostile.html").read_text("utf-8")
    body = html.split("<article", 1)[1]
    assert "<script" not in body and "<iframe" not in body
    assert not re.search(r"<[^>]+\son\w+=", body)  # no event handler attribute on any tag
    hrefs = re.findall(r'(?:href|src)="([^"]*)"', body)
    assert not [h for h in hrefs if h.lower().startswith(("javascript:", "data:"))]
    assert "&lt;script&gt;" in body  # shown as text
    assert "A harmless paragraph that must still render." in body
    pdf = (out / "Inbox/Hostile.assets/evil.pdf.html").read_text("utf-8")
    assert '<script>alert("pdf")' not in pdf and "&lt;script&gt;" in pdf


def test_every_block_has_its_anchor(site):
    _, out = site
    conn = sqlite3.connect(out / "evidence.sqlite")
    rows = conn.execute(
        "SELECT r.source_root_relative_path, b.block_id FROM evidence_block b "
        "JOIN evidence_resource r USING (resource_id)"
    ).fetchall()
    pages = {}
    for path, bid in rows:
        html = pages.setdefault(path, (out / page_path(path)).read_text("utf-8"))
        assert f'id="{bid}"' in html, (path, bid)


def test_incremental_render_touches_only_changed_pages(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*.html")}
    images = {p: p.stat().st_mtime_ns for p in (out / "_pages").rglob("*.jpg")}
    report = run_build(workspace, out, site=True)
    assert report.site.pages_written == 0
    note = workspace / "Archive/Old Ideas.md"
    note.write_text(note.read_text("utf-8").replace("Text PDFs", "Text-layer PDFs"), "utf-8")
    report = run_build(workspace, out, site=True)
    # the note's page only: README links it plainly, showing nothing of its content (a page is keyed on what
    # it shows; tests/render/test_incremental_render.py has the embeds and fragments that do re-render)
    with sqlite3.connect(out / "evidence.sqlite") as conn:
        linking = {
            r[0]
            for r in conn.execute(
                "SELECT r.source_root_relative_path FROM evidence_link l "
                "JOIN evidence_resource r USING (resource_id) WHERE l.target_path = 'Archive/Old Ideas.md'"
            )
        }
    assert linking == {"README.md"}
    assert report.site.pages_written == 1 and report.site.page_images == 0
    changed = {p for p, m in mtimes.items() if p.stat().st_mtime_ns != m} - {out / "index.html"}
    # a re-rendered page whose HTML came out the same is not rewritten (atomic_write_text)
    assert out / "Archive/Old Ideas.html" in changed
    assert changed <= {out / "Archive/Old Ideas.html"} | {out / page_path(p) for p in linking}
    assert all(p.stat().st_mtime_ns == m for p, m in images.items())


def test_deleted_resource_leaves_a_tombstone(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    (workspace / "Unfiled/orphan-report.pdf").unlink()
    run_build(workspace, out, site=True)  # stale: still shown, with a banner
    assert "was deleted from the workspace" in (out / "Unfiled/orphan-report.pdf.html").read_text("utf-8")
    run_build(workspace, out, site=True)  # removed: a tombstone
    html = (out / "Unfiled/orphan-report.pdf.html").read_text("utf-8")
    assert "was removed from the workspace" in html
    pages = site_state.load(out)["pages"]
    assert pages["Unfiled/orphan-report.pdf.html"]["key"] == "tombstone"


def test_page_images_are_cached_by_content_hash(workspace, tmp_path):
    out = tmp_path / "out"
    first = run_build(workspace, out, site=True)
    assert first.site.page_images == 4  # 3 spec pages + 1 orphan page
    shutil.copy(workspace / SPEC_PDF, workspace / "Unfiled/spec-copy.pdf")  # same bytes elsewhere
    second = run_build(workspace, out, site=True)
    assert second.site.page_images == 0
    assert block_id(out, "The retention period%")
