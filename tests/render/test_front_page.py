"""The front page, the header and the side panels as files, and what an edit rewrites."""

from __future__ import annotations

import re
import sqlite3
from html import unescape
from pathlib import Path

from mnote_evidence.build.render.site import RenderOptions, render_site
from mnote_evidence.functions.adapters.serve import links_ask
from tests.conftest import SPEC_PDF, run_build

PDF_PAGE = SPEC_PDF + ".html"
NOTE = "Projects/Evidence Kernel.html"


def read(out: Path, rel: str) -> str:
    return (out / rel).read_text("utf-8")


def title(html: str) -> str:
    return unescape(re.search(r"<title>(.*?)</title>", html).group(1))


def main_of(html: str) -> str:
    return html.split('<main id="main">', 1)[1].split("</main>", 1)[0]


def side_of(html: str) -> str:
    return html.split('<aside class="side">', 1)[1].split("</aside>", 1)[0]


def crumbs_of(html: str) -> str:
    """The breadcrumb as text, e.g. "ws / Projects / Evidence Kernel.md"."""
    nav = html.split('aria-label="Breadcrumb">', 1)[1].split("</nav>", 1)[0]
    return " ".join(re.sub(r"<[^>]+>", " ", nav).split())


def linking_notes(out: Path, target: str) -> set[str]:
    conn = sqlite3.connect(out / "evidence.sqlite")
    try:
        return {
            p
            for (p,) in conn.execute(
                "SELECT r.source_root_relative_path FROM evidence_link l "
                "JOIN evidence_resource r USING (resource_id) WHERE l.target_path = ?",
                [target],
            )
        }
    finally:
        conn.close()


def test_readme_is_the_front_page_beside_the_tree_and_recent_changes(site):
    root, out = site
    html = read(out, "index.html")
    main, side = main_of(html), side_of(html)
    assert "Welcome to the evidence workspace" in main and 'class="note front-note"' in main
    # its links are relative to index.html (README.md sits beside it) and reach the note pages
    assert 'href="Projects/Evidence%20Kernel.html"' in main and 'href="Archive/Old%20Ideas.html"' in main
    assert 'href="README.html"' in main  # the note's own page
    assert 'class="tree"' in side and "evidence-kernel-spec.pdf" in side and "Recent changes" in side
    assert title(html) == "Welcome to the evidence workspace · ws"  # not "ws · ws"
    assert crumbs_of(html) == "ws"  # not "Workspace / index.html"


def test_titles_and_breadcrumbs_of_other_pages(site):
    _, out = site
    html = read(out, NOTE)
    assert title(html) == "Evidence Kernel · ws"
    assert crumbs_of(html) == "ws / Projects / Evidence Kernel.md"
    assert '<a class="home" href="../index.html">ws</a>' in html


def test_index_md_wins_over_readme_and_without_either_the_tree_is_the_page(workspace, tmp_path):
    out = tmp_path / "out"
    (workspace / "index.md").write_text("# Start here\n\nThe [[Evidence Kernel]] first.\n", "utf-8")
    run_build(workspace, out, site=True)
    html = read(out, "index.html")
    assert "Start here" in main_of(html) and "Welcome to the evidence workspace" not in main_of(html)
    # index.md's own page lives under _page/, but on the front page its links are relative to index.html
    assert 'href="Projects/Evidence%20Kernel.html"' in main_of(html) and 'href="_page/index.md.html"' in html
    assert title(html) == "Start here · ws"
    for name in ("index.md", "README.md"):
        (workspace / name).unlink()
    run_build(workspace, out, site=True)
    run_build(workspace, out, site=True)  # the stale notes go
    html = read(out, "index.html")
    assert 'class="tree"' in main_of(html) and "front-note" not in html
    assert title(html) == "ws"


