"""An edit's SQL reads what matches, not every row (schema 7's indexes).

The queries an edit runs over tables of O(workspace) rows (the alias links, the links the build
summary may report, the changed tags' links, the resources that are not ok or carry warnings) each
read a partial index of just their rows (`index/schema.py`): every statement they run is checked
with EXPLAIN QUERY PLAN, as run (traced with its values), so a rewritten query that misses
its index fails here. Their results are compared with what schema 6's queries read by a
scan of the same rows (the new indexes dropped), on the sample workspace plus a note with aliases,
tags in two cases and twice in a block, broken and outside-root links and embeds with fragments,
after a full build and after an in-place edit (indexes kept up to date, not rebuilt).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import time

import pytest

from mnote_evidence.build.core.sqlite_ro import connect_ro
from mnote_evidence.build.index import anchors, writer
from mnote_evidence.build.index import recorded as recorded_mod
from mnote_evidence.build.index.link_targets import LinkTargets, recorded_aliases
from mnote_evidence.build.index.schema import SCHEMA_VERSION
from mnote_evidence.build.render import site, tag_pages
from tests.conftest import run_build

EXTRA = "Obsidian/Extra Cases.md"
EXTRA_TEXT = """---
aliases: [Roadmap, Extra]
tags: [Planning, hazard-log]
---
# Extra Cases

Tags in two cases, twice in a block: #Planning #planning #PLANNING and #hazard-log.

