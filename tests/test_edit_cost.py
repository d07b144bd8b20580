"""A one-note edit does its work once: counted calls, not timers.

Real builds of the sample workspace with the site rendered. An edit reads the resource rows once
(the renderer takes the build's rows and re-reads only those written), builds one link resolver,
parses the edited note once (the provider's tokens go to the renderer), reuses the recorded path
collisions, and a small batch of files is fsynced file by file instead of a `syncfs` of the whole
file system. Each count would fail if the double work came back; the results are compared with a
fresh read of the index, so the shortcuts change nothing. An edit counts only its own tags again
(the others' counts are kept in the site state), its pages need no list of every page when the
paths are the ones the last render had, the front page sorts its recent changes once, and a file's
provider version is looked up once per suffix, its library's version without importing
`importlib.metadata`.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import posixpath
import sys
import time
from importlib.metadata import PackageNotFoundError, version

import pytest

from mnote_evidence.build import pipeline
from mnote_evidence.build.core import fsutil, model
from mnote_evidence.build.index import previous
from mnote_evidence.build.markdown import syntax as markdown_syntax
from mnote_evidence.build.parse import libraries
from mnote_evidence.build.render import data, front, site, tag_pages
from mnote_evidence.build.workspace import links
from tests.conftest import run_build

DAY_AGO = time.time() - 86400
EDITED = "Projects/Meeting Notes/Kickoff.md"


def _aged_build(workspace, out):
    for path in workspace.rglob("*"):
        if path.is_file():
            os.utime(path, (DAY_AGO, DAY_AGO))
    return run_build(workspace, out, site=True)


def _edit(workspace, rel: str = EDITED) -> str:
    note = workspace / rel
    text = note.read_text("utf-8") + "\nOne more paragraph, appended by the edit.\n"
    note.write_text(text, "utf-8")
    return text


def _count(monkeypatch, owner, name: str, calls: list) -> None:
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def test_an_edit_reads_the_resource_rows_once_and_renders_from_the_same_rows(
    workspace, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    total = len(previous.load_previous(out / "evidence.sqlite").resources)
    _edit(workspace)
    read: list = []
    _count(monkeypatch, model.ResourceRow, "from_values", read)
    _count(monkeypatch, model.ResourceRow, "from_sql", read)
    seen: list = []
    init = site._Site.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        seen.append(list(self.resources))

    monkeypatch.setattr(site._Site, "__init__", spy)
    report = run_build(workspace, out, site=True)
    assert report.parsed == 1 and report.site.pages_written >= 1
    assert total < len(read) <= total + 5, (total, len(read))  # once, plus the few rows the edit wrote
    conn = data.connect_ro(out / "evidence.sqlite")
    try:
        assert seen == [data.resources(conn)]  # what a fresh read of the whole table gives
    finally:
        conn.close()


def test_an_edit_builds_one_link_resolver(workspace, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    _edit(workspace)
    built: list = []
    _count(monkeypatch, links.LinkResolver, "__init__", built)
    run_build(workspace, out, site=True)
    assert len(built) == 1


def test_an_edit_resolves_links_as_a_full_build(workspace, tmp_path):
    """An edit that adds links (by name, by file name, to nothing) stores the link rows a fresh build
    of the same workspace stores."""
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    _aged_build(workspace, out)
    with open(workspace / EDITED, "a", encoding="utf-8") as f:
        f.write("\nSee [[Kickoff]], [[kickoff.md]] and [[nowhere]].\n")
    run_build(workspace, out, site=True)
    run_build(workspace, fresh, site=False)
    rows = (
        "SELECT resource_id, source_block_id, target, kind, target_path, problem, label "
        "FROM evidence_link ORDER BY 1, 2, 3, 4"
    )
    conns = [data.connect_ro(o / "evidence.sqlite") for o in (out, fresh)]
    try:
        assert [list(map(tuple, c.execute(rows))) for c in conns][0] == [
            list(map(tuple, c.execute(rows))) for c in conns
        ][1]
    finally:
        for c in conns:
            c.close()


def test_an_edit_asks_the_notes_provider_version_once(workspace, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    _edit(workspace)
    asked: list = []
    _count(monkeypatch, pipeline._Build, "_version", asked)
    report = run_build(workspace, out, site=True)
    notes = [args[1] for args in asked if model.suffix_of(args[1]) in model.NOTE_SUFFIXES]
    assert report.parsed == 1 and len(notes) == 1, notes  # not once per note of the workspace
    assert report.unchanged > 5


def test_the_renderer_builds_its_own_resolver_when_the_paths_differ():
    built = links.LinkResolver({"a.md", "b.md"}, {"x": "a.md"})
    assert site._resolver({"a.md", "b.md"}, {"x": "a.md", "y": "gone.md"}, built) is built
    assert site._resolver({"a.md", "b.md", "c.md"}, {"x": "a.md"}, built) is not built
    assert site._resolver({"a.md", "b.md"}, {"x": "b.md"}, built) is not built


def test_an_edited_note_is_parsed_once(workspace, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    text = _edit(workspace)
    monkeypatch.setattr(markdown_syntax, "_kept", {})  # what other tests' builds left in this process
    parsed: list = []
    _count(monkeypatch, markdown_syntax.MarkdownIt, "parse", parsed)
    report = run_build(workspace, out, site=True)
    assert report.parsed == 1 and report.site.pages_written >= 1
    assert [args[1] for args in parsed].count(text) == 1
    assert "One more paragraph" in (out / EDITED.replace(".md", ".html")).read_text("utf-8")
    assert text not in markdown_syntax._kept  # handed to the renderer, not left behind


def test_kept_tokens_are_bounded_and_handed_out_once(monkeypatch):
    monkeypatch.setattr(markdown_syntax, "_kept", {})
    first = markdown_syntax.markdown_parser().parse("# one\n")
    markdown_syntax.keep_parsed("# one\n", first, [0])
    assert markdown_syntax.parse_note("# one\n") == (first, [0])
    again, starts = markdown_syntax.parse_note("# one\n")  # taken: parsed again, its blocks unknown
    assert again is not first and starts is None
    for i in range(markdown_syntax.KEEP_PARSED + 5):
        markdown_syntax.keep_parsed(f"# {i}\n", first, [0])
    assert len(markdown_syntax._kept) == markdown_syntax.KEEP_PARSED


def test_an_edit_reuses_the_recorded_collisions_and_an_added_file_checks_again(
    workspace, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    full = _aged_build(workspace, out)
    checked: list = []
    _count(monkeypatch, site._Site, "_collisions", checked)
    _edit(workspace)
    edited = run_build(workspace, out, site=True)
    assert checked == [] and edited.site.problems == full.site.problems
    (workspace / "index.md").write_text("# A reserved name\n", "utf-8")  # its page moves: reported
    added = run_build(workspace, out, site=True)
    assert len(checked) == 1
    assert [p["code"] for p in added.site.problems if p["path"] == "index.md"] == ["reserved_name"]


def test_a_small_batch_fsyncs_its_files_and_a_large_one_syncs_the_file_system(tmp_path, monkeypatch):
    syncfs: list = []
    fsyncs: list = []
    monkeypatch.setattr(fsutil, "_syncfs_ok", lambda path: syncfs.append(path) or True)
    real_fsync = os.fsync
    monkeypatch.setattr(fsutil.os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))
    with fsutil.durable_batch():
        fsutil.atomic_write_text(tmp_path / "page.html", "page")
        fsutil.atomic_write_text(tmp_path / "d" / "sidecar.json", "{}")
    assert syncfs == [] and len(fsyncs) == 4  # two files, then their two folders
    assert (tmp_path / "page.html").read_text() == "page"
    if fsutil._syncfs() is None:
        pytest.skip("no syncfs(2) here: every batch fsyncs its files")
    fsyncs.clear()
    with fsutil.durable_batch():
        for i in range(fsutil.FSYNC_EACH_MAX + 1):
            fsutil.atomic_write_text(tmp_path / f"{i}.txt", str(i))
    assert syncfs and len(fsyncs) == 1  # the files: one syncfs; their one folder: an fsync


@pytest.mark.parametrize(
    "path",
    [
        "a",
        "a.md",
        ".a",
        "..a",
        ".a.b",
        "a.",
        "a..",
        "a.b.c",
        "x/.y.pdf",
        "x.d/y",
        "x.d/.y",
        "..",
        ".",
        "a/..md",
        "x/y.PDF",
        "",
        "a/b.",
        "ab/.",
        "a.b/",
        "研究/化学.docx",
    ],
)
def test_suffix_of_is_splitext(path):
    assert model.suffix_of(path) == posixpath.splitext(path)[1]


REVIEW = "Obsidian/Review.md"  # tagged #planning, as is Project Plan.md


def _tag_files(out) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted((out / "_tags").rglob("*.html"))}


def test_an_edit_counts_only_its_own_tags_and_the_tag_pages_are_as_a_fresh_build_writes_them(
    workspace, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    _aged_build(workspace, out)
    counted: list = []
    _count(monkeypatch, tag_pages, "tag_counts", counted)
    _edit(workspace, REVIEW)  # its tag stays: the #planning page is keyed again, nothing is counted over all
    assert run_build(workspace, out, site=True).parsed == 1
    assert counted == []
    note = workspace / REVIEW  # a tag added, one removed (#planning stays on Project Plan.md)
    note.write_text(note.read_text("utf-8").replace("#planning", "#Hazard-Log #hazard-log"), "utf-8")
    assert run_build(workspace, out, site=True).site.tag_pages >= 2
    assert counted == []
    fresh = tmp_path / "fresh"
    run_build(workspace, fresh, site=True)
    assert len(counted) == 2  # a first render counts every tag and every mentioned entity
    assert _tag_files(out) == _tag_files(fresh)
    assert "_tags/hazard-log.html" in _tag_files(out)
    conn = data.connect_ro(out / "evidence.sqlite")
    try:
        state = site._load_state(out)
        assert state["pages"]["_tags/index.html"]["counts"] == tag_pages.tag_counts(conn)
    finally:
        conn.close()


def test_an_edit_with_the_same_paths_lists_no_page_and_a_removed_note_leaves_a_tombstone(
    workspace, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    full = _aged_build(workspace, out)
    _edit(workspace)
    edited = run_build(workspace, out, site=True)
    assert edited.site.pages_written >= 1 and edited.site.tombstones == 0
    assert edited.site.pages_written < full.site.pages_written + full.site.pages_unchanged  # the edited only
    (workspace / EDITED).unlink()
    assert run_build(workspace, out, site=True).site.tombstones == 0  # stale: its page says so
    assert run_build(workspace, out, site=True).site.tombstones == 1  # removed: the path is gone
    assert "tombstone" in site._load_state(out)["pages"][EDITED.replace(".md", ".html")]["key"]


def test_recent_changes_are_the_first_of_the_sorted_rows(monkeypatch):
    rows = [
        data.Resource.from_values(
            [
                f"id{i}",
                f"n/{i % 7}-{i}.md",
                None,
                "markdown" if i % 3 else "pdf",
                "stale" if i % 11 == 0 else "ok",
                None,
                None,
                "",
                None,
                None,
                None,
                None,
                None,
                0,
                "[]",
                i % 5,
                None,
                None,
                None,
                None,
            ]
        )
        for i in range(60)
    ]
    live = [r for r in rows if r.status != "stale"]
    assert (
        front.recent(rows) == sorted(live, key=lambda r: (-r.updated_at_ms, r.kind != "markdown", r.path))[:8]
    )
    page = front.FrontPage(rows, None, None, False)
    sorts: list = []
    _count(monkeypatch, front, "recent", sorts)
    page.key([]), page.context(), page.key([])
    assert len(sorts) == 1


@pytest.mark.parametrize(
    "name", ["pymupdf", "PyMuPDF", "python-docx", "python_docx", "pillow", "markdown-it-py"]
)
def test_a_library_version_is_what_importlib_metadata_says(name):
    assert libraries._dist_info_version(name) == version(name)


def test_a_library_version_asks_importlib_metadata_unless_one_dist_info_answers(tmp_path, monkeypatch):
    for folder, metadata in [
        ("a_lib-1.0.dist-info", "Name: a-lib\nVersion: 1.0\n\nVersion: 9\n"),
        ("b_lib-2.0.egg-info", None),
        ("c_lib-1.dist-info", ""),
        ("c_lib-2.dist-info", ""),
    ]:
        (tmp_path / folder).mkdir()
        if metadata is not None:
            (tmp_path / folder / "METADATA").write_text(metadata)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "absent"), str(tmp_path)])
    assert libraries._dist_info_version("A.Lib") == "1.0"
    assert libraries._dist_info_version("b-lib") is None  # an .egg-info: importlib.metadata reads it
    assert libraries._dist_info_version("c-lib") is None  # two of them: importlib.metadata picks
    assert libraries._dist_info_version("d-lib") is None
    with pytest.raises(PackageNotFoundError):
        libraries.library_version.__wrapped__("d-lib")


# -- what an edit does over every file or row: only what changed ----------------------------------


def _report(r) -> tuple:
    return r.status_counts, r.errors, r.warnings


def _warnings_by_separate_scans(out) -> list[dict[str, str]]:
    """The summary's warnings as they were read before one scan served both link warnings."""
    import json

    from mnote_evidence.build.index.link_targets import LinkTargets, split_target

    conn = data.connect_ro(out / "evidence.sqlite")
    try:
        warnings = [
            {"path": p, **w}
            for p, ws in conn.execute(
                "SELECT source_root_relative_path, warnings_json FROM evidence_resource "
                "WHERE warnings_json != '[]' ORDER BY 1"
            )
            for w in json.loads(ws)
        ]
        warnings += [
            {
                "path": p,
                "code": "link_outside_root",
                "message": f"link '{t}' leaves the workspace; it was not followed",
            }
            for p, t in conn.execute(
                "SELECT r.source_root_relative_path, l.target FROM evidence_link l "
                "JOIN evidence_resource r USING (resource_id) WHERE l.problem = 'outside_root' ORDER BY 1, 2"
            )
        ]
        targets = LinkTargets(conn)
        for path, target, kind, target_path, problem in conn.execute(
            "SELECT r.source_root_relative_path, l.target, l.kind, l.target_path, l.problem "
            "FROM evidence_link l JOIN evidence_resource r USING (resource_id) "
            "WHERE l.problem = 'missing' OR (l.kind IN ('wikilink', 'embed') AND l.target LIKE '%#%') "
            "ORDER BY 1, 2"
        ):
            if problem == "missing":
                warnings.append(
                    {
                        "path": path,
                        "code": "broken_link",
                        "target": target,
                        "message": f"{kind} '{target}' finds nothing in the workspace",
                    }
                )
                continue
            name, fragment = split_target(target)
            target_path = target_path or (None if name else path)
            if target_path and fragment and targets.anchor(target_path, fragment) is None:
                warnings.append(
                    {
                        "path": path,
                        "code": "broken_link",
                        "target": target,
                        "message": f"{kind} '{target}': {target_path} has no '#{fragment}'",
                    }
                )
        return warnings
    finally:
        conn.close()


