"""The render's CPU cuts of a full build: each shortcut gives what the plain way gives, and does its
work the fewer times it claims (call counts), in the style of tests/test_edit_cost.py.

Real builds of the sample workspace (`built`: shared, read-only) with the site rendered.
"""

from __future__ import annotations

import sqlite3

import pytest

from mnote_evidence.build.core.ids import resource_id
from mnote_evidence.build.core.urls import page_path
from mnote_evidence.build.render import backlinks, copies, data, page_pool, site
from mnote_evidence.build.render import state as site_state
from mnote_evidence.build.render.backlinks import sentence_around


def _render_site(built) -> site._Site:
    workspace, out, _ = built
    return site._Site(workspace.resolve(), out, out / "evidence.sqlite", site.RenderOptions())


def _labels_of_note(conn: sqlite3.Connection, path: str) -> dict[tuple[str, str], list[str]]:
    """The way the labels were read before: every link of the linking note, once per note."""
    found: dict[tuple[str, str], list[str]] = {}
    for block_id, target_path, label in conn.execute(
        "SELECT source_block_id, target_path, label FROM evidence_link WHERE resource_id = ? "
        "AND target_path IS NOT NULL AND label IS NOT NULL ORDER BY rowid",
        [resource_id(path)],
    ):
        found.setdefault((block_id, target_path), []).append(label)
    return found


def test_backlink_sentences_read_per_page_equal_those_read_per_linking_note(built):
    s = _render_site(built)
    try:
        compared = marked = 0
        for res in s.resources:
            links = data.backlinks(s.conn, res.resource_id)
            for link, got in zip(links, s.sentences.snippets(links, res.path), strict=True):
                found = _labels_of_note(s.conn, link.from_path).get((link.block_id, res.path), [])
                assert got == sentence_around(link.text, next((w for w in found if w in link.text), "")), link
                compared += 1
                marked += bool(got.mark)
        assert compared >= 10 and marked >= 5  # the fixtures' backlinks, most with their words marked
    finally:
        s.conn.close()


def test_a_page_reads_its_backlinks_labels_with_one_query(built):
    s = _render_site(built)
    try:
        res = max(
            s.resources, key=lambda r: len({b.from_path for b in data.backlinks(s.conn, r.resource_id)})
        )
        links = data.backlinks(s.conn, res.resource_id)
        assert len({link.from_path for link in links}) >= 2  # linked from several notes
        queries: list[str] = []
        s.conn.set_trace_callback(queries.append)
        s.sentences.snippets(links, res.path)
        s.conn.set_trace_callback(None)
        assert len([q for q in queries if "evidence_link" in q]) == 1
        assert backlinks.Sentences(s.conn).snippets([], res.path) == []
    finally:
        s.conn.close()


def _salt(ask: bool = False) -> list:
    return site.page_salt(site_state.templates_hash(site._templates_dir(), {})[0], ask, {})


def test_a_page_keyed_where_it_is_rendered_has_the_page_and_key_of_the_two_done_apart(built):
    s = _render_site(built)
    try:
        assert len(s.resources) >= 10
        for res in s.resources:
            assert s.render_keyed(res, _salt()) == (
                s.render_resource(res),
                site._page_key(s, res, _salt()),
            ), res.path
    finally:
        s.conn.close()


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_first_render_records_the_keys_the_caller_would_have_computed(built, tmp_path, monkeypatch, jobs):
    workspace, out, _ = built
    monkeypatch.setattr(page_pool, "PAGES_FOR_POOL", 1)  # with jobs 2: every page in the (real) pool
    monkeypatch.setattr(page_pool, "PAGE_BATCH", 4)
    fresh = tmp_path / "site"
    report = site.render_site(workspace, fresh, out / "evidence.sqlite", site.RenderOptions(jobs=jobs))
    s = _render_site(built)
    try:
        pages = site_state.load(fresh)["pages"]
        assert report.pages_written == len(s.resources)
        for res in s.resources:
            assert site_state.entry_key(pages[page_path(res.path)]) == site._page_key(s, res, _salt()), (
                res.path
            )
    finally:
        s.conn.close()


def test_a_first_render_reads_each_pages_backlinks_once(built, tmp_path, monkeypatch):
    workspace, out, _ = built
    calls: list = []
    original = data.backlinks
    monkeypatch.setattr(data, "backlinks", lambda *a: calls.append(a) or original(*a))
    report = site.render_site(
        workspace, tmp_path / "site", out / "evidence.sqlite", site.RenderOptions(jobs=1)
    )
    assert report.pages_written >= 10
    assert len(calls) == len({a[1] for a in calls}) == report.pages_written  # key and page: one read


def test_source_copies_resolve_each_folder_once_and_never_leave_the_workspace(tmp_path, monkeypatch):
    from pathlib import Path

    root, out = (tmp_path / "ws").resolve(), tmp_path / "out"
    (root / "d").mkdir(parents=True)
    for name in ("a.pdf", "b.pdf", "c.pdf"):
        (root / "d" / name).write_bytes(name.encode())
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.pdf").write_bytes(b"secret")
    (root / "away").symlink_to(tmp_path / "outside")  # a folder leaving the workspace
    (root / "here").symlink_to(root / "d")  # a folder staying in it
    (root / "d" / "link.pdf").symlink_to(tmp_path / "outside" / "secret.pdf")
    resolved: list = []
    original = Path.resolve
    monkeypatch.setattr(Path, "resolve", lambda self, *a: resolved.append(self) or original(self, *a))
    folders = copies.Folders()
    for rel in ("d/a.pdf", "d/b.pdf", "d/c.pdf"):
        copies.copy_source(root, out, rel, folders)
        assert (out / rel).read_bytes() == (root / rel).read_bytes()
    assert len(resolved) == 1  # the folder, once
    for rel in ("away/secret.pdf", "d/link.pdf", "d/missing.pdf"):
        copies.copy_source(root, out, rel, folders)
        assert not (out / rel).exists(), rel
    copies.copy_source(root, out, "here/a.pdf", folders)
    assert (out / "here" / "a.pdf").read_bytes() == b"a.pdf"


