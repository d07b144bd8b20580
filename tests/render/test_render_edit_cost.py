"""What a one-note edit's render does once, or not at all: counted calls and
equal outputs, in the style of tests/test_edit_cost.py.

Real builds of the sample workspace with the site rendered. The templates are hashed again only when
a template file changed (the state keeps their stat signature); the state keeps a resource page's key
as one string, and an edit writes only the entries changed over a base file (a state without its
base is no state; older states are read as before); a render with nothing to do reads no base; a
source copy resolves only the source's path; the front page reads its rows in one pass. Each
shortcut is compared with the way it replaced: the site (and the state) an edit leaves is what a
full render of the same index writes.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from mnote_evidence.build.core.urls import SEARCH_DIR
from mnote_evidence.build.render import copies, data, front, site
from mnote_evidence.build.render import state as site_state
from tests.conftest import run_build
from tests.render.test_search_index import search_contents
from tests.test_edit_cost import EDITED, _aged_build, _count, _edit  # the same edit as the build's cost tests


def _fresh_render(workspace: Path, out: Path, fresh: Path) -> dict[str, bytes]:
    """The site a full render of the index in `out` gives."""
    site.render_site(workspace, fresh, out / "evidence.sqlite")
    return _site_files(fresh)


def _site_files(out: Path) -> dict[str, bytes]:
    skip = {
        "evidence.sqlite",
        site.STATE_FILE,
        ".build.lock",
    }  # the build's state, not the site's
    files = {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name not in skip and ".mnote" not in p.relative_to(out).parts
    }
    # the search index by what it holds: an edit updates it in place, a full render copies it whole
    search = [name for name in files if name.startswith(f"{SEARCH_DIR}/")]
    for name in search:
        del files[name]
    if search:
        files[f"{SEARCH_DIR}/"] = repr(search_contents(out)).encode()
    return files


@pytest.fixture
def templates(tmp_path, monkeypatch) -> Path:
    """A copy of the site templates the renderer uses instead of the package's (tests change it)."""
    folder = tmp_path / "templates"
    shutil.copytree(site._templates_dir(), folder)
    monkeypatch.setattr(site, "_templates_dir", lambda: folder)
    return folder


def test_an_edit_hashes_no_template_and_a_changed_template_is_hashed_again(
    workspace, tmp_path, templates, monkeypatch
):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    hashed: list = []
    _count(monkeypatch, site_state, "content_hash", hashed)
    _edit(workspace)
    assert run_build(workspace, out, site=True).site.pages_written >= 1
    assert hashed == []  # the signature the state recorded still holds
    recorded = site._load_state(out)["templates"][1]
    assert recorded == _fresh_hash(templates)

    # a template edited in place, same size, its modification time put back: its change time moved
    tomb = templates / "tombstone.html"
    before = tomb.stat()
    text = tomb.read_text("utf-8")
    assert "removed" in text
    tomb.write_text(text.replace("removed", "REMOVED", 1), "utf-8")
    os.utime(tomb, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert tomb.stat().st_size == before.st_size and tomb.stat().st_mtime_ns == before.st_mtime_ns
    report = run_build(workspace, out, site=True)
    assert len(hashed) == 1
    assert site._load_state(out)["templates"][1] == _fresh_hash(templates) != recorded
    assert report.site.pages_unchanged == 0 and report.site.pages_written > 10  # the templates key every page

    # a template whose output changes: every page is written again, as a fresh build writes it
    base = templates / "base.html"
    base.write_text(
        base.read_text("utf-8").replace("</head>", '<meta name="x-test" content="1">\n</head>'), "utf-8"
    )
    report = run_build(workspace, out, site=True)
    assert len(hashed) == 2 and report.site.pages_unchanged == 0
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh")
    assert 'name="x-test"' in (out / "index.html").read_text("utf-8")


def test_the_templates_hash_is_not_taken_from_a_state_of_other_files(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "a.html").write_text("one", "utf-8")
    digest, signed = site_state.templates_hash(folder, {})
    assert digest == _fresh_hash(folder) and signed[1] == digest
    assert site_state.templates_hash(folder, {"templates": signed}) == (digest, signed)
    assert (
        site_state.templates_hash(folder, {"templates": [signed[0], "forged"]})[0] == "forged"
    )  # same files
    (folder / "b.html").write_text("two", "utf-8")  # a file added
    assert site_state.templates_hash(folder, {"templates": signed})[0] == _fresh_hash(folder) != digest
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)  # the same files elsewhere: another signature
    assert (
        site_state.templates_hash(moved, {"templates": site_state.templates_hash(folder, {})[1]})[1][0]
        != site_state.templates_hash(folder, {})[1][0]
    )
    for bad in ({"templates": "x"}, {"templates": [1]}, {"templates": [signed[0], 5]}):
        assert site_state.templates_hash(folder, bad)[0] == _fresh_hash(folder)


