"""Schema 6 derives link edges from `evidence_link` instead of storing them: the `evidence_edge` view
gives every reader the rows schema 5 stored. The oracle is schema 5's own rule (build/index/linkgraph.py's
classification and the writer's `edge_row` / INSERT OR IGNORE / known-block filter as schema 5 had them),
kept here frozen and fed from the files and sidecars, not from the index's links; only the `edge_id`
changes form (a hash in schema 5, '<edge_type>:<block_id>:<to_id>' in schema 6, one for one).
Also: a note edited to link and unlink (and an attachment whose owner moves to a note nobody edited)
changes the derived edges as a fresh build of the same files has them; a schema 5 index is rebuilt whole."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from mnote_evidence.build.core.ids import edge_id, resource_id
from mnote_evidence.build.core.model import KIND_MARKDOWN
from mnote_evidence.build.index.schema import LINK_EDGE_TYPES, SCHEMA_VERSION, STORED_EDGE_TYPES
from mnote_evidence.build.parse.sidecars import artifact_from_source_map
from mnote_evidence.build.workspace.links import LinkResolver, alias_map, owners
from mnote_evidence.build.workspace.scan import scan
from tests.conftest import connect, copy_workspace, run_build

COLUMNS = "from_id, to_id, edge_type, source_block_id, confidence, created_by, resource_id"


# -- schema 5's link edges, frozen (the oracle) -------------------------------------------------------
def v5_link_edges(root: Path, out: Path) -> list[tuple]:
    """(edge_id, from, to, type, block, confidence, created_by, resource_id) as schema 5 stored them."""
    conn = connect(out)
    try:  # the indexable notes (parsed, ok) and their sidecars: the links as parsed, not as indexed
        notes = {
            r[0]: r[1]
            for r in conn.execute(
                "SELECT source_root_relative_path, source_map_path FROM evidence_resource "
                "WHERE kind = 'markdown' AND status = 'ok'"
            )
        }
    finally:
        conn.close()
    files = scan(root, exclude=[out])
    present = {f.path for f in files if not f.refused}
    blocks = {
        n: artifact_from_source_map(json.loads((root / m).read_text("utf-8")), "").blocks
        for n, m in notes.items()
    }
    links = {
        n: [(b.id, link["target"], link["kind"]) for b in bs for link in b.links] for n, bs in blocks.items()
    }
    resolver = LinkResolver(
        present, alias_map([(n, t) for n, ls in links.items() for _, t, k in ls if k == "alias"])
    )
    # in the order schema 5 wrote them (notes by resource id, links as written): its rowid order
    resolved = [
        (n, b, resolver.resolve(n, t, k)) for n in sorted(links, key=resource_id) for b, t, k in links[n]
    ]
    linkers: dict[str, set[str]] = {}
    for n, _, hit in resolved:
        if hit.path:
            linkers.setdefault(hit.path, set()).add(n)
    owner_of = owners([f.path for f in files if f.kind != KIND_MARKDOWN], set(notes), linkers)
    rows: dict[str, tuple] = {}
    for n, block, hit in resolved:
        if hit.path and hit.path != n and block in {b.id for b in blocks[n]}:
            kind = (
                "markdown_links_to"
                if hit.path in notes
                else "document_contains_resource"
                if owner_of.get(hit.path) == n
                else "resource_refers_to"
            )
            frm, to = resource_id(n), resource_id(hit.path)
            eid = edge_id(frm, to, kind, block)
            rows.setdefault(eid, (eid, frm, to, kind, block, 1.0, "mnote-evidence build", frm))  # OR IGNORE
    return list(rows.values())


def link_edges(out: Path) -> list[tuple]:
    conn = connect(out)
    try:
        return conn.execute(
            f"SELECT edge_id, {COLUMNS} FROM evidence_edge WHERE edge_type IN (?, ?, ?)", LINK_EDGE_TYPES
        ).fetchall()
    finally:
        conn.close()


def assert_v5(root: Path, out: Path, order: bool = True) -> dict[str, int]:
    """`order`: also the order readers get (ORDER BY link_rowid) is schema 5's edge rowid order, as a fresh
    build wrote it (an incremental one appends a rewritten note's links, as schema 5 appended its edges)."""
    got, want = link_edges(out), v5_link_edges(root, out)
    conn = connect(out)
    try:  # graph mode keeps ties in this order
        for to in {r[2] for r in want} if order else ():
            assert [
                tuple(r)
                for r in conn.execute(
                    "SELECT source_block_id, from_id FROM evidence_link_edge WHERE to_id = ? "
                    "ORDER BY link_rowid",
                    [to],
                )
            ] == [(r[4], r[1]) for r in want if r[2] == to]
    finally:
        conn.close()
    assert sorted(tuple(r[1:]) for r in got) == sorted(r[1:] for r in want)
    new_id = {tuple(r[1:]): r[0] for r in got}
    assert len(set(new_id.values())) == len(got) == len(want)  # one new id per old id
    for old in want:
        assert new_id[old[1:]] == f"{old[3]}:{old[4]}:{old[2]}"
    types: dict[str, int] = {}
    for r in want:
        types[r[3]] = types.get(r[3], 0) + 1
    return types


def test_fixture_link_edges_are_schema_5s(built):
    root, out, _ = built
    types = assert_v5(root, out)
    assert set(types) == set(LINK_EDGE_TYPES), (
        types
    )  # every type met, Obsidian's wikilinks and embeds included
    conn = connect(out)
    try:  # none stored: evidence_edge_row holds resource_contains_page edges only
        stored = {r[0] for r in conn.execute("SELECT DISTINCT edge_type FROM evidence_edge_row")}
        assert stored <= set(STORED_EDGE_TYPES) and stored
        obsidian = conn.execute(
            "SELECT count(*) FROM evidence_edge e JOIN evidence_resource r "
            "ON r.resource_id = e.from_id WHERE r.source_root_relative_path LIKE 'Obsidian/%' "
            "AND e.edge_type = 'markdown_links_to'"
        ).fetchone()[0]
        assert obsidian > 0
    finally:
        conn.close()


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new), "utf-8")


