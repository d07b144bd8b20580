"""Obsidian-flavoured Markdown (docs/guides/obsidian.md), on the fixture workspace
`content_fixtures/Obsidian/`: what each page shows and what `evidence.sqlite` holds for it, built by the
real pipeline."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from mnote_evidence.build.core.ids import resource_id
from mnote_evidence.build.parse.providers.markdown import MarkdownProvider
from mnote_evidence.build.render.math_html import mathml
from tests.conftest import connect, run_build

PLAN, REVIEW = "Obsidian/Project Plan.md", "Obsidian/Review.md"


@pytest.fixture(scope="module")
def obsidian(site):
    """(workspace, out, conn, plan page, review page) of the shared rendered fixture site."""
    root, out = site
    conn = connect(out)
    yield (
        root,
        out,
        conn,
        (out / "Obsidian/Project Plan.html").read_text("utf-8"),
        (out / "Obsidian/Review.html").read_text("utf-8"),
    )
    conn.close()


def blocks(conn: sqlite3.Connection, path: str) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT b.* FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
        "WHERE r.source_root_relative_path = ? ORDER BY ordinal",
        [path],
    ).fetchall()


def block(conn, path: str, kind: str, like: str) -> sqlite3.Row:
    hits = [b for b in blocks(conn, path) if b["kind"] == kind and re.search(like, b["text"])]
    assert len(hits) == 1, (kind, like, [(b["kind"], b["text"]) for b in blocks(conn, path)])
    return hits[0]


def test_front_matter_title_aliases_tags(obsidian):
    _, out, conn, plan, review = obsidian
    row = conn.execute(
        "SELECT title FROM evidence_resource WHERE source_root_relative_path = ?", [PLAN]
    ).fetchone()
    assert row["title"] == "Project Plan 2027"
    assert "<title>Project Plan 2027 ·" in plan
    # no front matter: the first heading
    assert (
        conn.execute(
            "SELECT title FROM evidence_resource WHERE source_root_relative_path = ?", [REVIEW]
        ).fetchone()["title"]
        == "Review"
    )
    props = block(conn, PLAN, "properties", "^title: Project Plan 2027")
    assert props["text"].split("\n") == [
        "title: Project Plan 2027",
        "aliases: Roadmap, The Plan",
        "tags: planning, project/alpha",
    ]
    assert f'<ul class="properties block" id="{props["block_id"]}"><li>title: Project Plan 2027</li>' in plan
    links = {
        (r["kind"], r["target"])
        for r in conn.execute(
            "SELECT kind, target FROM evidence_link WHERE source_block_id = ?", [props["block_id"]]
        )
    }
    assert links == {
        ("alias", "Roadmap"),
        ("alias", "The Plan"),
        ("tag", "planning"),
        ("tag", "project/alpha"),
    }
    # the alias resolves a wikilink: an edge from Review to the plan, shown as a link to its page
    alias_link = conn.execute(
        "SELECT target_path FROM evidence_link l JOIN evidence_resource r USING (resource_id) "
        "WHERE r.source_root_relative_path = ? AND l.target = 'Roadmap'",
        [REVIEW],
    ).fetchone()
    assert alias_link["target_path"] == PLAN
    assert '<a class="wikilink" href="Project%20Plan.html">roadmap alias</a>' in review


def test_callouts_tasks_highlight_footnotes(obsidian):
    _, _, conn, plan, _ = obsidian
    title = block(conn, PLAN, "callout_title", "^Budget risk$")
    body = block(conn, PLAN, "callout", "^Storage costs may double #risk if OCR runs twice.$")
    assert '<div class="callout callout-warning" data-callout="warning">' in plan
    assert f'<p id="{title["block_id"]}" class="block callout-title">Budget risk</p>' in plan
    assert f'id="{body["block_id"]}"' in plan
    folded = block(conn, PLAN, "callout_title", "^Folded hint$")
    assert re.search(
        r'<details class="callout callout-tip" data-callout="tip">\s*<summary id="'
        + folded["block_id"]
        + '" class="block callout-title">Folded hint</summary>',
        plan,
    )
    hint = block(conn, PLAN, "callout", "one rule")
    assert hint["text"] == "Open me for the one rule of the plan."  # the highlight's words, no `==`
    assert "<mark>one rule</mark>" in plan and "==" not in hint["text"]
    done = block(conn, PLAN, "task", r"^\[x\] Write the spec$")
    todo = block(conn, PLAN, "task", r"^\[ \] Review the parser$")
    assert re.search(
        f'<li class="task-list-item block" id="{done["block_id"]}">.*?'
        r'<input class="task-list-item-checkbox" disabled="" type="checkbox" checked="">',
        plan,
    )
    assert re.search(
        f'id="{todo["block_id"]}"><input class="task-list-item-checkbox" disabled="" '
        r'type="checkbox"> Review',
        plan,
    )
    note = block(conn, PLAN, "footnote", "^The source is the kickoff meeting.$")
    assert block(conn, PLAN, "paragraph", "source")["text"] == "A claim with a source.[1]"
    assert re.search(
        r'<li id="fn1" class="footnote-item"><p id="' + note["block_id"] + '" class="block">', plan
    )
    assert '<a href="#fn1" id="fnref1">[1]</a>' in plan
    assert json.loads(note["locator_json"])["lineRange"] == [33, 33]
    assert note["section_id"] is None and json.loads(note["locator_json"])["sectionPath"] == []


def test_math_is_mathml_with_the_tex_in_the_block(obsidian):
    _, _, conn, plan, _ = obsidian
    display = block(conn, PLAN, "math", r"\\sigma")
    assert display["text"] == r"\sigma = \sqrt{\frac{1}{n}\sum_i x_i^2}"
    assert (
        f'<div class="math block" id="{display["block_id"]}">'
        '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in plan
    )
    assert "<msqrt>" in plan and '<annotation encoding="application/x-tex">E = mc^2</annotation>' in plan
    inline = block(conn, PLAN, "paragraph", "^Energy")
    assert inline["text"] == "Energy is $E = mc^2$ and the fit is:"
    hits = conn.execute("SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH 'sigma'").fetchone()[0]
    assert hits >= 1  # the TeX source is searchable
    assert "<script" not in plan.split("<article", 1)[1].split("</article>")[0]


def test_math_markup_in_tex_is_escaped():
    html = mathml(r"\text{<img src=x onerror=alert(1)>}")
    assert "<img" not in html and "&lt;img" in html
    assert mathml(r"\frac{a").startswith("<math") or "math-error" in mathml(r"\frac{a")


def test_tags_have_pages_listing_their_blocks(obsidian):
    _, out, conn, plan, review = obsidian
    risk = block(conn, PLAN, "callout", "#risk")
    assert '<a class="tag" href="../_tags/risk.html">#risk</a>' in plan
    page = (out / "_tags/risk.html").read_text("utf-8")
    assert f'href="../Obsidian/Project%20Plan.html#{risk["block_id"]}"' in page
    planning = (out / "_tags/planning.html").read_text("utf-8")  # front matter tag + inline tag
    for path in (PLAN, REVIEW):
        assert path.split("/")[1].replace(" ", "%20").replace(".md", ".html") in planning
    assert (out / "_tags/project/alpha.html").exists()
    assert not (out / "_tags/not-a-tag.html").exists()  # inside a code span
    code = block(conn, PLAN, "list_item", "not-a-tag")
    assert not conn.execute(
        "SELECT 1 FROM evidence_link WHERE source_block_id = ? AND kind = 'tag'", [code["block_id"]]
    ).fetchone()
    tags = {r[0] for r in conn.execute("SELECT DISTINCT target FROM evidence_link WHERE kind = 'tag'")}
    assert {"risk", "research", "planning", "project/alpha"} <= tags
    index = (out / "_tags/index.html").read_text("utf-8")
    assert all(f"#{t}</a>" in index for t in tags)


def test_links_into_headings_and_author_block_ids(obsidian):
    _, _, conn, plan, review = obsidian
    ship = block(conn, PLAN, "paragraph", "^The kernel ships in March.$")
    assert ship["anchor"] == "ship-date" and "^" not in ship["text"]
    assert f'<span class="alias author-anchor" id="^ship-date"></span><p id="{ship["block_id"]}"' in plan
    heading = block(conn, PLAN, "heading", "^Open questions$")
    assert '<a class="wikilink" href="Project%20Plan.html#^ship-date">Project Plan › ^ship-date</a>' in review
    assert (
        f'<a class="wikilink" href="Project%20Plan.html#{heading["block_id"]}">'
        "Project Plan › Open questions</a>" in review
    )
    top = block(conn, REVIEW, "heading", "^Review$")
    assert f'<a class="wikilink" href="Review.html#{top["block_id"]}">Review</a>' in review  # [[#Review]]
    dates = block(conn, REVIEW, "paragraph", "^Dates come from")
    assert "#" not in dates["text"].split("#planning")[0]  # labels, not raw `#`
    resolved = [
        r[0]
        for r in conn.execute(
            "SELECT target_path FROM evidence_link WHERE source_block_id = ? AND kind = 'wikilink'",
            [dates["block_id"]],
        )
    ]
    assert resolved == [PLAN] * 3  # heading link, block link, alias link: all the plan
    edges = conn.execute(
        "SELECT to_id FROM evidence_edge WHERE source_block_id = ? AND edge_type = 'markdown_links_to'",
        [dates["block_id"]],
    ).fetchall()
    assert [e[0] for e in edges] == [resource_id(PLAN)]  # one edge per (block, target)


def test_embeds_show_content_with_links_to_the_source(obsidian):
    _, out, conn, _, review = obsidian
    item = block(conn, PLAN, "list_item", "^Which pages need OCR")
    # the embedded blocks as on their own page (a list of items, a tag link), each linking its source block
    assert (
        f'<li class="embed-block"><a class="embed-source" title="open this block" '
        f'href="Project%20Plan.html#{item["block_id"]}">↗</a>Which pages need OCR? '
        '<a class="tag" href="../_tags/research.html">#research</a></li>'
    ) in review
    spec = block(conn, PLAN, "task", "Write the spec")
    assert re.search(
        r'<a class="embed-title" href="Project%20Plan.html#\^spec-task">Project Plan › \^spec-task</a>'
        r'<ul><li class="task-list-item embed-block"><a class="embed-source" title="open this block" '
        r'href="Project%20Plan.html#' + spec["block_id"] + r'">↗</a><input class="task-list-item-checkbox" '
        r'disabled="" type="checkbox" checked=""> Write the spec</li>',
        review,
    )
    assert f'id="{item["block_id"]}"' not in review and 'id="^spec-task"' not in review  # ids stay unique
    assert (
        '<a class="embed embed-image" href="../%E7%A0%94%E7%A9%B6/Rust%20%E5%B9%B6%E5%8F%91.assets/'
        'thread-scope.png.html"><img src="../%E7%A0%94%E7%A9%B6/Rust%20%E5%B9%B6%E5%8F%91.assets/'
        'thread-scope.png"'
    ) in review
    pdf = re.search(
        r'<a class="embed embed-pdf" href="([^"]+)"><img src="([^"]+)" alt="evidence-kernel-spec.pdf '
        r'› page 2"',
        review,
    )
    assert pdf and pdf.group(1).endswith("evidence-kernel-spec.pdf.html#page-2")
    image = (out / "Obsidian" / pdf.group(2)).resolve()
    assert image.name.startswith("p2.") and image.is_file()
    embed = review.split('<a class="embed-title" href="Project%20Plan.html#', 1)[1].split(
        "<!-- embed -->", 1
    )[0]
    assert (
        "Is <code>#not-a-tag</code> in code left alone?" in embed and "kickoff meeting" not in embed
    )  # its section
    # the embedding paragraph holds the label; the content stays indexed once, in its source
    assert block(conn, REVIEW, "paragraph", "^Project Plan › Open questions$")
    assert not [b for b in blocks(conn, REVIEW) if "Which pages need OCR" in b["text"]]


def test_broken_links_are_marked_and_reported(obsidian, site):
    root, out = site
    _, _, conn, _, review = obsidian
    assert review.count('<span class="missing-marker"> (missing)</span>') == 3
    report = run_build(root, out, site=True)  # nothing changed: the summary still names them
    broken = sorted(
        w["target"] for w in report.warnings if w["code"] == "broken_link" and w["path"] == REVIEW
    )
    assert broken == ["No Such Note", "Project Plan#No such heading", "Project Plan#^nope"]
    assert report.errors == [] or all(e["code"] != "broken_link" for e in report.errors)


def test_author_anchor_survives_an_edit(tmp_path):
    """`^id` keeps landing on its block when the text changes; the old content id aliases to it."""
    ws, out = tmp_path / "ws", tmp_path / "out"
    ws.mkdir()
    (ws / "A.md").write_text("# A\n\nThe first wording. ^keep\n\nOther text here.\n", "utf-8")
    (ws / "B.md").write_text("# B\n\nSee [[A#^keep]].\n", "utf-8")
    run_build(ws, out, site=True)
    conn = connect(out)
    old = block(conn, "A.md", "paragraph", "first wording")["block_id"]
    conn.close()
    (ws / "A.md").write_text(
        "# A\n\nA completely rewritten sentence, nothing alike. ^keep\n\nOther text here.\n", "utf-8"
    )
    report = run_build(ws, out, site=True)
    # A only: B links into it at ^keep, which still lands on its block, so B's page shows nothing new
    # (a page's key holds what it shows of its targets, here where the fragment lands)
    assert report.site.pages_written == 1
    assert report.site.tag_pages == 0  # the tag index's content did not change
    conn = connect(out)
    new = block(conn, "A.md", "paragraph", "rewritten")
    assert new["anchor"] == "keep" and new["block_id"] != old
    alias = conn.execute(
        "SELECT successor_block_id, similarity FROM evidence_anchor WHERE old_block_id = ?", [old]
    ).fetchone()
    assert tuple(alias) == (new["block_id"], 1.0)
    page = (out / "A.html").read_text("utf-8")
    assert re.search(
        f'<span class="alias" id="{old}"></span><span class="alias author-anchor" id="\\^keep"></span>'
        f'<p id="{new["block_id"]}"',
        page,
    )
    conn.close()


def test_provider_keeps_text_and_anchor_apart():
    text = "Para ^a1\n\n- item ^b2\n\n^only\n\n> [!note]\n"
    art = MarkdownProvider().parse_text("x.md", "sha256:" + "0" * 64, text)
    assert [(b.type, b.text, b.anchor) for b in art.blocks] == [
        ("paragraph", "Para", "a1"),
        ("list_item", "item", "b2"),
        ("paragraph", "^only", None),
        ("callout_title", "Note", None),
    ]


def test_unreferenced_footnote_is_kept_as_a_block():
    """mdit-py-plugins drops a footnote nobody references; its text must still be indexed and shown."""
    art = MarkdownProvider().parse_text(
        "x.md", "sha256:" + "0" * 64, "Text[^a].\n\n[^a]: used\n[^b]: orphan text\n"
    )
    assert [(b.type, b.text, b.note, b.line_range) for b in art.blocks] == [
        ("paragraph", "Text[1].", None, [1, 1]),
        ("footnote", "used", "footnote [1]", [3, 3]),
        ("footnote", "orphan text", "footnote [2]", [4, 4]),
    ]


def test_cli_reports_broken_links_and_strict_does_not_count_them(tmp_path):
    from click.testing import CliRunner

    from mnote_evidence.build.cli.main import main

    ws, out = tmp_path / "ws", tmp_path / "out"
    ws.mkdir()
    (ws / "A.md").write_text("# A\n\n## Real\n\nSee [[Gone]], [[A#Real]] and [[A#Unreal]].\n", "utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["build", str(ws), "--out", str(out), "--json", "--jobs", "1", "--strict"])
    assert result.exit_code == 0, result.output
    broken = [w for w in json.loads(result.stdout)["warnings"] if w["code"] == "broken_link"]
    assert [(w["path"], w["target"]) for w in broken] == [("A.md", "A#Unreal"), ("A.md", "Gone")]
    human = runner.invoke(main, ["build", str(ws), "--out", str(out), "--jobs", "1"])
    assert "warning A.md: [broken_link] wikilink 'Gone' finds nothing in the workspace" in human.output


@pytest.mark.parametrize(
    "text, tags",
    [
        ("x #a/ y", ["a"]),
        ("x #/a y", []),
        ("x #2026 y", []),
        ("x #2026-q1 y", ["2026-q1"]),
        ("(#in) x", ["in"]),
        ("a#b", []),
        ("\\#esc", []),
        ("# Heading", []),
        ("`#code` #real", ["real"]),
        ("see http://x.org/#frag", []),
    ],
)
def test_what_is_a_tag(text, tags):
    art = MarkdownProvider().parse_text("x.md", "sha256:" + "0" * 64, text)
    assert [link["target"] for b in art.blocks for link in b.links if link["kind"] == "tag"] == tags


def test_hostile_tags_get_safe_pages_inside_the_tags_folder(tmp_path):
    """Front matter takes any string as a tag: `..` parts, markup and spaces must neither write a page
    outside `_tags/` (or the site) nor give a file name a file system or static host refuses."""
    root, out = tmp_path / "ws", tmp_path / "site" / "out"
    root.mkdir()
    hostile = ["../../escaped", "<img src=x onerror=alert(1)>", "two words", "a//b"]
    (root / "Tagged.md").write_text(
        "---\ntags:\n"
        + "".join(f"  - {json.dumps(t)}\n" for t in hostile)
        + "---\n\n# Tagged\n\nBody #plain text.\n",
        "utf-8",
    )
    run_build(root, out, site=True)
    outside = [p for p in (tmp_path / "site").rglob("*") if out not in p.parents and p != out]
    assert outside == []
    pages = sorted(p.relative_to(out / "_tags").as_posix() for p in (out / "_tags").rglob("*.html"))
    assert "plain.html" in pages and len(pages) == len(hostile) + 2  # + the tags index
    assert all(re.fullmatch(r"[\w\-/.]+", p) and ".." not in p.split("/") for p in pages)
    note = (out / "Tagged.html").read_text("utf-8")
    for href in re.findall(r'<a class="tag" href="([^"]+)"', note):
        assert (out / href).resolve().is_file()  # every tag link opens its page
