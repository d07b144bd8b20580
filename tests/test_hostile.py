"""Hostile workspaces (docs/security.md): one workspace holding every build-side attack class, built by a
real `mnote-evidence build` process; plus the kill test, the parse budgets, disk full, file modes
and secret redaction.

Each hostile file is asserted by status and error code, the normal files beside them by status and
unchanged URL, and the whole build by bounded time and memory (generous bounds, measured with
`resource` on the child process: these catch a hang or a 2 GB inflation, not a slow machine).
"""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import psutil
import pymupdf
import pytest
from PIL import Image

from mnote_evidence.build.core.assets import asset_dir
from mnote_evidence.build.core.redact import redact
from mnote_evidence.build.core.urls import page_path, page_url
from mnote_evidence.build.knowledge.lightrag import LightRagError
from mnote_evidence.build.parse.pixels import MAX_RENDER_PIXELS, MAX_RENDER_SIDE
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.markdown import MarkdownProvider
from mnote_evidence.build.parse.workers import worker_pool
from mnote_evidence.functions.core.errors import HandlerError, call
from tests.conftest import CHEM_DOCX, FIXTURES, SPEC_PDF

MAX_SECONDS = 300  # the hostile build: a FIFO or 120 KB of `[[` must not stall it
MAX_RSS_MB = 1500  # the under-declared DOCX must not inflate in memory