def _view(out: Path) -> list[tuple]:
    conn = connect(out)
    try:
        return sorted(tuple(r) for r in conn.execute(f"SELECT edge_id, {COLUMNS} FROM evidence_edge"))
    finally:
        conn.close()


def _edges_from(out: Path, note: str) -> dict[str, str]:
    """target path -> edge type of `note`'s link edges."""
    conn = connect(out)
    try:
        return {
            r[0]: r[1]
            for r in conn.execute(
                "SELECT t.source_root_relative_path, e.edge_type FROM evidence_link_edge e "
                "JOIN evidence_resource t ON t.resource_id = e.to_id WHERE e.from_id = ?",
                [resource_id(note)],
            )
        }
    finally:
        conn.close()


def test_incremental_link_unlink_and_owner_move_match_a_fresh_build(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    orphan, daily, review = "Unfiled/orphan-report.pdf", "Daily/2026-11-02.md", "Obsidian/Review.md"
    with open(root / daily, "a", encoding="utf-8") as f:
        f.write("\n\nThe orphan report: [[orphan-report.pdf]].\n")
    with open(root / review, "a", encoding="utf-8") as f:
        f.write("\n\nAlso the orphan report: [[orphan-report.pdf]].\n")
    out = tmp_path / "out"
    run_build(root, out)
    before = _edges_from(out, review)
    assert (
        before[orphan] == "resource_refers_to"
        and _edges_from(out, daily)[orphan] == "document_contains_resource"
    )
    assert "Projects/Meeting Notes/Kickoff.md" not in before
    assert before["研究/Rust 并发.assets/thread-scope.png"] == "resource_refers_to"

    # one note edited (no file added: the fast way): it unlinks the image and links a note; the daily note
    # drops its link, so the orphan's owner moves to Review, whose edge type changes
    _edit(root / review, "![[thread-scope.png]]", "See also [[Kickoff]].")
    _edit(root / daily, "The orphan report: [[orphan-report.pdf]].", "No report.")
    report = run_build(root, out)
    assert report.parsed >= 2
    after = _edges_from(out, review)
    assert "研究/Rust 并发.assets/thread-scope.png" not in after
    assert after["Projects/Meeting Notes/Kickoff.md"] == "markdown_links_to"
    assert after[orphan] == "document_contains_resource"
    assert orphan not in _edges_from(out, daily)

    fresh = tmp_path / "fresh"
    shutil.copytree(root, tmp_path / "ws2", symlinks=True)
    run_build(tmp_path / "ws2", fresh)
    assert _view(out) == _view(fresh)
    assert_v5(root, out, order=False)


def test_a_schema_5_index_is_rebuilt_without_stored_link_edges(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    out = tmp_path / "out"
    run_build(root, out)
    want = _view(out)
    # make it what schema 5 wrote: link edges stored (with their hashed ids), no evidence_link_edge view
    old = v5_link_edges(root, out)
    conn = sqlite3.connect(out / "evidence.sqlite", isolation_level=None)
    conn.execute("DROP VIEW evidence_edge")
    conn.execute("DROP VIEW evidence_link_edge")
    conn.execute(
        "CREATE VIEW evidence_edge AS SELECT edge_id, from_id, to_id, edge_type, source_block_id, "
        "confidence, 'mnote-evidence build' AS created_by, resource_id FROM evidence_edge_row"
    )
    conn.executemany(
        "INSERT INTO evidence_edge_row VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(r[0], r[1], r[2], r[3], r[4], r[5], r[7]) for r in old],
    )
    conn.execute("UPDATE build_meta SET value = '5' WHERE key = 'schema_version'")
    conn.close()
    report = run_build(root, out)
    assert report.redone["schema"]["from"] == "5" and report.redone["schema"]["to"] == SCHEMA_VERSION == "8"
    conn = connect(out)
    try:
        assert (
            conn.execute(
                "SELECT count(*) FROM evidence_edge_row WHERE edge_type IN (?, ?, ?)", LINK_EDGE_TYPES
            ).fetchone()[0]
            == 0
        )
        assert conn.execute("SELECT value FROM build_meta WHERE key = 'schema_version'").fetchone()[0] == "8"
    finally:
        conn.close()
    assert _view(out) == want and len(old) > 0