def test_a_notes_map_gives_the_title_and_block_shape_of_its_artifact_and_builds_blocks_only_on_use(built):
    import json

    from mnote_evidence.build.parse.sidecars import artifact_from_source_map
    from mnote_evidence.build.render import note_map
    from mnote_evidence.build.render.note_programs import shape_of

    s = _render_site(built)
    try:
        notes = [r for r in s.resources if r.kind == "markdown" and r.status == "ok"]
        assert len(notes) >= 10
        for res in notes:
            doc = json.loads((s.root / res.source_map_path).read_text("utf-8"))
            full = artifact_from_source_map(doc, "")
            view = s._artifact(res)
            assert isinstance(view, note_map.NoteMap)
            assert (view.title, view.shape) == (full.title, shape_of(full.blocks)), res.path
            assert "blocks" not in vars(view)  # not built for the shape
            assert view.blocks == full.blocks
    finally:
        s.conn.close()


def test_a_first_render_builds_no_note_blocks_when_the_parse_left_every_program(built, tmp_path, monkeypatch):
    """The pages run the programs the parse left: no note's source map becomes `Block`s, no note is
    compiled."""
    from mnote_evidence.build.markdown.encoding import decode_note
    from mnote_evidence.build.render import note_map, note_programs, pages

    workspace, out, _ = built
    fresh = tmp_path / "site"
    fresh.mkdir()
    s = _render_site(built)
    try:
        for res in s.resources:
            if res.kind == "markdown" and res.status == "ok":
                text, _ = decode_note((s.root / res.path).read_bytes())
                note_programs.store_programs(
                    fresh / note_programs.PROGRAMS_DIR, [(text, s._artifact(res).blocks)]
                )
    finally:
        s.conn.close()
    built_blocks, compiled = [], []
    real = note_map.artifact_from_source_map
    monkeypatch.setattr(note_map, "artifact_from_source_map", lambda *a: built_blocks.append(a) or real(*a))
    monkeypatch.setattr(pages, "compile_note", lambda *a: compiled.append(a) or 1 / 0)
    report = site.render_site(workspace, fresh, out / "evidence.sqlite", site.RenderOptions(jobs=1))
    assert report.pages_written >= 10 and not report.problems
    assert built_blocks == [] and compiled == [], [a[0]["sourceRootRelativePath"] for a in built_blocks]
    for page in out.rglob("*.html"):  # the same pages as the build's own render
        rel = page.relative_to(out)
        if rel.parts[0] not in ("_static",):
            assert (fresh / rel).read_bytes() == page.read_bytes(), rel


def test_templates_read_a_dicts_items_as_jinja_does():
    env = site._environment()
    template = env.from_string("{{ d.url }}|{{ d.items is defined }}|{{ d.missing is defined }}|{{ o.url }}")

    class Obj:
        url = "attr"

    assert template.render(d={"url": "a&b", "items": "shadowed"}, o=Obj()) == "a&amp;b|True|False|attr"
    assert env.from_string("{{ d['items'] }}").render(d={"items": "x"}) == "x"
    assert env.from_string("{{ d.items() | list }}").render(d={"k": 1}) == "[(&#39;k&#39;, 1)]"


_PANEL_LOOP = (
    '{% for b in backlinks %}<li><a href="{{ b.url }}">{{ b.name }}</a>{% if b.folder %} '
    '<small class="muted">'
    "{{ b.folder }}</small>{% endif %}\n    <q>{{ b.sentence.before }}{% if b.sentence.mark %}<mark>"
    "{{ b.sentence.mark }}</mark>{% endif %}{{ b.sentence.after }}</q></li>{% endfor %}"
)


def test_backlinks_items_drawn_in_python_are_those_the_template_loop_drew(built):
    """`backlinks.items_html` replaced the panel's Jinja loop (`_PANEL_LOOP`, as it was): the same bytes."""
    env = site._environment()
    loop = env.from_string(_PANEL_LOOP)
    odd = [
        {
            "url": "a%20b.html#x",
            "name": 'A <b> & "c"',
            "folder": "",
            "text": "",
            "sentence": backlinks.Snippet("<i>before</i> ", "", ""),
        },
        {
            "url": "../d/e.html",
            "name": "E",
            "folder": "d/<f>",
            "text": "",
            "sentence": backlinks.Snippet("x ", "'mark'", " & after"),
        },
    ]
    assert backlinks.items_html(odd) == loop.render(backlinks=odd)
    s = _render_site(built)
    try:
        seen = 0
        for res in s.resources:
            ctx = s._resource_context(res, page_path(res.path), data.backlinks(s.conn, res.resource_id), [])
            assert ctx["backlinks_html"] == loop.render(backlinks=ctx["backlinks"]), res.path
            seen += len(ctx["backlinks"])
        assert seen >= 10
    finally:
        s.conn.close()
