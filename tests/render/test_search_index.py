"""The static search index (`_search/`): files under the size limit, the same FTS answers as
`evidence.sqlite` (rowids and bm25 scores) after a full build and after edits, only the touched files
written again, and a tampered or linked `_search/` file never used as the previous copy."""

from __future__ import annotations

import json
import random
import sqlite3
import tempfile
from pathlib import Path

import pytest

from mnote_evidence.build.render.search_index import FTS, MANIFEST, TABLES, chunk_name
from tests.conftest import copy_workspace, run_build, schema_validator

LIMIT_MIB = 1 / 64  # 16 KiB files: the index of this workspace spans many of them
WORDS = "retention archive ledger protocol cipher beacon harbor meadow quartz signal".split()
HANZI = "线程作用域数据签名证书溶剂光标移动选择输入回车密钥吊销"


def notes(root: Path, count: int, seed: int = 7) -> None:
    rnd = random.Random(seed)
    for i in range(count):
        paras = []
        for _ in range(4):
            words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(12, 40)))
            start = rnd.randrange(len(HANZI) - 6)
            paras.append(f"{words} {HANZI[start : start + rnd.randint(2, 6)]} {words[:30]}")
        body = f"# Note {i}\n\n" + "\n\n".join(paras) + "\n"
        (root / f"gen/n{i // 20:02d}").mkdir(parents=True, exist_ok=True)
        (root / f"gen/n{i // 20:02d}/note-{i:03d}.md").write_text(body, "utf-8")


def build(root: Path, out: Path):
    return run_build(root, out, site=True, search_file_mib=LIMIT_MIB).site.search


def copy_of(out: Path, tmp: Path) -> Path:
    """The index's files joined into one database, as the browser reads them."""
    manifest = json.loads((out / MANIFEST).read_text())
    data = b"".join((out / chunk_name(n)).read_bytes() for n in range(manifest["files"]))
    assert len(data) == manifest["databaseLengthBytes"]
    path = tmp / "joined.sqlite"
    path.write_bytes(data)
    return path