def test_the_report_after_each_edit_is_a_fresh_builds_and_reads_the_link_rows_once(
    workspace, tmp_path, monkeypatch
):
    """The summary's link warnings come from one scan of evidence_link (not one per warning kind), and
    every edit that changes them (a broken link added, fixed, a file deleted, a new error) reports what a
    fresh build of the same files reports."""
    from mnote_evidence.build.index.link_targets import LinkTargets

    out = tmp_path / "out"
    _aged_build(workspace, out)
    scans: list = []
    _count(monkeypatch, LinkTargets, "report_links", scans)
    note = workspace / EDITED
    steps = [
        lambda: note.write_text(
            note.read_text("utf-8") + "\nSee [[Nowhere At All]] and [[README#No Such Heading]].\n"
            "And [up](../../../etc/passwd).\n",
            "utf-8",
        ),
        lambda: note.write_text(note.read_text("utf-8").replace("[[Nowhere At All]]", "[[README]]"), "utf-8"),
        lambda: (workspace / "README.md").unlink(),
        lambda: (workspace / "Inbox" / "broken.pdf").write_bytes(b"%PDF-1.4 not really"),
        lambda: (workspace / "Inbox" / "broken.pdf").unlink(),
    ]
    for i, step in enumerate(steps):
        step()
        scans.clear()
        edited = run_build(workspace, out)
        assert len(scans) == 1
        assert edited.warnings == _warnings_by_separate_scans(out), i
        if i not in (2, 4):  # (a deleted file's row stays `stale` for one build: a fresh build has none)
            fresh = run_build(workspace, tmp_path / f"fresh{i}")
            assert _report(edited) == _report(fresh), i
    codes = [w["code"] for w in run_build(workspace, out).warnings if w["path"] == EDITED]
    assert "broken_link" in codes and "link_outside_root" in codes


