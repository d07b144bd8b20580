"""The search index (`_search/`) on the static hosts people publish on: a host with a per-file limit that
refuses `evidence.sqlite`, with and without byte ranges, and a host that compresses every response. Real
builds, a real server process (`tests/range_server.py`) and real Chromium: the box answers as the Python
handler does from the index's files alone, fetched whole, on each of them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

from mnote_evidence.build.render.search_index import MANIFEST
from tests.conftest import copy_workspace, run_build
from tests.render.test_search_index import index_files, notes
from tests.render.test_static_search import (
    PARITY_QUERIES,
    api_results,
    assert_same_pages,
    quiet,
    type_query,
)
from tests.servers import free_port, start, stop

FILE_MIB = 1 / 16  # index files of at most 64 KiB
GENERATED_NOTES = 500  # with content_fixtures: a database of 1.5 MB
REPO = Path(__file__).resolve().parents[2]


def host(folder: Path, *flags: str) -> tuple:
    """`python -m tests.range_server FOLDER PORT FLAGS…`, up; (process, base URL)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    cmd = [sys.executable, "-m", "tests.range_server", str(folder), str(port), *flags]
    return start(cmd, base, cwd=REPO), base


def workspace(root: Path) -> Path:
    copy_workspace(root)
    notes(root, GENERATED_NOTES)
    return root


@pytest.fixture(scope="module")
def spread_site(tmp_path_factory) -> tuple[Path, int]:
    """(site, per-file limit): an index over many files; a limit above every other file of the site and
    below `evidence.sqlite`'s size."""
    base = tmp_path_factory.mktemp("hosts")
    out = base / "out"
    report = run_build(workspace(base / "ws"), out, site=True, search_file_mib=FILE_MIB).site.search
    assert report.files >= 3 and report.largest_file <= FILE_MIB * (1 << 20)
    database = (out / "evidence.sqlite").stat().st_size
    others = max(f.stat().st_size for f in out.rglob("*") if f.is_file() and "evidence.sqlite" not in f.name)
    limit = (others + database) // 2
    assert report.largest_file <= others < limit < database
    return out, limit


def test_the_server_answers_ranges_limits_and_compression_as_hosts_do(tmp_path):
    (tmp_path / "a.bin").write_bytes(bytes(range(100)))
    (tmp_path / "big.bin").write_bytes(b"x" * 101)
    proc, base = host(tmp_path, "--max-file-bytes", "100")
    plain, plain_base = host(tmp_path, "--no-ranges", "--gzip")
    try:
        past_end = httpx.get(base + "a.bin", headers={"Range": "bytes=90-200"})
        assert past_end.status_code == 206 and past_end.content == bytes(range(90, 100))
        assert past_end.headers["content-range"] == "bytes 90-99/100"
        assert httpx.get(base + "a.bin", headers={"Range": "bytes=100-200"}).status_code == 416
        assert httpx.get(base + "a.bin", headers={"Range": "bytes=-5"}).content == bytes(range(95, 100))
        assert httpx.head(base + "a.bin").headers["accept-ranges"] == "bytes"
        refused = httpx.get(base + "big.bin")
        assert refused.status_code == 404 and "per-file limit" in refused.text
        whole = httpx.get(
            plain_base + "a.bin", headers={"Range": "bytes=90-200", "Accept-Encoding": "identity"}
        )
        assert whole.status_code == 200 and whole.content == bytes(range(100))
        assert "accept-ranges" not in whole.headers
        packed = httpx.get(plain_base + "a.bin", headers={"Accept-Encoding": "gzip"})
        assert packed.headers["content-encoding"] == "gzip" and packed.content == bytes(range(100))
    finally:
        stop(proc)
        stop(plain)


@pytest.mark.parametrize("ranges", [True, False], ids=["ranges", "whole-files"])
def test_a_host_with_a_file_limit_serves_the_box_the_apis_answers(spread_site, page, ranges):
    """The box needs only `_search/`: `evidence.sqlite`, refused by the host, is never asked for; every
    index file is under the limit; ids, totals, pages and groups are the handler's."""
    out, limit = spread_site
    assert all(len(data) <= limit for data in index_files(out).values())
    proc, base = host(out, "--max-file-bytes", str(limit), *(() if ranges else ("--no-ranges",)))
    asked: list[str] = []
    try:
        assert httpx.get(base + "evidence.sqlite").status_code == 404
        quiet(page)
        page.on("request", lambda r: asked.append(r.url))
        page.goto(base + "index.html")
        hrefs = type_query(page, "ledger beacon")
        want = api_results(out, "ledger beacon")
        assert [h.rsplit("#", 1)[1] for h in hrefs[:1]] == [want[0]["evidenceId"]]
        seconds = assert_same_pages(
            page,
            out,
            ["retention ledger", "签名", "线程作用域", *PARITY_QUERIES[1:3]],
            [
                {"topK": 5},
                {"topK": 3, "prefixLast": True},
                {"topK": 4, "resourceKinds": ["markdown"]},
                {"topK": 3, "groupBy": "document", "perDocument": 2},
            ],
        )
        assert seconds >= 3
        stats = page.evaluate("window.mnoteEvidence.searchStats()")
        index = sum(map(len, index_files(out).values()))
        assert 0 < stats["bytes"] < index / 2, (stats, index)  # the files its words need, not the index
        assert not [u for u in asked if "evidence.sqlite" in u]
        assert page.console_errors == [] and page.dialogs == []
    finally:
        stop(proc)


