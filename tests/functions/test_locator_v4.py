"""Schema 5 derives locators and per-block edges instead of storing them: every reader
gets exactly what schema 4 stored. The oracle is schema 4's own code (`build/core/locator.py` and the writer's
`structural_edges` as they were), kept here frozen and fed from the sidecars, not from the index; the
index's `evidence_block.locator_json` and `evidence_edge` views are compared with it on the fixtures, on
real documents (manual PDFs, python-docx files, a scanned page) and on synthetic blocks of every precision
with awkward paths and numbers."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mnote_evidence.build.core.model import Block, ParsedResourceArtifact, ResourceRow, Section
from mnote_evidence.build.core.text import SEGMENTATION_VERSION
from mnote_evidence.build.core.urls import page_url
from mnote_evidence.build.index.schema import SCHEMA_VERSION
from mnote_evidence.build.index.writer import IndexChanges, ResourceUpdate, write_index
from mnote_evidence.build.parse.sidecars import artifact_from_source_map
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import open_, read
from tests.conftest import connect


# -- schema 4's definitions, frozen (the oracle) ------------------------------------------------------
def v4_precision(kind: str, block: Block) -> str:
    if block.bbox is not None and block.page is not None:
        return "page" if block.box_holds_text is False else "bbox"
    if kind == "office" or block.paragraph_index is not None:
        return "paragraph"
    if block.line_range is not None:
        return "line"
    return "file"


def v4_locator(
    resource_path: str,
    kind: str,
    owner_path: str | None,
    source_map_path: str,
    block: Block,
    section_path: list[str],
) -> dict:
    out = {
        "schema": "mnote.evidence_locator.v1",
        "ownerDocumentPath": owner_path
        if owner_path is not None
        else (resource_path if kind == "markdown" else None),
        "resourcePath": resource_path,
        "resourceKind": kind,
        "blockId": block.id,
    }
    bbox = None if block.box_holds_text is False else block.bbox
    for key, value in (
        ("page", block.page),
        ("bbox", bbox),
        ("lineRange", block.line_range),
        ("charRange", block.char_range),
        ("paragraphIndex", block.paragraph_index),
    ):
        if value is not None:
            out[key] = value
    out["sectionPath"] = section_path
    out["sourceMapPath"] = source_map_path
    out["precision"] = v4_precision(kind, block)
    out["openAction"] = {"type": "mnote.open_resource_locator", "url": page_url(resource_path, block.id)}
    return out


def v4_structural_edges(artifact: ParsedResourceArtifact, resource_id: str) -> list[tuple]:
    first_on_page: dict[int, str] = {}
    edges = []
    for block in artifact.blocks:
        if block.page is not None:
            page_node = f"{resource_id}:page-{block.page}"
            if block.page not in first_on_page:
                first_on_page[block.page] = block.id
                edges.append((resource_id, page_node, "resource_contains_page", block.id))
            edges.append((page_node, block.id, "page_contains_block", block.id))
        if block.section_id:
            edges.append((block.section_id, block.id, "section_contains_block", block.id))
    return edges


STRUCTURAL = ("resource_contains_page", "page_contains_block", "section_contains_block")


# -- comparison ---------------------------------------------------------------------------------------
def artifacts(root: Path, conn: sqlite3.Connection) -> list[tuple[sqlite3.Row, ParsedResourceArtifact]]:
    """(resource row, its artifact read back from its sidecars) of every indexed resource with blocks."""
    out = []
    for row in conn.execute(
        "SELECT * FROM evidence_resource WHERE status = 'ok' AND block_count > 0 ORDER BY 1"
    ):
        doc = json.loads((root / row["source_map_path"]).read_text("utf-8"))
        out.append((row, artifact_from_source_map(doc, "")))
    return out


def assert_v4(root: Path, out: Path, validate) -> dict[str, int]:
    """Every block's locator and every structural edge equal schema 4's; the precisions seen."""
    conn = connect(out)
    try:
        stored = {
            r["block_id"]: r["locator_json"]
            for r in conn.execute("SELECT block_id, locator_json FROM evidence_block")
        }
        edges = sorted(
            tuple(r)
            for r in conn.execute(
                "SELECT from_id, to_id, edge_type, source_block_id FROM evidence_edge "
                "WHERE edge_type IN (?, ?, ?)",
                STRUCTURAL,
            )
        )
        precisions: dict[str, int] = {}
        want_edges = []
        pairs = artifacts(root, conn)
        for row, artifact in pairs:
            sections = artifact.section_by_id()
            for block in artifact.blocks:
                want = v4_locator(
                    row["source_root_relative_path"],
                    row["kind"],
                    row["owner_document_path"],
                    row["source_map_path"],
                    block,
                    sections[block.section_id].path if block.section_id else [],
                )
                got = json.loads(stored.pop(block.id))
                assert got == want and list(got) == list(want), block.id  # same keys, same order
                validate("locator.schema.json", got)
                precisions[got["precision"]] = precisions.get(got["precision"], 0) + 1
            want_edges += v4_structural_edges(artifact, row["resource_id"])
        assert not stored, "blocks the sidecars do not hold"
        assert edges == sorted(want_edges)
        assert len(pairs) > 1 and sum(precisions.values()) == sum(len(a.blocks) for _, a in pairs)
        return precisions
    finally:
        conn.close()


def test_fixture_locators_and_edges_are_schema_4s(built, validate):
    root, out, _ = built
    precisions = assert_v4(root, out, validate)
    assert {"line", "paragraph", "bbox"} <= set(precisions), precisions


def test_real_document_locators_and_edges_are_schema_4s(real_index, validate):
    precisions = assert_v4(real_index.parent / "ws", real_index, validate)
    assert {"paragraph", "bbox"} <= set(precisions), precisions


# -- every precision, awkward paths and numbers ---------------------------------------------------------
AWKWARD = [  # (path, kind, owner)
    ("index.md", "markdown", None),  # a reserved page name: its page moves under _page/
    ('研究/50% "quoted" #1 & more.pdf', "pdf", "研究/笔记.md"),
    ("a b/scan?x='y'.png", "image", None),  # no owner note: ownerDocumentPath null
    ("docs/report.docx", "office", "docs/report notes.md"),
]


def _blocks(n: int, kind: str) -> list[Block]:
    """Blocks as the provider of `kind` makes them (the first one in section s-…{n})."""
    section = f"s-aaaaaaaaa{n}"
    if kind in ("pdf", "image"):
        return [
            Block(
                f"b-aaaaaaaaaaa{n}",
                "paragraph",
                "box held",
                page=2,
                section_id=section,
                char_range=[0, 8],
                bbox=[0.1, 0.30000000000000004, 612.0, 1e-07],
                box_holds_text=True,
            ),
            Block(
                f"b-bbbbbbbbbbb{n}",
                "paragraph",
                "box not held",
                page=3,
                bbox=[72.5, 100.0, 520.25, 140.0],
                box_holds_text=False,
            ),
            Block(
                f"b-ccccccccccc{n}", "ocr_line", "box unchecked", page=3, bbox=[1, 2.5, 3, 4], confidence=0.9
            ),
            Block(f"b-ddddddddddd{n}", "paragraph", "page only", page=1),
        ]
    if kind == "office":
        return [
            Block(
                f"b-aaaaaaaaaaa{n}",
                "heading",
                "Teil",
                paragraph_index=1,
                section_id=section,
                char_range=[0, 4],
            ),
            Block(
                f"b-bbbbbbbbbbb{n}",
                "paragraph",
                "docx paragraph",
                paragraph_index=7,
                para_id="1A2B",
                char_range=[10, 24],
            ),
        ]
    return [
        Block(
            f"b-aaaaaaaaaaa{n}",
            "heading",
            "a heading",
            line_range=[1, 1],
            char_range=[0, 11],
            section_id=section,
        ),
        Block(f"b-bbbbbbbbbbb{n}", "list_item", "a line", line_range=[3, 4], char_range=[15, 21], anchor="x"),
        Block(f"b-ccccccccccc{n}", "paragraph", "front matter, no place"),
    ]


def test_every_precision_and_awkward_path_gives_schema_4s_locator(tmp_path, validate):
    root, out = tmp_path / "ws", tmp_path / "out"
    changes = IndexChanges(
        rebuild=True, meta={"schema_version": SCHEMA_VERSION, "segmentation_version": SEGMENTATION_VERSION}
    )
    for n, (path, kind, owner) in enumerate(AWKWARD, start=2):
        blocks = _blocks(n, kind)
        sections = [
            Section(
                f"s-aaaaaaaaa{n}",
                'Über "Kapitel" 1',
                ["Teil", 'Über "Kapitel" 1'],
                None,
                2,
                block_ids=[blocks[0].id],
            )
        ]
        artifact = ParsedResourceArtifact(
            kind=kind,
            provider="test",
            provider_version="1",
            source_path=path,
            source_hash="sha256:0",
            text="",
            blocks=blocks,
            sections=sections,
        )
        map_rel = f".mnote/sidecars/{path}.source-map.json"
        (root / map_rel).parent.mkdir(parents=True, exist_ok=True)
        (root / map_rel).write_text(
            json.dumps(
                {
                    "resourceKind": kind,
                    "provider": "test",
                    "providerVersion": "1",
                    "sourceRootRelativePath": path,
                    "sourceHash": "sha256:0",
                    "sections": [s.to_json() for s in sections],
                    "pages": [
                        {
                            "page": p,
                            "width": 612,
                            "height": 792,
                            "blocks": [b.to_json() for b in blocks if b.page == p],
                        }
                        for p in (1, 2, 3)
                    ],
                    "blocks": [b.to_json() for b in blocks if b.page is None],
                }
            ),
            "utf-8",
        )
        changes.updates.append(
            ResourceUpdate(
                ResourceRow(
                    resource_id=f"r-aaaaaaaaaaa{n}",
                    path=path,
                    owner=owner,
                    kind=kind,
                    status="ok",
                    source_map_path=map_rel,
                    block_count=len(blocks),
                ),
                artifact,
            )
        )
    write_index(out / "evidence.sqlite", changes)
    precisions = assert_v4(root, out, validate)
    assert set(precisions) == {"bbox", "page", "paragraph", "line", "file"}, precisions

    ctx = Context(EvidenceDB(out / "evidence.sqlite"), site_base="/site/")
    opened = open_({"blockId": "b-bbbbbbbbbbb3"}, ctx)  # a handler reading the view: v4's answer
    assert opened["openAction"]["url"] == "/site/" + page_url(AWKWARD[1][0], "b-bbbbbbbbbbb3")
    assert opened["precision"] == "page" and "bbox" not in opened
    assert (
        read({"blockId": "b-aaaaaaaaaaa2"}, ctx)["anchor"]["source"]["openAction"]["url"]
        == "/site/_page/index.md.html#b-aaaaaaaaaaa2"
    )


@pytest.mark.parametrize("column", ["locator_json", "section_path_json"])
def test_derived_columns_are_not_stored(built, column):
    """The columns SPEC §6 lists are all still there for SQL readers (Datasette), computed by the view."""
    _, out, _ = built
    conn = connect(out)
    try:
        stored = {r[1] for r in conn.execute("PRAGMA table_info(evidence_block_row)")}
        shown = {r[1] for r in conn.execute("PRAGMA table_info(evidence_block)")}
        assert column in shown and column not in stored
        assert conn.execute(f"SELECT count(*) FROM evidence_block WHERE {column} IS NULL").fetchone()[0] == 0
    finally:
        conn.close()