def test_the_renderer_takes_the_builds_alias_map_and_it_is_the_indexs(workspace, tmp_path, monkeypatch):
    """The alias map the build hands the renderer is the one a scan of the written link rows gives,
    after an edit that adds an alias and one that removes the note holding others."""
    from mnote_evidence.build.workspace.links import alias_map

    out = tmp_path / "out"
    _aged_build(workspace, out)
    given: list = []
    init = site._Site.__init__

    def spy(self, root, out_, db_path, options, from_build=None, state=None):
        given.append(from_build.aliases if from_build else None)
        init(self, root, out_, db_path, options, from_build, state)

    monkeypatch.setattr(site._Site, "__init__", spy)
    scanned: list = []
    _count(monkeypatch, site, "alias_map", scanned)
    plan = workspace / "Obsidian" / "Project Plan.md"
    for step in (
        lambda: plan.write_text(
            plan.read_text("utf-8").replace("The Plan]", "The Plan, Blueprint]"), "utf-8"
        ),
        lambda: plan.unlink(),
        lambda: None,
    ):
        step()
        given.clear()
        run_build(workspace, out, site=True)
        conn = data.connect_ro(out / "evidence.sqlite")
        try:
            written = alias_map(
                conn.execute(
                    "SELECT r.source_root_relative_path, l.target FROM evidence_link l "
                    "JOIN evidence_resource r USING (resource_id) WHERE l.kind = 'alias'"
                )
            )
        finally:
            conn.close()
        assert given == [written]
    assert scanned == []
    assert "blueprint" not in given[0]