Broken: [[Nowhere#Somewhere]], ![[Nowhere#^gone]], [[Project Plan#Not a heading]].

Embeds with fragments: ![[Project Plan#Open questions]] and ![[Review#Review]].

Outside: [escape](../../outside.md) and [[Review#^nope]].
"""
# what schema 6 ran (a scan of evidence_link / evidence_resource), the reference for the results
OLD_ALIASES = (
    "SELECT r.source_root_relative_path, l.target FROM evidence_link l "
    "JOIN evidence_resource r USING (resource_id) WHERE l.kind = 'alias'"
)
OLD_REPORT = (
    "SELECT r.source_root_relative_path, l.target, l.kind, l.target_path, l.problem "
    "FROM evidence_link l JOIN evidence_resource r USING (resource_id) "
    "WHERE l.problem IN ('missing', 'outside_root') OR (l.kind IN ('wikilink', 'embed') "
    "AND l.target LIKE '%#%') ORDER BY 1, 2, l.rowid"
)
OLD_COUNTS = "SELECT status, count(*) FROM evidence_resource GROUP BY status ORDER BY 1"
OLD_ERRORS = (
    "SELECT source_root_relative_path, error_code, error_message FROM evidence_resource "
    "WHERE status = 'error' ORDER BY 1"
)
OLD_WARNINGS = (
    "SELECT source_root_relative_path, warnings_json FROM evidence_resource "
    "WHERE warnings_json != '[]' ORDER BY 1"
)
OLD_TAGS = (
    "SELECT lower(l.target), r.source_root_relative_path, b.block_id, b.text, b.kind, r.title "
    "FROM evidence_link l JOIN evidence_resource r USING (resource_id) "
    "JOIN evidence_block b ON b.block_id = l.source_block_id WHERE l.kind = 'tag' AND r.status = 'ok' "
    "ORDER BY 2, b.ordinal"
)
SCHEMA_7 = writer.BULK_INDEXES  # the indexes schema 7 added (all built after a load from empty)


@pytest.fixture()
def built_extra(workspace, tmp_path):
    (workspace / EXTRA).write_text(EXTRA_TEXT, "utf-8")
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    return workspace, out


def _without_new_indexes(out, tmp_path):
    """A copy of the index without schema 7's indexes: its queries read as schema 6's did."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    copy = tmp_path / "schema6.sqlite"
    shutil.copyfile(out / "evidence.sqlite", copy)
    conn = sqlite3.connect(copy)
    for name in SCHEMA_7:
        conn.execute(f"DROP INDEX {name}")
    conn.commit()
    conn.close()
    return connect_ro(copy)


def _rows(conn: sqlite3.Connection, sql: str) -> list[tuple]:
    return [tuple(r) for r in conn.execute(sql)]


def _traced(conn: sqlite3.Connection, run) -> list[str]:
    """The SELECTs `run()` executes on `conn`, with their values (the trace expands them)."""
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return [s for s in seen if s.lstrip().upper().startswith("SELECT")]


def _full_reads(conn: sqlite3.Connection, statements: list[str]) -> list[tuple[str, str]]:
    """(statement, plan line) of every scan of a stored table not through a partial index (whose rows
    are only the matching ones). A whole table's count(*) must be a b-tree count (the Count opcode)."""
    partial = {
        n
        for (n,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'"
        )
    }
    bad = []
    for sql in statements:
        if re.fullmatch(r"SELECT count\(\*\) FROM \w+", sql.strip()):
            if "Count" not in [r[1] for r in conn.execute("EXPLAIN " + sql)]:
                bad.append((sql, "count(*) reads rows"))
            continue
        for *_, detail in conn.execute("EXPLAIN QUERY PLAN " + sql):
            if detail.startswith("SCAN") and "VIRTUAL TABLE" not in detail:
                index = re.search(r"USING (?:COVERING )?INDEX (\w+)", detail)
                if not (index and index.group(1) in partial):
                    bad.append((sql, detail))
    return bad


def _edit_queries(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Each edit-time query of these modules, the statements it ran."""
    tags = ["planning", "Hazard-Log"]
    return {
        "recorded_aliases": _traced(conn, lambda: recorded_aliases(conn)),
        "report_links": _traced(conn, lambda: LinkTargets(conn).report_links()),
        "tag_entries(only)": _traced(conn, lambda: tag_pages.tag_entries(conn, tags)),
    }


def test_each_edit_query_reads_its_index_not_every_row(built_extra, monkeypatch):
    _, out = built_extra
    db_path = out / "evidence.sqlite"
    conn = connect_ro(db_path)
    try:
        queries = _edit_queries(conn)
        for name, statements in queries.items():
            assert statements, name
            assert _full_reads(conn, statements) == [], name
        plans = {
            name: " ".join(r[3] for s in statements for r in conn.execute("EXPLAIN QUERY PLAN " + s))
            for name, statements in queries.items()
        }
        assert "evidence_link_alias" in plans["recorded_aliases"]
        assert "evidence_link_report" in plans["report_links"]
        assert "evidence_link_tag" in plans["tag_entries(only)"]
        statements: list[str] = []

        def traced_connect(path):  # recorded() opens its own connection
            c = connect_ro(path)
            c.set_trace_callback(statements.append)
            return c

        monkeypatch.setattr(recorded_mod, "connect_ro", traced_connect)
        recorded_mod.recorded(db_path)
        selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        assert len(selects) >= 5 and _full_reads(conn, selects) == []
        used = " ".join(r[3] for s in selects for r in conn.execute("EXPLAIN QUERY PLAN " + s))
        assert {"evidence_resource_not_ok", "evidence_resource_warned", "evidence_link_report"} <= set(
            re.findall(r"INDEX (\w+)", used)
        )
    finally:
        conn.close()


def test_the_full_read_check_catches_a_scan(built_extra, tmp_path):
    """The check above is not vacuous: schema 6's queries, on the index without schema 7's indexes, scan."""
    _, out = built_extra
    conn = _without_new_indexes(out, tmp_path)
    try:
        assert len(_full_reads(conn, [OLD_ALIASES, OLD_COUNTS, OLD_ERRORS])) == 3
    finally:
        conn.close()


def _assert_same_as_schema_6(out, tmp_path):
    db_path = out / "evidence.sqlite"
    new, old = connect_ro(db_path), _without_new_indexes(out, tmp_path)
    try:
        assert recorded_aliases(new) == _rows(old, OLD_ALIASES) != []
        report = LinkTargets(new).report_links()
        assert [tuple(r) for r in report] == _rows(old, OLD_REPORT)
        assert {r[4] for r in report} >= {"missing", "outside_root"} and any("#" in r[1] for r in report)
        assert LinkTargets(new).broken(report) == LinkTargets(old).broken()
        counts, errors, warnings = recorded_mod.recorded(db_path)
        assert counts == dict(_rows(old, OLD_COUNTS))
        assert list(counts) == sorted(counts) and counts["ok"] > 0 and counts["error"] > 0
        assert errors == [{"path": p, "code": c, "message": m} for p, c, m in _rows(old, OLD_ERRORS)]
        assert [w for w in warnings if w["code"] not in ("link_outside_root", "broken_link")] == [
            {"path": p, **w} for p, ws in _rows(old, OLD_WARNINGS) for w in json.loads(ws)
        ]
        everything = tag_pages.tag_entries(new)
        assert everything == tag_pages.tag_entries(old) != {}
        rows = _rows(old, OLD_TAGS)
        assert sorted(everything) == sorted({r[0] for r in rows})
        assert (
            tag_pages.tag_counts(new)
            == tag_pages.tag_counts(old)
            == {t: len(e) for t, e in everything.items()}
        )
        for only in (["PLANNING"], ["hazard-log", "Planning"], ["no-such-tag"], list(everything)):
            wanted = {t for t in everything if t in {o.lower() for o in only}}
            assert tag_pages.tag_entries(new, only) == {t: everything[t] for t in sorted(wanted)}
            assert tag_pages.tag_entries(new, only) == tag_pages.tag_entries(old, only)
    finally:
        new.close()
        old.close()


def test_results_are_schema_6_results_after_a_full_build_and_an_in_place_edit(built_extra, tmp_path):
    workspace, out = built_extra
    _assert_same_as_schema_6(out, tmp_path / "full")
    note = workspace / EXTRA  # in place: a tag and an alias go, a broken link and a fragment link come
    past = time.time() - 60
    note.write_text(
        EXTRA_TEXT.replace("#PLANNING", "#Fresh-Tag").replace("Roadmap, ", "")
        + "\nMore: [[Gone Too]] and [[Review#Review]].\n",
        "utf-8",
    )
    os.utime(note, (past, past))
    report = run_build(workspace, out, site=True)
    assert report.parsed == 1
    conn = connect_ro(out / "evidence.sqlite")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"  # the indexes match the rows
        assert ("Obsidian/Extra Cases.md", "Roadmap") not in recorded_aliases(conn)
        assert "fresh-tag" in tag_pages.tag_entries(conn, ["fresh-tag"])
    finally:
        conn.close()
    _assert_same_as_schema_6(out, tmp_path / "edit")


def test_a_build_from_empty_creates_the_new_indexes_after_the_load(built, tmp_path):
    _, out, _ = built
    conn = connect_ro(out / "evidence.sqlite")
    try:
        assert (
            conn.execute("SELECT value FROM build_meta WHERE key = 'schema_version'").fetchone()[0]
            == SCHEMA_VERSION
            == "8"
        )
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert set(SCHEMA_7) <= names
    finally:
        conn.close()
    fresh = writer.FreshIndex.open(tmp_path / "evidence.sqlite")  # during the load they are not there
    try:
        loading = {n for (n,) in fresh.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert not set(SCHEMA_7) & loading
        assert {re.search(r"INDEX (?:IF NOT EXISTS )?(\w+)", ddl).group(1) for ddl in fresh.deferred} >= set(
            SCHEMA_7
        )
    finally:
        fresh.discard()


def test_an_index_of_schema_6_is_rebuilt_from_empty_with_the_new_indexes(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    conn = sqlite3.connect(out / "evidence.sqlite")
    for name in SCHEMA_7:
        conn.execute(f"DROP INDEX {name}")
    conn.execute("UPDATE build_meta SET value = '6' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    report = run_build(workspace, out)
    assert report.redone["schema"]["from"] == "6" and report.redone["schema"]["to"] == SCHEMA_VERSION
    conn = connect_ro(out / "evidence.sqlite")
    try:
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert set(SCHEMA_7) <= names
    finally:
        conn.close()


def _tag_files(out) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted((out / "_tags").rglob("*.html"))}


def test_an_edit_that_removes_a_tags_last_use_drops_its_page_as_a_fresh_build_would(workspace, tmp_path):
    note = workspace / EXTRA
    note.write_text(EXTRA_TEXT + "\nOnce: #Only-Here.\n\nTwice: #only-here.\n", "utf-8")
    past = time.time() - 86400
    os.utime(note, (past, past))
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    assert "_tags/only-here.html" in _tag_files(out)
    assert "_tags/only-here.html" in site._load_state(out)["pages"]
    note.write_text(EXTRA_TEXT + "\nOnce: gone.\n", "utf-8")  # its tag gone (the edit's `only` lists it)
    os.utime(note, (past + 60, past + 60))
    report = run_build(workspace, out, site=True)
    assert report.parsed == 1
    fresh = tmp_path / "fresh"
    run_build(workspace, fresh, site=True)
    assert "_tags/only-here.html" not in _tag_files(out)
    assert _tag_files(out) == _tag_files(fresh)
    assert not any("only-here" in page for page in site._load_state(out)["pages"])


def test_an_edit_repoints_the_ids_that_landed_on_a_retired_block_through_an_index(
    workspace, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    run_build(workspace, out)
    statements: list[str] = []
    retire = anchors.retire

    def traced(conn, *args, **kwargs):
        conn.set_trace_callback(statements.append)
        try:
            return retire(conn, *args, **kwargs)
        finally:
            conn.set_trace_callback(None)

    monkeypatch.setattr(anchors, "retire", traced)
    note = workspace / "Obsidian/Review.md"
    for words in ("Dates now come from", "Dates at last come from"):  # the second edit re-points the first's
        note.write_text(
            note.read_text("utf-8").replace("Dates come from", words).replace("Dates now come from", words),
            "utf-8",
        )
        past = time.time() - 600
        os.utime(note, (past, past))
        assert run_build(workspace, out).parsed == 1
    updates = [s for s in statements if s.startswith("UPDATE evidence_anchor")]
    assert updates
    conn = connect_ro(out / "evidence.sqlite")
    try:
        assert conn.execute("SELECT count(*) FROM evidence_anchor").fetchone()[0] >= 2
        for sql in updates:
            plan = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            assert plan == [
                "SEARCH evidence_anchor USING INDEX evidence_anchor_successor (successor_block_id=?)"
            ], plan
    finally:
        conn.close()
