"""Work a one-note edit's render skips because its inputs did not change: counted calls and equal
outputs, in the style of tests/render/test_render_edit_cost.py.

A page whose resource row changed (its page fields: an edited note's source hash) gets another key
whatever its backlinks, so it is keyed where it is drawn, its backlinks read once; the front page's tree
key is the one the state recorded when no row of the tree changed; the tree's HTML is put into the front
page after the template. Each is compared with a full render of the same index.
"""

from __future__ import annotations

import html
import json

from markupsafe import Markup

from mnote_evidence.build.core.ids import resource_id
from mnote_evidence.build.render import data, front, site
from mnote_evidence.build.render import state as site_state
from mnote_evidence.build.render.templates import environment
from tests.conftest import run_build
from tests.render.test_render_edit_cost import _fresh_render, _site_files
from tests.test_edit_cost import EDITED, _aged_build, _count, _edit


def test_an_edited_notes_page_reads_its_backlinks_once_and_the_site_is_a_full_renders(
    workspace, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    _edit(workspace)
    read: list = []
    _count(monkeypatch, data, "backlinks", read)
    report = run_build(workspace, out, site=True).site
    ids = [args[1] for args in read]
    # read once: the rows that key the page also draw it
    assert report.pages_written >= 1 and ids.count(resource_id(EDITED)) == 1, ids
    monkeypatch.undo()
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh")
    assert site._load_state(tmp_path / "fresh")["pages"] == site._load_state(out)["pages"]


def test_an_edit_takes_the_recorded_tree_key_and_an_added_file_computes_it(workspace, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    recorded = site_state.load_head(out)["tree"]
    _edit(workspace)
    made: list = []
    of = front.FrontPage.of.__func__

    def spy(cls, *args, **kwargs):
        page = of(cls, *args, **kwargs)
        made.append(page)
        return page

    monkeypatch.setattr(front.FrontPage, "of", classmethod(spy))
    run_build(workspace, out, site=True)
    assert made[-1].known_tree_key == recorded  # not the 10,000-row join
    computed = front.FrontPage(made[-1].resources, None, None, False).tree_key()
    assert computed == recorded == site_state.load_head(out)["tree"]
    (workspace / "Added.md").write_text("# Added\n", "utf-8")
    run_build(workspace, out, site=True)
    assert made[-1].known_tree_key is None and site_state.load_head(out)["tree"] != recorded
    monkeypatch.undo()
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh")


def test_same_tree_looks_at_the_rows_read_again_and_the_count():
    def row(path, status="ok", error=None, title=None, source_hash="h"):
        return data.Resource.from_values(
            [
                f"id-{path}",
                path,
                None,
                "markdown",
                status,
                None,
                None,
                source_hash,
                None,
                None,
                error,
                None,
                None,
                0,
                "[]",
                1,
                title,
                None,
                None,
                None,
            ]
        )

    before = {p: row(p) for p in ("a.md", "b.md")}
    now = dict(before) | {"a.md": row("a.md", source_hash="edited")}
    assert front.same_tree(2, {"a.md": before["a.md"]}, now)  # an edited body is not in the tree
    assert not front.same_tree(  # the tree names each file by its title
        2, {"a.md": before["a.md"]}, now | {"a.md": row("a.md", title="New title")}
    )
    assert not front.same_tree(
        2, {"a.md": before["a.md"]}, now | {"a.md": row("a.md", status="error", error="x")}
    )
    assert not front.same_tree(2, {"c.md": None}, now | {"c.md": row("c.md")})  # added
    assert not front.same_tree(2, {}, {"a.md": before["a.md"]})  # removed
    assert not front.same_tree(2, None, now)  # no build's rows: every row read


def test_the_tree_goes_into_the_front_page_where_the_template_would_put_it():
    env = environment(site._templates_dir())
    template = env.get_template("index.html")
    tree = '<ul class="tree"><li>a &amp; b</li></ul>' * 50
    base = {
        "title": "ws",
        "page": "index.html",
        "crumbs": [],
        "file_name": None,
        "explorer": None,  # the front page's tree is its explorer
        "static": "_static",
        "home": "index.html",
        "ask_url": None,
        "workspace": "ws",
        "csp": "",
        "recent": [],
        "last_change": "",
        "errors": [],
        "warnings": [],
        "stale": [],
        "counts": {"ok": 1},
        "home_note": None,
        "tags_url": "t",
        "mentions_url": "m",
        "body": None,
    }
    for ctx in (
        base,
        base | {"body": Markup("<p>home</p>"), "home_note": {"path": "README.md", "url": "R"}},
        base | {"body": Markup(f"<p>{site._TREE_MARK}</p>"), "home_note": {"path": "README.md", "url": "R"}},
    ):
        assert site._with_tree(template, ctx, tree) == template.render(ctx | {"tree_html": Markup(tree)})


def _dirty(out) -> dict:
    conn = data.connect_ro(out / "evidence.sqlite")
    try:
        return json.loads(
            conn.execute("SELECT value FROM build_meta WHERE key = 'render_dirty'").fetchone()[0]
        )
    finally:
        conn.close()


def test_a_paragraph_appended_leaves_the_pages_and_tags_its_note_links_to_and_a_changed_link_block_does_not(
    workspace, tmp_path
):
    """Linking.md links to Linked.md (whose backlink quotes the linking block) and carries a tag: appending a
    paragraph changes neither, so neither page is looked at again; changing the linking block (or the
    tagged one, or the note's title) looks at both again, and the site is always what a full render of
    the index writes."""
    out, note = tmp_path / "out", workspace / "Linking.md"
    note.write_text("# Linking\n\nSee [[Linked]] for more.\n\nTagged #linking-tag here.\n", "utf-8")
    (workspace / "Linked.md").write_text("# Linked\n\nNothing links from here.\n", "utf-8")
    _aged_build(workspace, out)
    note.write_text(note.read_text("utf-8") + "\nAn appended paragraph.\n", "utf-8")
    run_build(workspace, out, site=True)
    assert _dirty(out) == {
        "since": _dirty(out)["since"],
        "resources": ["Linking.md"],
        "tags": [],
        "mentions": [],
    }
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh1")
    note.write_text(note.read_text("utf-8").replace("for more", "for much more"), "utf-8")
    run_build(workspace, out, site=True)
    assert _dirty(out)["resources"] == ["Linked.md", "Linking.md"]  # (and its tags: a note is quiet or not)
    assert "for much more" in (out / "Linked.html").read_text("utf-8")
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh2")
    note.write_text(
        note.read_text("utf-8").replace("Tagged #linking-tag here", "Tagged #linking-tag there"), "utf-8"
    )
    run_build(workspace, out, site=True)
    assert _dirty(out)["tags"] == ["linking-tag"]
    assert "there" in (out / "_tags/linking-tag.html").read_text("utf-8")
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh3")
    (workspace / "Linked.md").write_text(
        "---\ntitle: Linked, titled\n---\n# Linked\n", "utf-8"
    )  # the target's
    note.write_text(
        note.read_text("utf-8").replace("# Linking", "---\ntitle: A new title\n---\n# Linking"), "utf-8"
    )
    run_build(workspace, out, site=True)  # a new title: shown by the backlink and the tag page
    assert {"Linked.md", "Linking.md"} <= set(_dirty(out)["resources"]) and _dirty(out)["tags"] == [
        "linking-tag"
    ]
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh4")


def test_notes_linking_to_an_edited_note_are_looked_at_again_when_they_embed_it_or_name_a_fragment(
    workspace, tmp_path
):
    out, target = tmp_path / "out", workspace / "Target.md"
    target.write_text("# Target\n\n## Part\n\nThe part's text.\n", "utf-8")
    for name, link in [
        ("Plain", "[[Target]]"),
        ("Embeds", "![[Target]]"),
        ("Fragment", "[[Target#Part]]"),
        ("Markdown", "[target](Target.md)"),
    ]:
        (workspace / f"{name}.md").write_text(f"# {name}\n\nSee {link} here.\n", "utf-8")
    _aged_build(workspace, out)
    target.write_text(target.read_text("utf-8").replace("The part's text.", "The part's new text."), "utf-8")
    run_build(workspace, out, site=True)
    assert _dirty(out)["resources"] == ["Embeds.md", "Fragment.md", "Target.md"]  # not Plain, not Markdown
    # the embed draws the part's text by the note's own rules (an apostrophe as itself or escaped)
    assert "The part's new text." in html.unescape((out / "Embeds.html").read_text("utf-8"))
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh1")
    target.write_text(target.read_text("utf-8").replace("## Part", "## Renamed"), "utf-8")
    run_build(workspace, out, site=True)  # the fragment now finds nothing: a broken link on Fragment's page
    assert "broken-link" in (out / "Fragment.html").read_text("utf-8")
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh2")