def test_a_build_freezes_what_it_imported_and_the_previous_rows_and_thaws_them(
    workspace, tmp_path, monkeypatch
):
    import gc

    from mnote_evidence.build import pipeline

    out = tmp_path / "out"
    _aged_build(workspace, out)
    frozen: list = []
    load = pipeline.load_previous

    def spy(db_path):
        frozen.append(gc.get_freeze_count())
        return load(db_path)

    monkeypatch.setattr(pipeline, "load_previous", spy)
    _edit(workspace)
    run_build(workspace, out, tune_gc=True)
    assert frozen and frozen[0] > 0
    assert gc.get_freeze_count() == 0


def test_a_library_build_leaves_the_garbage_collector_as_it_found_it(workspace, tmp_path):
    """Without `tune_gc` (the library's default) the build never freezes or switches off the GC."""
    import gc

    seen: list = []
    report = run_build(
        workspace,
        tmp_path / "out",
        on_progress=lambda event: seen.append((gc.isenabled(), gc.get_freeze_count())),
    )
    assert report.parsed > 0 and seen
    assert set(seen) == {(True, 0)} and gc.isenabled() and gc.get_freeze_count() == 0


def test_stamps_look_only_at_files_the_scan_hashed_or_does_not_trust(workspace, tmp_path):
    from mnote_evidence.build import pipeline
    from mnote_evidence.build.workspace.scan import scan

    out = tmp_path / "out"
    _aged_build(workspace, out)
    run = pipeline._Build(workspace.resolve(), pipeline.BuildOptions(out=out))
    known = run.prev.resources
    (workspace / EDITED).touch()  # same bytes, a new (too recent) stamp
    files = scan(workspace, exclude=[out], known=known)

    class Counting(dict):
        asked: list = []

        def get(self, key, default=None):
            self.asked.append(key)
            return super().get(key, default)

    run.prev.resources = Counting(run.prev.resources)
    run.stamps(files)
    looked = [f.path for f in files if f.hashed or f.stamp is None]
    assert Counting.asked == looked and EDITED in looked and len(looked) < len(files) / 2
    assert [s[2] for s in run.changes.stamps] == [run.prev.resources[EDITED].resource_id]


