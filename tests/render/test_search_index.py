"""The static search index (`_search/`): files under the size limit, each named by its bytes; exactly the
FTS index's tokens (term, rowid, position), token counts and totals, and the database's light columns, text
and locators, after a full build and after edits; only the touched files written again; a tampered or
linked `_search/` file never taken for the previous index."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnote_evidence.build.core.text import is_cjk
from mnote_evidence.build.render import search_index
from mnote_evidence.build.render.search_index import MANIFEST
from tests.conftest import copy_workspace, run_build, schema_validator


# -- the format, read back here on its own (search_index.js is the product's reader) -------------
def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = data[at]
        at += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, at
        shift += 7


def term_key(term: str) -> bytes:
    """The order of terms (Unicode code points: FTS5's own), in which shards are cut and searched."""
    return term.encode("utf-8", "surrogatepass")


# A posting: (rowid, the block's token count, positions); a CJK token's position is `pos << 2 | flags`
# (bit 0: first bigram of its run, or a run of one character; bit 1: last bigram of its run).
Posting = tuple[int, int, list[int]]


def _decode_postings(data: bytes) -> list[Posting]:
    out, at, last = [], 0, 0
    while at < len(data):
        delta, at = _read_varint(data, at)
        size, at = _read_varint(data, at)
        count, at = _read_varint(data, at)
        positions, prev = [], 0
        for _ in range(count):
            d, at = _read_varint(data, at)
            prev += d
            positions.append(prev)
        last += delta
        out.append((last, size, positions))
    return out


def _shard_records(data: bytes) -> Iterator[tuple[str, bytes]]:
    at = 0
    while at < len(data):
        n, at = _read_varint(data, at)
        term = data[at : at + n].decode("utf-8", "surrogatepass")
        at += n
        n, at = _read_varint(data, at)
        yield term, data[at : at + n]
        at += n


LIMIT_MIB = 1 / 16  # the smallest limit the build takes: this workspace's index spans many files
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


def index_files(out: Path) -> dict[str, bytes]:
    """Every file of `_search/` but the manifest: its name -> its bytes."""
    folder = out / "_search"
    return {
        f.relative_to(folder).as_posix(): f.read_bytes()
        for f in folder.rglob("*")
        if f.is_file() and f.name != "manifest.json"
    }


def _json(out: Path, name: str):
    return json.loads(gzip.decompress((out / "_search" / name).read_bytes()))


def search_contents(out: Path) -> dict[str, list]:
    """What `_search/` holds, as rows: every term's postings (rowid, token count, positions with their
    CJK flank bits), every block's light columns, text and locator, and the totals bm25 reads. An index
    updated in place and one written whole may cut their files elsewhere, never differ in these."""
    manifest = json.loads((out / MANIFEST).read_text())
    delta = manifest.get("delta") or {"terms": [], "dead": []}
    dead = {rowid for lo, hi in delta["dead"] for rowid in range(lo, hi + 1)}
    postings: list[tuple] = []
    for shards, dropped in ((manifest["terms"], dead), (delta["terms"], set())):
        for name in (shard[1] for shard in shards):
            for term, raw in _shard_records(gzip.decompress((out / "_search" / name).read_bytes())):
                found = _decode_postings(raw)
                postings += [(term, r, size, tuple(pos)) for r, size, pos in found if r not in dropped]
    blocks, texts = [], []
    for k, name in manifest["buckets"].items():
        body = _json(out, name)
        rowid = int(k) * manifest["bucket"]
        for i, delta in enumerate(body["id"]):
            rowid += delta
            path, kind, status, lo, hi = body["resources"][body["res"][i]]
            section = body["section"][i]
            blocks.append(
                (
                    rowid,
                    path,
                    kind,
                    status,
                    lo,
                    hi,
                    body["roles"][body["role"][i]],
                    body["ordinal"][i],
                    body["page"][i],
                    None if section is None else rowid - section,
                )
            )
        for _, fragment in body["fragments"]:
            texts += [tuple(json.dumps(x, sort_keys=True) for x in row) for row in _json(out, fragment)]
    return {
        "postings": sorted(postings, key=lambda p: (term_key(p[0]), p[1])),
        "blocks": sorted(blocks),
        "texts": sorted(texts),
        "totals": [manifest["rows"], manifest["tokens"]],
    }


def database_contents(db: Path) -> dict[str, list]:
    """The same rows read from `evidence.sqlite` itself: its FTS index's instances (`fts5vocab`) and
    token counts, its blocks, resources, sections and the `evidence_block` view's locators."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, evidence_fts, instance)")
        found = conn.execute("SELECT term, doc, offset FROM temp.v").fetchall()
        sizes, bigram = {}, set()
        for term, doc, offset in found:
            sizes[doc] = sizes.get(doc, 0) + 1
            if len(term) == 2 and is_cjk(term[0]) and is_cjk(term[1]):
                bigram.add((doc, offset))
        rows: dict[tuple, list] = {}
        for term, doc, offset in found:
            if is_cjk(term[0]):
                flags = int((doc, offset - 1) not in bigram)
                if (doc, offset) in bigram:
                    flags |= int((doc, offset + 1) not in bigram) << 1
                offset = offset << 2 | flags
            rows.setdefault((term, doc), []).append(offset)
        postings = [(t, d, sizes[d], tuple(p)) for (t, d), p in rows.items()]
        blocks = conn.execute(
            "SELECT b.id, r.source_root_relative_path, r.kind, r.status, "
            "(SELECT min(id) FROM evidence_block_row WHERE resource_id = b.resource_id), "
            "(SELECT max(id) FROM evidence_block_row WHERE resource_id = b.resource_id), b.role, b.ordinal, "
            "b.page, (SELECT min(id) FROM evidence_block_row s WHERE s.resource_id = b.resource_id "
            "AND s.section_id = b.section_id) FROM evidence_block_row b JOIN evidence_resource r "
            "USING (resource_id) ORDER BY b.id"
        ).fetchall()
        texts = [
            tuple(json.dumps(x, sort_keys=True) for x in (i, b, t, json.loads(loc)))
            for i, b, t, loc in conn.execute("SELECT id, block_id, text, locator_json FROM evidence_block")
        ]
        average = conn.execute("SELECT block FROM evidence_fts_data WHERE id = 1").fetchone()[0]
        return {
            "postings": sorted(postings, key=lambda p: (term_key(p[0]), p[1])),
            "blocks": sorted(blocks),
            "texts": sorted(texts),
            "totals": _varints(average)[:2],
        }
    finally:
        conn.close()


def _varints(data: bytes) -> list[int]:
    """SQLite varints (FTS5's averages record: rows, then tokens per column)."""
    out, n = [], 0
    for b in data:
        n = (n << 7) | (b & 0x7F)
        if b < 0x80:
            out.append(n)
            n = 0
    return out


def assert_same_as_the_database(out: Path) -> None:
    assert search_contents(out) == database_contents(out / "evidence.sqlite")


def measured(out: Path) -> tuple[int, int, int]:
    """(files, bytes, largest file) of `_search/`, the manifest included."""
    sizes = [f.stat().st_size for f in (out / "_search").rglob("*") if f.is_file()]
    return len(sizes), sum(sizes), max(sizes)


def assert_named_by_their_bytes(out: Path, limit: int) -> None:
    for name, data in index_files(out).items():
        assert len(data) <= limit, name
        assert name.split("/")[1] == hashlib.sha256(data).hexdigest()[:12], name
        gzip.decompress(data)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("search-index")
    root = copy_workspace(base / "ws")
    notes(root, 120)
    return root, base / "out"


def test_files_stay_under_the_limit_and_hold_the_fts_index(workspace):
    root, out = workspace
    report = build(root, out)
    manifest = json.loads((out / MANIFEST).read_text())
    schema_validator("search_manifest.schema.json").validate(manifest)
    files = index_files(out)
    assert (report.files, report.bytes, report.largest_file) == measured(out) and len(manifest["terms"]) >= 3
    assert report.largest_file <= int(LIMIT_MIB * (1 << 20))
    assert_named_by_their_bytes(out, int(LIMIT_MIB * (1 << 20)))
    named = {s[1] for s in manifest["terms"]} | set(manifest["buckets"].values()) | set(manifest["resources"])
    named |= {f for b in manifest["buckets"].values() for _, f in _json(out, b)["fragments"]}
    assert named == set(files)  # every file named, none left over
    assert sum(map(len, files.values())) < (out / "evidence.sqlite").stat().st_size
    assert_same_as_the_database(out)


def test_a_term_larger_than_a_shard_continues_in_the_next(tmp_path):
    root = tmp_path / "ws"
    (root / "many").mkdir(parents=True)
    for i in range(60):  # one word 20 times in each of 2,400 blocks: its postings fill several shards
        text = "\n\n".join(" ".join(["ledger"] * 20) + f" entry {j}" for j in range(40))
        (root / f"many/n{i:02d}.md").write_text(text, "utf-8")
    out = tmp_path / "out"
    run_build(root, out, site=True, search_file_mib=LIMIT_MIB)
    shards = json.loads((out / MANIFEST).read_text())["terms"]
    continued = [s for s in shards if s[2]]
    assert len(continued) >= 3 and {s[0] for s in continued} == {"ledger"}
    assert [s[3] for s in continued] == sorted(s[3] for s in continued)  # each part's first rowid
    assert_same_as_the_database(out)
    before = index_files(out)
    note = root / "many/n30.md"  # rows in the middle of the word's parts: its part there, and its last
    note.write_text(note.read_text("utf-8") + "\n\nledger closing entry\n", "utf-8")
    run_build(root, out, site=True, search_file_mib=LIMIT_MIB)
    written = [n for n in set(index_files(out)) - set(before) if n.startswith("t/")]
    assert 0 < len(written) <= 4, written
    assert_same_as_the_database(out)


def test_an_edit_rewrites_only_the_files_it_touches_and_the_index_stays_the_databases(workspace, tmp_path):
    root, out = workspace
    first = build(root, out)
    before = index_files(out)
    note = root / "gen/n03/note-060.md"
    note.write_text(note.read_text("utf-8") + "\nAn edited paragraph about the ledger 密钥.\n", "utf-8")
    edited = build(root, out)
    after = index_files(out)
    assert edited.updated and edited.sha256 != first.sha256
    assert (edited.files, edited.bytes, edited.largest_file) == measured(out)  # counted, not walked
    written = set(after) - set(before)
    assert edited.files_written == len(written) + 1  # and the manifest
    assert 0 < len(written) < len(after) // 4, (len(written), len(after))
    assert not set(before) - set(after) - {n for n in before if n not in after}
    assert_same_as_the_database(out)
    assert any(p[0] == "edit" for p in search_contents(out)["postings"])  # the new words are there
    (root / "gen/n01/note-021.md").unlink()  # a removed note's rows leave the index
    (root / "gen/n02/note-045.md").rename(root / "gen/n02/moved-045.md")
    for _ in range(2):  # the build that sees a file gone marks it, the next one removes its rows
        report = build(root, out)
        assert report.updated and (report.files, report.bytes, report.largest_file) == measured(out)
        assert_same_as_the_database(out)
    settled = build(root, out)
    again = build(root, out)  # nothing changed: nothing written
    assert again.files_written == 0 and again.sha256 == settled.sha256
    whole = tmp_path / "whole"  # the same database's index written whole: the same contents
    search_index.write(whole, out / "evidence.sqlite", int(LIMIT_MIB * (1 << 20)))
    assert search_contents(whole) == search_contents(out)


def test_a_tampered_or_linked_index_file_is_not_the_previous_index(workspace, tmp_path):
    root, out = workspace
    build(root, out)
    manifest = json.loads((out / MANIFEST).read_text())
    target = out / "_search" / manifest["resources"][0]  # what an edit reads: here, not hashing to its name
    target.write_bytes(gzip.compress(b'{"gen/n00/note-003.md": [0, 0]}'))
    note = root / "gen/n00/note-003.md"
    note.write_text(note.read_text("utf-8") + "\nA first edited line about a beacon.\n", "utf-8")
    report = build(root, out)
    assert not report.updated  # written whole
    assert_same_as_the_database(out)
    manifest = json.loads((out / MANIFEST).read_text())
    name = manifest["buckets"]["0"]
    outside = tmp_path / "outside.bin"
    held = (out / "_search" / name).read_bytes()
    outside.write_bytes(held)
    (out / "_search" / name).unlink()
    (out / "_search" / name).symlink_to(outside)  # the same bytes, through a link leading out
    note.write_text(note.read_text("utf-8") + "\nA second edited line.\n", "utf-8")
    report = build(root, out)
    assert not report.updated
    assert not any(f.is_symlink() for f in (out / "_search").rglob("*"))
    assert outside.read_bytes() == held  # the link's target is left as it was
    assert_same_as_the_database(out)


def test_the_same_workspace_gives_the_same_files(workspace, tmp_path):
    root, _ = workspace
    a, b = tmp_path / "a", tmp_path / "b"
    assert build(root, a).sha256 == build(root, b).sha256
    assert (a / MANIFEST).read_bytes() == (b / MANIFEST).read_bytes()
    assert index_files(a) == index_files(b)


def test_the_rows_map_is_cut_under_the_limit_and_an_edit_reads_every_part(tmp_path):
    root = tmp_path / "ws"
    folder = root / ("long-folder-name-" * 6)
    folder.mkdir(parents=True)
    for i in range(300):  # paths of ~150 bytes: a map of ~50 KB, over half the smallest limit
        name = f"{'a-rather-long-note-name-' * 2}{i:03d}.md"
        (folder / name).write_text(f"# N{i}\n\nledger {i}\n", "utf-8")
    out = tmp_path / "out"
    run_build(root, out, site=True, search_file_mib=LIMIT_MIB)
    parts = json.loads((out / MANIFEST).read_text())["resources"]
    assert len(parts) >= 2
    assert all(len((out / "_search" / name).read_bytes()) <= int(LIMIT_MIB * (1 << 20)) for name in parts)
    last = sorted(folder.iterdir())[-1]  # in the last part of the map
    last.write_text(last.read_text("utf-8") + "\nquartz\n", "utf-8")
    report = run_build(root, out, site=True, search_file_mib=LIMIT_MIB).site.search
    delta = json.loads((out / MANIFEST).read_text())["delta"]
    assert report.updated and len(delta["dead"]) == 1
    assert_same_as_the_database(out)