def test_a_host_that_compresses_every_response_serves_the_same_answers(spread_site, page):
    """A host that gzips every response (the index's files are gzip'd already): the browser takes one
    layer off, the box the other; the answers are the handler's."""
    out, _ = spread_site
    proc, base = host(out, "--gzip", "--no-ranges")
    try:
        quiet(page)
        page.goto(base + "index.html")
        hrefs = type_query(page, "ledger beacon")
        assert [h.rsplit("#", 1)[1] for h in hrefs[:1]] == [
            api_results(out, "ledger beacon")[0]["evidenceId"]
        ]
        assert_same_pages(page, out, ["签名", "retention ledger"], [{"topK": 5}])
        assert page.console_errors == []
    finally:
        stop(proc)


@pytest.mark.slow
def test_a_one_note_edit_rewrites_some_of_the_index_files(tmp_path):
    root, out = workspace(tmp_path / "ws"), tmp_path / "out"
    first = run_build(root, out, site=True, search_file_mib=FILE_MIB).site.search
    before = index_files(out)
    middle = GENERATED_NOTES // 2
    note = root / f"gen/n{middle // 20:02d}/note-{middle:03d}.md"
    note.write_text(note.read_text("utf-8") + "\nAn edited sentence about the harbor.\n", "utf-8")
    edited = run_build(root, out, site=True, search_file_mib=FILE_MIB).site.search
    after = index_files(out)
    written = set(after) - set(before)
    assert edited.updated and edited.files == len(after) + 1 and first.files == len(before) + 1
    assert edited.files_written == len(written) + 1  # and the manifest
    # the shard of each of its words where its old rows were and where its new rows go (its ten words
    # are in every note: each spans several shards), the buckets and fragments of those rowids
    kinds = [name.split("/")[0] for name in written]
    assert kinds.count("b") <= 2 and kinds.count("f") <= 4 and kinds.count("t") <= 2 * 14, sorted(written)
    assert 0 < len(written) < len(after) / 10


def test_after_edits_the_box_answers_from_the_shards_and_their_delta_as_the_api_does(tmp_path, page):
    """Edits leave the term shards and write a delta (the changed sources' rows, and the shards' rows they
    replace): a note edited twice, one removed, one added. The box's answers are the handler's on the
    database the edits left, and a delta too large is folded into shards written whole."""
    root, out = workspace(tmp_path / "ws"), tmp_path / "out"
    # terms past U+FFFF and in U+F900: code point order (the index's) is not UTF-16's (JavaScript's)
    (root / "gen/astral.md").write_text("# Astral\n\n𠮷野家 豈 fish 𠀀 quartz.\n", "utf-8")
    run_build(root, out, site=True, search_file_mib=FILE_MIB)
    shards = json.loads((out / MANIFEST).read_text())["terms"]
    firsts = [s[0] for s in shards]
    assert firsts == sorted(firsts)  # Python compares code points
    edited = root / "gen/n05/note-100.md"
    for line in ("A quartz harbor ledger 密钥吊销.", "Then a beacon 线程 meadow."):
        edited.write_text(edited.read_text("utf-8") + f"\n{line}\n", "utf-8")
        run_build(root, out, site=True, search_file_mib=FILE_MIB)
    (root / "gen/n06/note-120.md").unlink()
    (root / "gen/new.md").write_text("# New\n\nA new note on the quartz ledger and 签名证书.\n", "utf-8")
    for _ in range(2):  # the build that sees a file gone marks it, the next one removes its rows
        report = run_build(root, out, site=True, search_file_mib=FILE_MIB).site.search
    manifest = json.loads((out / MANIFEST).read_text())
    assert report.updated and manifest["terms"] == shards and manifest["delta"]["terms"]
    assert {"gen/n05/note-100.md", "gen/n06/note-120.md", "gen/new.md"} <= set(manifest["delta"]["paths"])
    proc, base = host(out)
    try:
        quiet(page)
        page.goto(base + "index.html")
        assert_same_pages(
            page,
            out,
            ["quartz ledger", "harbor", "密钥", "签名证书", "beacon meadow", "new note", "𠮷", "豈", "𠀀"],
            [{"topK": 5}, {"topK": 3, "groupBy": "document", "perDocument": 2}],
        )
        assert page.console_errors == []
    finally:
        stop(proc)
    for i in range(100):  # many notes changed: the delta outgrows its bound and the index is written whole
        note = root / f"gen/n{i // 20:02d}/note-{i:03d}.md"
        note.write_text(note.read_text("utf-8") + f"\nRewritten {i} about the harbor.\n", "utf-8")
    report = run_build(root, out, site=True, search_file_mib=FILE_MIB).site.search
    manifest = json.loads((out / MANIFEST).read_text())
    assert not report.updated and "delta" not in manifest