def test_a_recorded_file_keeps_its_recorded_hash_without_being_read(workspace, tmp_path, monkeypatch):
    """A file whose size and mtime are as recorded (and old enough to trust) is not hashed again."""
    from mnote_evidence.build.workspace import scan as scanning

    out = tmp_path / "out"
    _aged_build(workspace, out)
    known = previous.load_previous(out / "evidence.sqlite").resources  # the rows, as the build passes them
    hashed: list = []
    _count(monkeypatch, scanning, "file_sha256", hashed)
    files = scanning.scan(workspace, exclude=[out], known=known)
    recorded = [f for f in files if f.path in known and not f.refused]
    assert recorded and not any(f.hashed for f in recorded)
    assert all(f.source_hash == known[f.path].source_hash for f in recorded)
    assert len(hashed) == sum(1 for f in files if f.hashed)


def test_notes_are_screened_only_when_they_could_be_refused(workspace, tmp_path, monkeypatch):
    from mnote_evidence.build import pipeline

    out = tmp_path / "out"
    _aged_build(workspace, out)
    (workspace / "Inbox" / "empty.md").write_text("", "utf-8")
    screened: list = []
    _count(monkeypatch, pipeline._Build, "screen", screened)
    report = run_build(workspace, out, max_file_mb=0.001)  # 1 KiB: the longer notes are refused
    notes = [args[1] for args in screened if args[1].kind == model.KIND_MARKDOWN]
    assert notes and all(f.refused or f.size == 0 or f.size > 1024.0 for f in notes)
    assert any(f.path == "Inbox/empty.md" for f in notes)
    assert any(e["code"] == "file_too_large" for e in report.errors)