def _cli(*args: str, env: dict | None = None, preexec=None, timeout: float = MAX_SECONDS):
    return subprocess.run(
        [sys.executable, "-m", "mnote_evidence", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=preexec,
        timeout=timeout,
    )


def _underdeclared_docx(path: Path, real_mb: int = 300) -> None:
    """A .docx whose word/document.xml inflates to `real_mb` MB but whose zip directory says 1000 bytes."""
    para = b"<w:p><w:r><w:t>a</w:t></w:r></w:p>"
    body = (
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
        + para * (real_mb * 1_000_000 // len(para))
        + b"</w:body></w:document>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", body)
    data = buf.getvalue().replace(struct.pack("<I", len(body)), struct.pack("<I", 1000))
    path.write_bytes(data)


def _huge_page_pdf(path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=14_400, height=14_400)  # the largest page PDF allows (200 in)
    page.insert_text((100, 200), "Huge page marker text", fontsize=60)
    doc.save(path)


def _many_pages_pdf(path: Path, pages: int) -> None:
    doc = pymupdf.open()
    for n in range(pages):
        doc.new_page().insert_text((72, 72), f"Page {n} of a long report about solvent recovery")
    doc.save(path)


def _hostile_workspace(root: Path) -> dict[str, tuple[str, str | None]]:
    """Writes the workspace; returns {path: (status, error code)} expected for every file in it."""
    root.mkdir()
    (root / "home.md").write_text("# Home\n\nSee [[index]], [[other]] and [p](../../etc/passwd).\n", "utf-8")
    (root / "other.md").write_text("# Other\n\nBack [[home]]. ![[x.html]]\n", "utf-8")
    (root / "docs").mkdir()
    shutil.copy(FIXTURES / SPEC_PDF, root / "docs" / "spec.pdf")
    shutil.copy(FIXTURES / CHEM_DOCX, root / "docs" / "chem.docx")
    # our own output names, written by the workspace
    (root / "index.md").write_text("# Workspace index note\n\nIts own text.\n", "utf-8")
    (root / "ask.md").write_text("# Ask note\n", "utf-8")
    (root / "evidence.sqlite").write_bytes(b"not a database, and never our index")
    (root / "_headers").write_text("/*\n  X-Evil: 1\n", "utf-8")
    (root / "_static").mkdir()
    (root / "_static" / "site.css").write_text("body { display: none }", "utf-8")
    (root / "_search").mkdir()
    (root / "_search" / "manifest.md").write_text("# Not the search index's manifest\n", "utf-8")
    (root / "x.html").write_text("<script>fetch('/evidence.json')</script>", "utf-8")
    # things that are not regular files, and links that go nowhere
    os.mkfifo(root / "pipe.md")
    sock = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(root)  # a socket path is limited to ~108 bytes: bind relative to the root
    try:
        sock.bind("sock.pdf")
    finally:
        os.chdir(cwd)
        sock.close()
    (root / "loop").mkdir()
    os.symlink("b.md", root / "loop" / "a.md")
    os.symlink("a.md", root / "loop" / "b.md")
    os.symlink("self", root / "loop" / "self")
    os.symlink("/etc/passwd", root / "escape.md")
    # limits: declared sizes that lie, pixels, quadratic parsing, a page the size of a wall
    _underdeclared_docx(root / "bomb.docx")
    Image.new("1", (17_000, 17_000)).save(root / "big.png")  # 289 MP, 35 KB on disk
    (root / "brackets.md").write_text("[[" * 60_000, "utf-8")
    (root / "deep.md").write_text(
        "# Deep\n\n" + "> " * 40 + "deep quoted marker\n", "utf-8"
    )  # past maxNesting
    _huge_page_pdf(root / "huge.pdf")
    ok = ("ok", None)
    return {
        "home.md": ok,
        "other.md": ok,
        "docs/spec.pdf": ok,
        "docs/chem.docx": ok,
        "index.md": ok,
        "ask.md": ok,
        "_search/manifest.md": ok,
        "brackets.md": ok,
        "deep.md": ok,
        "huge.pdf": ok,
        "_static/site.css": ("unsupported", "unsupported_type"),
        "evidence.sqlite": ("unsupported", "unsupported_type"),
        "_headers": ("unsupported", "unsupported_type"),
        "x.html": ("unsupported", "unsupported_type"),
        "pipe.md": ("error", "not_regular_file"),
        "sock.pdf": ("error", "not_regular_file"),
        "loop/a.md": ("error", "symlink_broken"),
        "loop/b.md": ("error", "symlink_broken"),
        "loop/self": ("error", "symlink_broken"),
        "escape.md": ("error", "outside_root"),
        "bomb.docx": ("error", "docx_corrupt"),
        "big.png": ("error", "image_too_large"),
    }


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    root = base / "ws"
    expected = _hostile_workspace(root)
    out = base / "out #?%25 dir"  # every character a file: URI must escape
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    result = _cli(
        "build",
        str(root),
        "--out",
        str(out),
        "--json",
        "--no-ocr",
        "--jobs",
        "2",
        preexec=lambda: os.umask(0o022),
    )
    seconds = time.monotonic() - started
    rss_mb = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    return root, out, expected, result, seconds, rss_mb


def _db(out: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(out / "evidence.sqlite")  # a plain path: no URI to escape
    conn.row_factory = sqlite3.Row
    return conn


def test_hostile_build_completes_in_bounded_time_and_memory(hostile):
    _, _, _, result, seconds, rss_mb = hostile
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert seconds < MAX_SECONDS and rss_mb < MAX_RSS_MB, (seconds, rss_mb)


def test_every_hostile_file_has_its_status_and_code(hostile):
    root, out, expected, result, *_ = hostile
    rows = {
        r["source_root_relative_path"]: (r["status"], r["error_code"])
        for r in _db(out).execute("SELECT * FROM evidence_resource")
    }
    assert rows == expected
    summary = json.loads(result.stdout)
    assert {e["path"]: e["code"] for e in summary["errors"]} == {
        p: code for p, (status, code) in expected.items() if status == "error"
    }


def test_normal_files_lose_nothing_and_keep_their_urls(hostile):
    root, out, *_ = hostile
    conn = _db(out)
    blocks = dict(
        conn.execute(
            "SELECT r.source_root_relative_path, count(b.id) FROM evidence_resource r "
            "JOIN evidence_block b USING (resource_id) GROUP BY 1"
        ).fetchall()
    )
    for path in (
        "home.md",
        "other.md",
        "docs/spec.pdf",
        "docs/chem.docx",
        "index.md",
        "brackets.md",
        "huge.pdf",
    ):
        assert blocks.get(path, 0) > 0, path
    for path, url in (
        ("home.md", "home.html"),
        ("docs/spec.pdf", "docs/spec.pdf.html"),
        ("docs/chem.docx", "docs/chem.docx.html"),
    ):
        assert page_path(path) == url and (out / url).is_file()
    assert "Huge page marker" in " ".join(
        r[0]
        for r in conn.execute(
            "SELECT text FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = 'huge.pdf'"
        )
    )
    assert "deep quoted marker" in " ".join(
        r[0]
        for r in conn.execute(
            "SELECT text FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = 'deep.md'"
        )
    )
    assert "deep quoted marker" in (out / "deep.html").read_text("utf-8")
    # the traversal link is recorded, never followed
    assert (
        conn.execute("SELECT problem FROM evidence_link WHERE target = '../../etc/passwd'").fetchone()[0]
        == "outside_root"
    )


def test_workspace_files_never_overwrite_our_output(hostile):
    root, out, *_ = hostile
    conn = _db(out)  # the index is ours: a real database, not the workspace's bytes
    assert conn.execute("SELECT count(*) FROM evidence_resource").fetchone()[0] > 10
    assert (out / "_file" / "evidence.sqlite").read_bytes() == (root / "evidence.sqlite").read_bytes()
    ours = asset_dir("site_templates") / "_static" / "site.css"
    assert (out / "_static" / "site.css").read_bytes() == ours.read_bytes()
    headers = (out / "_headers").read_text("utf-8")  # ours, for static hosts
    assert "X-Evil" not in headers and "X-Content-Type-Options: nosniff" in headers
    assert (out / "_file" / "_headers").read_text("utf-8") == (root / "_headers").read_text("utf-8")
    index, ask = (out / "index.html").read_text("utf-8"), (out / "ask.html").read_text("utf-8")
    main = ask.split("<main", 1)[1].split("</main>", 1)[0]  # the explorer beside it lists the note
    assert "Ask note" not in main and 'id="ask"' in main
    # index.html is still the page we generate: the front page, which shows the workspace's index.md as
    # its home note beside our tree, with a link to the note's own page
    assert (
        'class="tree"' in index
        and 'class="note front-note"' in index
        and 'href="_page/index.md.html"' in index
    )
    note_page = out / page_path("index.md")
    assert page_path("index.md") == "_page/index.md.html" and "Its own text." in note_page.read_text("utf-8")
    # links and citation URLs into the relocated note open it, not the generated index
    assert 'href="_page/index.md.html' in (out / "home.html").read_text("utf-8")
    assert page_url("index.md", "b-1") == "_page/index.md.html#b-1"


def test_attachments_browsers_execute_are_copied_where_they_are_served_inert(hostile):
    root, out, *_ = hostile
    assert not (out / "x.html").exists() and (out / "_file" / "x.html").is_file()
    reserved = {
        p["path"] for p in json.loads(hostile[3].stdout)["site"]["problems"] if p["code"] == "reserved_name"
    }
    assert reserved == {
        "index.md",
        "ask.md",
        "evidence.sqlite",
        "_headers",
        "_static/site.css",
        "_search/manifest.md",
    }
    assert 'href="_file/x.html"' in (out / "other.html").read_text("utf-8") or 'src="_file/x.html"' in (
        out / "other.html"
    ).read_text("utf-8")
    headers = (out / "_headers").read_text("utf-8").split("\n/")
    rule = next(r for r in headers if r.startswith("_file/*"))
    assert "Content-Disposition: attachment" in rule and "sandbox" in rule
    assert 'http-equiv="Content-Security-Policy"' in (out / "home.html").read_text("utf-8")


def test_a_copy_an_older_build_left_beside_the_pages_is_removed(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    (root / "n.md").write_text("# N\n\n![[x.svg]]\n", "utf-8")
    (root / "x.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>")
    assert _cli("build", str(root), "--out", str(out), "--no-ocr").returncode == 0
    (out / "x.svg").write_bytes((root / "x.svg").read_bytes())  # as builds before _file/ copied it
    (root / "n.md").write_text("# N\n\n![[x.svg]] changed\n", "utf-8")
    assert _cli("build", str(root), "--out", str(out), "--no-ocr").returncode == 0
    assert not (out / "x.svg").exists() and (out / "_file" / "x.svg").is_file()


def test_huge_pdf_page_renders_within_the_pixel_cap(hostile):
    _, out, *_ = hostile
    images = list((out / "_pages").rglob("p1.*"))
    assert images, "the huge page got no page image"
    for image in images:
        with Image.open(image) as im:
            assert max(im.size) <= MAX_RENDER_SIDE and im.size[0] * im.size[1] <= MAX_RENDER_PIXELS


def test_generated_files_follow_the_umask(hostile):
    _, out, *_ = hostile
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 20
    unreadable = [str(p.relative_to(out)) for p in files if (p.stat().st_mode & 0o777) != 0o644]
    assert not unreadable


def test_a_second_build_still_succeeds_and_changes_nothing(hostile):
    root, out, expected, *_ = hostile
    result = _cli("build", str(root), "--out", str(out), "--json", "--no-ocr", "--jobs", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["parsed"] == 0 and summary["stale"] == 0 and summary["removed"] == 0


def test_unbalanced_wikilinks_parse_in_linear_time(tmp_path):
    """120 KB of `[[` took 33 s (quadratic); 4x the text must cost far less than 16x the time."""

    def seconds(size: int) -> float:
        (tmp_path / f"n{size}.md").write_text("[[" * (size // 2), "utf-8")
        best = float("inf")
        for _ in range(2):
            started = time.perf_counter()
            MarkdownProvider().parse(ParseInput(tmp_path, f"n{size}.md", "sha256:x"))
            best = min(best, time.perf_counter() - started)
        return best

    small, large = seconds(30_000), seconds(120_000)
    assert large / small < 9, (small, large)


# -- workers: they die with the build, and each parse has a budget ------------------------------


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _alive(procs: list[psutil.Process]) -> list[int]:
    alive = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p.pid)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.fixture(scope="module")
def long_pdfs(tmp_path_factory):
    root = tmp_path_factory.mktemp("long") / "ws"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nPlain.\n", "utf-8")
    for n in range(4):
        _many_pages_pdf(root / f"report{n}.pdf", 1500)
    return root


def test_killing_the_build_leaves_no_worker_alive(long_pdfs, tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mnote_evidence",
            "build",
            str(long_pdfs),
            "--out",
            str(tmp_path / "out"),
            "--no-ocr",
            "--no-site",
            "--jobs",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        workers: list[psutil.Process] = []
        while time.monotonic() < deadline and proc.poll() is None:
            workers = _descendants(proc.pid)
            if len(workers) >= 3:  # the forkserver and two parsing workers
                break
            time.sleep(0.1)
        assert len(workers) >= 3 and proc.poll() is None, "the build never started its workers"
        time.sleep(1.0)  # mid-parse
        workers = _descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 15
        while _alive(workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(workers)
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in _descendants(proc.pid):
            p.kill()


def test_a_parse_past_its_time_budget_is_a_recorded_error(long_pdfs, tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    # a fresh copy: sidecars another build left in the workspace would be reused, not parsed
    shutil.copytree(long_pdfs, root, ignore=shutil.ignore_patterns(".mnote", "*.ocr"))
    result = _cli(
        "build",
        str(root),
        "--out",
        str(out),
        "--json",
        "--no-ocr",
        "--no-site",
        "--jobs",
        "2",
        env={"MNOTE_PARSE_SECONDS": "0.05"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {
        r["source_root_relative_path"]: (r["status"], r["error_code"])
        for r in _db(out).execute("SELECT * FROM evidence_resource")
    }
    assert rows["note.md"] == ("ok", None)
    assert {rows[f"report{n}.pdf"] for n in range(4)} == {("error", "parse_timeout")}


def _allocate(megabytes: int) -> str:
    try:
        return str(len(bytearray(megabytes * 1024 * 1024)))
    except MemoryError:
        return "MemoryError"


def test_a_worker_past_its_memory_budget_gets_a_memory_error():
    with worker_pool(1, memory_mb=512) as pool:
        assert pool.submit(_allocate, 2048).result() == "MemoryError"
        assert pool.submit(_allocate, 16).result() == str(16 * 1024 * 1024)  # the worker lives on


# -- storage errors: one line, nothing half-written, the old index kept -------------------------


def test_disk_full_is_one_line_and_keeps_the_previous_index(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nfirst\n", "utf-8")
    out = tmp_path / "out"
    assert _cli("build", str(root), "--out", str(out), "--no-ocr").returncode == 0
    before = (out / "evidence.sqlite").read_bytes()
    (root / "b.md").write_text("# B\n\n" + "more text. " * 20_000, "utf-8")

    def small_disk() -> None:  # writes past 64 KB fail with EFBIG, as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))

    result = _cli("build", str(root), "--out", str(out), "--no-ocr", preexec=small_disk)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stderr.strip().startswith("Error: cannot write")
    assert len(result.stderr.strip().splitlines()) == 1
    assert (out / "evidence.sqlite").read_bytes() == before
    assert not [p for p in [*out.rglob("*"), *root.rglob("*")] if p.name.endswith(".tmp")]


# -- secrets: one redaction, wherever a message is stored or returned ---------------------------


def test_redaction_masks_url_credentials_tokens_and_secret_values(monkeypatch):
    monkeypatch.setenv("LIGHTRAG_API_KEY", "sk-live-abc123")
    monkeypatch.setenv("MINERU_TOKEN", "tok/en+with=chars")
    text = redact(
        "GET http://user:pa55@rag.local/q failed: key sk-live-abc123, "
        "Authorization: Bearer eyJhbGciOi.x, token tok%2Fen%2Bwith%3Dchars"
    )
    for secret in ("user:pa55", "sk-live-abc123", "eyJhbGciOi", "tok%2Fen", "pa55"):
        assert secret not in text
    assert "http://***@rag.local/q" in text
    assert redact("see https://example.org/a@b and [[note]]") == "see https://example.org/a@b and [[note]]"


def test_upstream_errors_and_api_answers_are_redacted(monkeypatch):
    monkeypatch.setenv("LIGHTRAG_API_KEY", "sk-live-abc123")
    assert "sk-live-abc123" not in LightRagError("knowledge_rag_rejected", "bad key sk-live-abc123").message

    def handler(request: dict) -> dict:
        raise HandlerError("upstream said: invalid key sk-live-abc123 for http://u:p@h/")

    status, body = call(handler, {})
    assert status == 400 and "sk-live-abc123" not in json.dumps(body) and "u:p@" not in json.dumps(body)