def _fresh_hash(folder: Path) -> str:
    """The hash as render_site computed it before the signature was kept (every file read)."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return h.hexdigest()[:16]


def test_a_deleted_site_is_rendered_whole_and_hashes_the_templates(workspace, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    hashed: list = []
    _count(monkeypatch, site_state, "content_hash", hashed)
    for path in out.iterdir():  # the user deletes the site, keeps the index
        if path.name != "evidence.sqlite":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    _edit(workspace)
    report = run_build(workspace, out, site=True)
    assert len(hashed) == 1 and report.site.pages_unchanged == 0
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh")


def test_the_state_keeps_a_page_key_as_a_string_and_removes_the_files_other_versions_left(
    workspace, tmp_path
):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    state = site._load_state(out)
    resource_pages = {p: e for p, e in state["pages"].items() if isinstance(e, str)}
    assert len(resource_pages) > 10
    conn = data.connect_ro(out / "evidence.sqlite")
    try:
        paths = {r.path for r in data.resources(conn)}
    finally:
        conn.close()
    assert {site_state.entry_source(e) for e in resource_pages.values()} == paths
    objects = [e for e in state["pages"].values() if isinstance(e, dict)]
    assert all(e.get("tag") or e.get("folder") for e in objects)  # a tag page or a folder page
    folders = {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}
    assert {e["folder"] for e in objects if e.get("folder")} == folders  # one per folder below the top
    hidden = {p.name for p in out.iterdir() if p.name.startswith(".")}
    assert hidden == {site.STATE_FILE, ".build.lock"}  # one state file (and the build's lock)
    for name in site_state.OTHER_STATE:
        (out / name).write_text("{}", "utf-8")
    _edit(workspace)
    run_build(workspace, out, site=True)
    assert {p.name for p in out.iterdir() if p.name.startswith(".")} == {site.STATE_FILE, ".build.lock"}


def _store_rows(out: Path) -> dict[str, tuple]:
    conn = sqlite3.connect(out / site.STATE_FILE)
    try:
        return {page: (entry, obj) for page, entry, obj in conn.execute("SELECT * FROM page")}
    finally:
        conn.close()


def test_an_edit_writes_the_changed_entries_and_a_full_render_reads_them_the_same(workspace, tmp_path):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    before = _store_rows(out)
    _edit(workspace)
    report = run_build(workspace, out, site=True)
    after = _store_rows(out)
    page = EDITED.replace(".md", ".html")
    changed = {p for p in after if before.get(p) != after[p]}
    assert page in changed and len(changed) <= report.site.pages_written + report.site.tag_pages + 1
    assert after.keys() == before.keys()
    merged = site._load_state(out)["pages"]
    fresh = tmp_path / "fresh"  # what a full render of the same index records, entry for entry
    site.render_site(workspace, fresh, out / "evidence.sqlite")
    assert site._load_state(fresh)["pages"] == merged
    (workspace / EDITED).unlink()
    run_build(workspace, out, site=True)
    run_build(workspace, out, site=True)  # the note's page: a tombstone
    assert site._load_state(out)["pages"][page] == {"key": "tombstone", "source": EDITED}


def test_an_unreadable_state_is_no_state(workspace, tmp_path):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    assert site._load_state(out)["pages"]
    store = out / site.STATE_FILE
    for broken in (b"", b"not a database" * 100, None):  # torn, not SQLite, gone
        store.unlink(missing_ok=True)
        if broken is not None:
            store.write_bytes(broken)
        assert site._load_state(out) == {}
    store.write_bytes(b"not a database" * 100)
    _edit(workspace)
    report = run_build(workspace, out, site=True)  # every page written again, as a full render writes it
    assert report.site.pages_unchanged == 0 and report.site.pages_written > 10
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh")
    assert site._load_state(out)["pages"] == site._load_state(tmp_path / "fresh")["pages"]


def test_a_removed_note_leaves_a_tombstone_in_the_state_and_the_site(workspace, tmp_path):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    (workspace / EDITED).unlink()
    run_build(workspace, out, site=True)  # stale
    report = run_build(workspace, out, site=True)  # removed
    page = EDITED.replace(".md", ".html")
    assert report.site.tombstones == 1
    entry = site._load_state(out)["pages"][page]
    assert entry == {"key": "tombstone", "source": EDITED}
    assert "was removed from the workspace" in (out / page).read_text("utf-8")
    assert run_build(workspace, out, site=True).site.tombstones == 0  # told once


def test_a_source_copy_resolves_the_source_alone_and_never_leaves_the_workspace(tmp_path, monkeypatch):
    root, out = (tmp_path / "ws").resolve(), tmp_path / "out"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.pdf").write_bytes(b"%PDF one")
    (tmp_path / "secret.pdf").write_bytes(b"secret")
    (root / "d" / "link.pdf").symlink_to(tmp_path / "secret.pdf")
    resolved: list = []
    _count(monkeypatch, Path, "resolve", resolved)
    copies.copy_source(root, out, "d/a.pdf")
    assert len(resolved) == 1 and (out / "d" / "a.pdf").read_bytes() == b"%PDF one"
    copied = (out / "d" / "a.pdf").stat().st_mtime_ns
    copies.copy_source(root, out, "d/a.pdf")  # unchanged: not copied again
    assert (out / "d" / "a.pdf").stat().st_mtime_ns == copied
    (root / "d" / "a.pdf").write_bytes(b"%PDF two, longer")
    copies.copy_source(root, out, "d/a.pdf")
    assert (out / "d" / "a.pdf").read_bytes() == b"%PDF two, longer"
    copies.copy_source(root, out, "d/link.pdf")
    copies.copy_source(root, out, "d/missing.pdf")
    assert not (out / "d" / "link.pdf").exists() and not (out / "d" / "missing.pdf").exists()


def test_the_front_pages_one_pass_lists_what_the_separate_passes_listed():
    statuses = ["ok", "error", "stale", "ok", "unsupported"]
    rows = [
        data.Resource.from_values(
            [
                f"id{i}",
                f"n/{i}.md",
                None,
                "markdown",
                statuses[i % 5],
                None,
                None,
                "",
                None,
                None,
                "E1" if i % 5 == 1 else None,
                "bad" if i % 5 == 1 else None,
                None,
                0,
                json.dumps([{"code": "w", "message": str(i)}] * (i % 3)),
                i,
                None,
                None,
                None,
                None,
            ]
        )
        for i in range(40)
    ]
    ctx = front.FrontPage.of(rows, lambda note: None, False).context()
    assert ctx["errors"] == [{"res": r, "url": f"n/{r.path[2:-3]}.html"} for r in rows if r.status == "error"]
    assert ctx["warnings"] == [(r, w) for r in rows for w in r.warnings] and len(ctx["warnings"]) > 10
    assert ctx["stale"] == [r for r in rows if r.status == "stale"]
    counts: dict = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    assert ctx["counts"] == counts and list(ctx["counts"]) == list(counts)


def test_a_tag_entry_changed_in_place_is_saved(tmp_path):
    """`tag_pages.write` sets the tag index's `counts` on its entry: what was read keeps its own copy."""
    out = tmp_path / "out"
    out.mkdir()
    pages = {
        "a.html": site_state.page_entry("k1", "a.md"),
        "_tags/index.html": {"key": "t", "source": None, "tag": True, "counts": {"x": 1}},
    }
    site_state.save(out, {"stamp": [1]}, pages, {})
    loaded = site_state.load(out)
    tags = site_state.tag_entries(loaded["pages"])
    tags["_tags/index.html"]["counts"] = {"x": 2}
    site_state.merge_tags(loaded["pages"], set(tags), tags)
    site_state.save(out, {"stamp": [2]}, loaded["pages"], loaded)
    again = site_state.load(out)
    assert again["pages"]["_tags/index.html"]["counts"] == {"x": 2} and again["stamp"] == [2]
    entry, is_object = _store_rows(out)["_tags/index.html"]
    assert is_object and json.loads(entry) == {"key": "t", "source": None, "tag": True, "counts": {"x": 2}}