def test_the_front_page_key_follows_each_thing_the_page_shows():
    def row(i, **kw):
        values = {"status": "ok", "error_code": None, "error_message": None, "warnings": []} | kw
        return data.Resource(
            resource_id=f"id{i}",
            path=f"n/{i}.md",
            owner=None,
            kind="markdown",
            status=values["status"],
            provider=None,
            provider_version=None,
            source_hash="h",
            artifact_path=None,
            source_map_path=None,
            error_code=values["error_code"],
            error_message=values["error_message"],
            page_count=None,
            block_count=0,
            warnings=values["warnings"],
            updated_at_ms=i,
        )

    base = [row(i) for i in range(20)]

    def key(rows):
        page = front.FrontPage(rows, None, None, False)
        return page.key([]), page.tree_key()

    k, t = key(base)
    variants = {
        "error": [*base[:3], row(3, status="error", error_code="x", error_message="m"), *base[4:]],
        "message": [*base[:3], row(3, status="error", error_code="x", error_message="m2"), *base[4:]],
        "warning": [*base[:3], row(3, warnings=[{"code": "w", "message": "m"}]), *base[4:]],
        "path": [*base[:3], dataclasses.replace(row(3), path="n/3b.md"), *base[4:]],
        "kind": [*base[:3], dataclasses.replace(row(3), kind="pdf"), *base[4:]],
    }
    keys = {name: key(rows) for name, rows in variants.items()}
    assert len({k, *(v[0] for v in keys.values())}) == len(variants) + 1  # every change, a new page key
    assert keys["warning"][1] == t and keys["error"][1] != t  # the tree: paths, kinds, statuses, codes
    assert keys["message"][1] == keys["error"][1] and keys["path"][1] != t and keys["kind"][1] != t
    assert key(base) == (k, t)