def search_contents(out: Path) -> dict[str, list]:
    """What `_search/` holds, as rows: each table's rows by rowid, every FTS term instance, each row's
    token counts and the totals bm25 reads. A copy updated in place and a fresh copy differ in bytes
    (page order, free pages, the header's change counter), never in these."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(copy_of(out, Path(tmp)))
        try:
            rows = {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in TABLES}
            conn.execute(f"CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, {FTS}, instance)")
            rows["terms"] = conn.execute("SELECT * FROM temp.terms ORDER BY 1, 2, 3, 4").fetchall()
            rows["sizes"] = conn.execute(f"SELECT * FROM {FTS}_docsize ORDER BY id").fetchall()
            rows["totals"] = conn.execute(f"SELECT block FROM {FTS}_data WHERE id = 1").fetchall()
            rows["schema"] = conn.execute("SELECT type, name, sql FROM sqlite_schema ORDER BY 2").fetchall()
            return rows
        finally:
            conn.close()


def files_of(out: Path) -> list[bytes]:
    manifest = json.loads((out / MANIFEST).read_text())
    return [(out / chunk_name(n)).read_bytes() for n in range(manifest["files"])]


QUERIES = [
    '"retention"',
    '"ledger" AND "beacon"',
    '"签名"',
    '"线程 程作"',
    '"meadow quartz"',
    '"edited"',
    '"密" *',
]


def answers(db: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {
            q: conn.execute(
                "SELECT rowid, bm25(evidence_fts) FROM evidence_fts WHERE evidence_fts MATCH ? ORDER BY 2, 1",
                [q],
            ).fetchall()
            for q in QUERIES
        }
    finally:
        conn.close()


def assert_same_as_the_index(out: Path, tmp: Path) -> None:
    joined = copy_of(out, tmp)
    assert answers(joined) == answers(out / "evidence.sqlite")
    conn = sqlite3.connect(joined)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO evidence_fts(evidence_fts) VALUES ('integrity-check')")
    conn.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("search-index")
    root = copy_workspace(base / "ws")
    notes(root, 120)
    return root, base / "out"


def test_files_stay_under_the_limit_and_answer_as_the_index(workspace, tmp_path):
    root, out = workspace
    report = build(root, out)
    manifest = json.loads((out / MANIFEST).read_text())
    schema_validator("search_manifest.schema.json").validate(manifest)
    sizes = [(out / chunk_name(n)).stat().st_size for n in range(manifest["files"])]
    assert report.files == manifest["files"] == len(sizes) >= 3
    assert max(sizes) == report.largest_file <= manifest["serverChunkSize"] == int(LIMIT_MIB * (1 << 20))
    assert not (out / chunk_name(manifest["files"])).exists()
    assert sum(sizes) < (out / "evidence.sqlite").stat().st_size  # the search tables only
    assert manifest["cacheBust"] == report.sha256[:16]
    assert_same_as_the_index(out, tmp_path)


def test_an_edit_rewrites_only_the_files_it_touches_and_answers_stay_the_same(workspace, tmp_path):
    root, out = workspace
    first = build(root, out)
    before = files_of(out)
    note = root / "gen/n03/note-060.md"
    note.write_text(note.read_text("utf-8") + "\nAn edited paragraph about the ledger.\n", "utf-8")
    edited = build(root, out)
    assert edited.updated and edited.sha256 != first.sha256
    assert edited.files_written == sum(a != b for a, b in zip(before, files_of(out))) + abs(
        len(before) - edited.files
    )
    build(root, tmp_path / "whole")  # the same workspace copied whole: most files move
    whole = sum(a != b for a, b in zip(before, files_of(tmp_path / "whole")))
    assert 0 < edited.files_written < whole, (edited, whole)
    assert_same_as_the_index(out, tmp_path)
    assert answers(copy_of(out, tmp_path))['"edited"']  # the new words are found
    (root / "gen/n01/note-021.md").unlink()  # a removed note's rows leave the index
    (root / "gen/n02/note-045.md").rename(root / "gen/n02/moved-045.md")
    for _ in range(2):  # the build that sees a file gone marks it, the next one removes its rows
        assert build(root, out).updated
        assert_same_as_the_index(out, tmp_path)
    settled = build(root, out)
    again = build(root, out)  # nothing changed: nothing written
    assert again.files_written == 0 and again.sha256 == settled.sha256


def test_a_tampered_or_linked_index_file_is_not_the_previous_copy(workspace, tmp_path):
    root, out = workspace
    build(root, out)
    target = out / chunk_name(1)
    target.write_bytes(b"\0" * target.stat().st_size)  # not what the sealed state recorded
    note = root / "gen/n00/note-003.md"
    note.write_text(note.read_text("utf-8") + "\nA first edited line.\n", "utf-8")
    report = build(root, out)
    assert not report.updated  # copied whole
    assert_same_as_the_index(out, tmp_path)
    outside = tmp_path / "outside.bin"
    held = (out / chunk_name(0)).read_bytes()
    outside.write_bytes(held)
    (out / chunk_name(0)).unlink()
    (out / chunk_name(0)).symlink_to(outside)  # the same bytes, through a link leading out
    note.write_text(note.read_text("utf-8") + "\nA second edited line.\n", "utf-8")
    report = build(root, out)
    assert not report.updated
    assert not (out / chunk_name(0)).is_symlink()
    assert outside.read_bytes() == held  # the link's target is left as it was
    assert_same_as_the_index(out, tmp_path)


def test_the_same_workspace_gives_the_same_files(workspace, tmp_path):
    root, _ = workspace
    a, b = tmp_path / "a", tmp_path / "b"
    assert build(root, a).sha256 == build(root, b).sha256
    assert (a / MANIFEST).read_bytes() == (b / MANIFEST).read_bytes()