def test_a_render_with_nothing_to_do_reads_no_page_entry(workspace, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    read: list = []
    _count(monkeypatch, site_state, "with_pages", read)
    report = run_build(workspace, out, site=True)  # a no-op
    assert report.site.pages_written == 0 and report.site.pages_unchanged > 10
    assert read == []
    _edit(workspace)
    run_build(workspace, out, site=True)
    assert len(read) == 1


def test_an_edits_note_page_runs_the_program_its_parse_left(workspace, tmp_path, monkeypatch):
    """The edited note's page reads of its source map the title and block shape: no `Block`s built from it,
    no compile in the render (the parse compiled the note where it parsed it)."""
    from mnote_evidence.build.render import note_map, pages

    out = tmp_path / "out"
    _aged_build(workspace, out)
    _edit(workspace)
    built, compiled = [], []
    real_blocks, real_compile = note_map.artifact_from_source_map, pages.compile_note
    monkeypatch.setattr(note_map, "artifact_from_source_map", lambda *a: built.append(a) or real_blocks(*a))
    monkeypatch.setattr(pages, "compile_note", lambda *a: compiled.append(a) or real_compile(*a))
    report = run_build(workspace, out, site=True)
    assert report.site.pages_written >= 1 and not report.site.problems
    assert built == [] and compiled == []
    monkeypatch.undo()
    assert _site_files(out) == _fresh_render(workspace, out, tmp_path / "fresh")