def test_reading_the_provider_versions_loads_no_pdf_parsing_helpers():
    """Every build reads every provider's version; the PDF provider's layout helpers load with its
    first parse."""
    import subprocess

    code = (
        "import sys; from mnote_evidence.build.parse.providers import provider_versions; "
        "provider_versions(); "
        "print(sorted(m for m in sys.modules if m.endswith(('.furniture', '.pdf_boxes', '.quote_match'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ).stdout
    assert out.strip() == "[]"


def test_an_edit_checks_the_previous_index_once(workspace, tmp_path, monkeypatch):
    """`is_valid_db` (a connection and a count) was asked three times per build: reading the previous
    rows, choosing the write from empty, and writing in place. Now once, on the reading connection."""
    from mnote_evidence.build.index import writer

    out = tmp_path / "out"
    _aged_build(workspace, out)
    _edit(workspace)
    asked: list = []
    _count(monkeypatch, writer, "is_valid_db", asked)
    monkeypatch.setattr(previous, "is_valid_db", writer.is_valid_db)  # imported by name there
    report = run_build(workspace, out, site=False)
    assert report.parsed == 1 and report.changed
    assert len(asked) == 1
    fresh = tmp_path / "fresh"  # a build from empty asks once too (no file: not at all)
    asked.clear()
    assert run_build(workspace, fresh, site=False).parsed > 1 and asked == []


def _collections_of_an_edit(workspace, tmp_path, monkeypatch) -> tuple[list, dict, pipeline.BuildReport]:
    """An edit built with a collection at every allocation while collection is on (gc threshold 1): the
    collections that ran, and their count and the freeze count where the build was at each spied step."""
    import gc

    out = tmp_path / "out"
    _aged_build(workspace, out)
    _edit(workspace)
    collections: list = []
    seen: dict = {}
    load, scan, stamps, summary = (
        pipeline.load_previous,
        pipeline.scan,
        pipeline._Build.stamps,
        pipeline.recorded,
    )

    def spy_load(db_path):
        seen["before_load"] = len(collections)
        return load(db_path)

    def spy_scan(*args, **kwargs):
        files = scan(*args, **kwargs)
        seen["after_scan"] = len(collections)
        seen["frozen_at_scan"] = gc.get_freeze_count()
        return files

    def spy_stamps(self, files):
        seen["frozen_later"] = gc.get_freeze_count()
        return stamps(self, files)

    def spy_recorded(db_path):
        seen["after_index"] = len(collections)
        return summary(db_path)

    monkeypatch.setattr(pipeline, "load_previous", spy_load)
    monkeypatch.setattr(pipeline, "scan", spy_scan)
    monkeypatch.setattr(pipeline._Build, "stamps", spy_stamps)
    monkeypatch.setattr(pipeline, "recorded", spy_recorded)

    def callback(phase, info):
        if phase == "start":
            collections.append(info)

    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1)
    try:
        report = pipeline.build(workspace, pipeline.BuildOptions(out=out, site=False, tune_gc=True))
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(callback)
    assert gc.isenabled() and gc.get_freeze_count() == 0  # as before the build
    return collections, seen, report


def test_an_edit_triggers_no_collection_until_its_index_is_written_and_freezes_the_rows_and_files(
    workspace, tmp_path, monkeypatch
):
    """The previous rows and the scanned files all live on and form no cycles: no automatic collection
    runs while they are made, and they are frozen once the scan is done; an edit (few files read)
    collects again only once its index is written (at 10,000 notes the GC took an edit 16-22 ms)."""
    collections, seen, report = _collections_of_an_edit(workspace, tmp_path, monkeypatch)
    assert report.parsed == 1 and report.hashed <= pipeline.NOTES_FOR_POOL
    assert seen["after_index"] == seen["after_scan"] == seen["before_load"] < len(collections)
    # the rows and the files (one each per resource) joined what was frozen before the build
    assert seen["frozen_later"] >= seen["frozen_at_scan"] + 2 * report.unchanged


def test_a_build_that_reads_many_files_collects_again_after_the_scan(workspace, tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "NOTES_FOR_POOL", 0)  # the edit's one file is "many"
    collections, seen, report = _collections_of_an_edit(workspace, tmp_path, monkeypatch)
    assert report.parsed == 1
    assert seen["after_scan"] == seen["before_load"] < seen["after_index"]


def test_the_provider_versions_are_the_providers_and_are_read_without_importing_them():
    """The registry's versions (library, revision, OCR engine) are what each provider says, and reading them
    imports no provider of a format whose registry entry names its library."""
    import subprocess

    from mnote_evidence.build.core import formats
    from mnote_evidence.build.parse import providers
    from mnote_evidence.build.parse.ocr.settings import OcrSettings

    for ocr in (OcrSettings(), OcrSettings(engine="none")):
        for fmt in formats.FORMATS:
            assert (
                providers.provider_version(fmt, ocr) == providers.provider_class(fmt.provider)(ocr).version()
            )
    code = (
        "import sys; from mnote_evidence.build.parse.providers import provider_versions; "
        "provider_versions(); "
        "print(sorted(m for m in sys.modules if m.startswith('mnote_evidence.build.parse.providers.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ).stdout
    loaded = {m.rpartition(".")[2] for m in ast.literal_eval(out.strip())}
    assert "markdown" in loaded and not loaded & {"pdf", "pdf_boxes", "docx", "docx_parts", "image"}, out