def test_recent_changes_list_the_edited_note_first(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    note = workspace / "Inbox/Legacy Note.md"
    note.write_bytes(note.read_bytes() + b"\n\nOne more line.\n")
    run_build(workspace, out, site=True)
    recent = side_of(read(out, "index.html")).split("Recent changes", 1)[1]
    links = re.findall(r'<li><a href="([^"]+)" title="([^"]+)">([^<]+)</a>', recent)
    assert links[0][:2] == ("Inbox/Legacy%20Note.html", "Legacy Note.md") and len(links) == 8
    assert not any(name.endswith(".md") for _, _, name in links)  # titles, as the explorer shows them


def test_ask_is_linked_only_when_a_knowledge_server_is_configured(site, tmp_path):
    root, out = site
    for rel in ("index.html", NOTE, PDF_PAGE):
        assert "ask-link" not in read(out, rel)
    assert not links_ask(out)
    # the same index rendered as a build with --lightrag-url renders it: every page links Ask, relatively
    asked = tmp_path / "asked"
    report = render_site(root, asked, out / "evidence.sqlite", RenderOptions(ask=True))
    assert report.pages_written > 0 and links_ask(asked)
    for rel, href in (("index.html", "ask.html"), (NOTE, "../ask.html"), (PDF_PAGE, "../../ask.html")):
        assert f'<a class="ask-link" href="{href}">Ask</a>' in read(asked, rel)
    assert (asked / "ask.html").is_file()


def test_backlinks_show_the_linking_sentence_with_the_link_marked(site):
    _, out = site
    side = side_of(read(out, NOTE))
    # Kickoff's block is two sentences; only the one with the link is shown, its words marked
    assert "<q>Back to <mark>Evidence Kernel</mark>.</q>" in side
    assert "Attendees agreed" not in side
    assert (
        "<q>Read the <mark>Evidence Kernel</mark> spec; the provider matrix table spans a page break.</q>"
        in side
    )
    # a Markdown link's label, found as a word of its own ("spec", not the start of "specification")
    # each backlink is named by the linking note's title (its first heading here), its folder beside it
    assert re.search(
        r'<a href="Meeting%20Notes/Kickoff.html#b-[a-z0-9-]+">Kickoff meeting</a> '
        r'<small class="muted">Projects/Meeting Notes</small>',
        side,
    )
    pdf_side = side_of(read(out, PDF_PAGE))
    assert "<q>The kernel specification is attached: <mark>spec</mark>.</q>" in pdf_side


def test_every_note_has_an_outline(workspace, tmp_path):
    out = tmp_path / "out"
    (workspace / "Inbox/Plain.md").write_text("Just a line, no heading.\n", "utf-8")
    run_build(workspace, out, site=True)
    side = side_of(read(out, NOTE))
    outline = side.split('aria-label="Outline"', 1)[1].split("</nav>", 1)[0]
    conn = sqlite3.connect(out / "evidence.sqlite")
    headings = [
        t
        for (t,) in conn.execute(
            "SELECT b.text FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = 'Projects/Evidence Kernel.md' AND b.kind = 'heading' "
            "ORDER BY ordinal"
        )
    ]
    assert headings == ["Evidence Kernel", "Decisions", "Related"]
    assert re.findall(r'<a href="#b-[a-z0-9-]+">([^<]+)</a>', outline) == headings
    assert "No headings in this note." in side_of(read(out, "Inbox/Plain.html"))


def test_images_in_notes_link_to_their_page_with_the_ocr_text(site):
    _, out = site
    html = read(out, "研究/Rust 并发.html")
    link = re.search(r'<a class="image-link" href="([^"]+)"[^>]*><img src="([^"]+)"', html)
    assert link, "the image is not linked"
    assert link.group(1) == "Rust%20%E5%B9%B6%E5%8F%91.assets/thread-scope.png.html"
    assert link.group(2) == "Rust%20%E5%B9%B6%E5%8F%91.assets/thread-scope.png"
    ocr_page = read(out, "研究/Rust 并发.assets/thread-scope.png.html")
    assert "线程作用域" in ocr_page  # the recognised text is on the page the image opens


def test_one_edited_note_rewrites_its_page_its_backlink_pages_and_the_front_page(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    unchanged = run_build(workspace, out, site=True).site
    assert unchanged.pages_written == 0 and not unchanged.front_page_written

    def mtimes() -> dict[Path, int]:
        return {p: p.stat().st_mtime_ns for p in out.rglob("*.html")}

    # 2026-11-02 links Evidence Kernel: the edited sentence is on Evidence Kernel's page (its backlinks)
    before = mtimes()
    note = workspace / "Daily/2026-11-02.md"
    note.write_text(note.read_text("utf-8").replace("spans a page break", "spans two pages"), "utf-8")
    report = run_build(workspace, out, site=True).site
    changed = {p.relative_to(out).as_posix() for p, m in before.items() if p.stat().st_mtime_ns != m}
    assert changed == {"Daily/2026-11-02.html", NOTE, "index.html"}  # index: recent changes list the note
    # rendered: the note and the page quoting it; the notes linking to it link it plainly, showing nothing
    # of its content, so they are not re-rendered (a page is keyed on what it shows)
    assert linking_notes(out, "Daily/2026-11-02.md") == {"README.md", "Daily/2026-11-03.md"}
    assert report.pages_written == 2 and report.front_page_written
    assert "spans two pages" in side_of(read(out, NOTE))

    # the home note itself: its page, the pages whose backlinks quote the edited block, the front page
    before = mtimes()
    readme = workspace / "README.md"
    readme.write_text(
        readme.read_text("utf-8").replace("Old material lives", "Older material lives"), "utf-8"
    )
    report = run_build(workspace, out, site=True).site
    changed = {p.relative_to(out).as_posix() for p, m in before.items() if p.stat().st_mtime_ns != m}
    assert changed == {"README.html", "Archive/Old Ideas.html", "index.html"}
    assert linking_notes(out, "README.md") == {"Projects/Evidence Kernel.md"}
    # Evidence Kernel links README plainly: not re-rendered
    assert report.pages_written == 2 and "Older material lives" in main_of(read(out, "index.html"))

    # a linking note's new title renames its backlink on the pages it links to
    kickoff = workspace / "Projects/Meeting Notes/Kickoff.md"
    text = kickoff.read_text("utf-8")
    kickoff.write_text("---\ntitle: Kickoff A\n---\n" + text, "utf-8")
    run_build(workspace, out, site=True)
    assert ">Kickoff A</a>" in side_of(read(out, NOTE))
    kickoff.write_text(
        "---\ntitle: Kickoff B\n---\n" + text, "utf-8"
    )  # the linking block itself is unchanged
    run_build(workspace, out, site=True)
    assert ">Kickoff B</a>" in side_of(read(out, NOTE)) and ">Kickoff A</a>" not in side_of(read(out, NOTE))
