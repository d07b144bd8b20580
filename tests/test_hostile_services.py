"""Hostile services, terminals and processes (docs/security.md): a LightRAG server that answers
garbage or drips its reply, notes and answers that carry terminal escapes, and a `serve --watch`
killed while it rebuilds.

Every service here is real: LightRAG is a loopback `http.server` written below that sends each
hostile reply byte for byte; the commands are real `mnote-evidence` processes.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import psutil
import pytest

from mnote_evidence.build.knowledge.lightrag import MAX_REPLY_BYTES, LightRagConfig
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from tests.conftest import connect, run_build
from tests.servers import start_serve, stop
from tests.test_hostile import _alive, _many_pages_pdf

DRIP_SECONDS = 0.5


def reply(value, status: int = 200, **headers: str) -> bytes:
    """A whole HTTP/1.1 response whose body is `value` (bytes as they are, anything else as JSON)."""
    body = value if isinstance(value, bytes) else json.dumps(value).encode()
    fields = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    fields.update((k.replace("_", "-"), v) for k, v in headers.items())
    head = [f"HTTP/1.1 {status} X", *(f"{k}: {v}" for k, v in fields.items())]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class HostileLightRag:
    """A loopback LightRAG stand-in: `replies` maps a path (or a path prefix ending in `/`) to the raw
    response sent for it, one byte every DRIP_SECONDS for the paths in `drip`."""

    def __init__(self):
        self.replies: dict[str, bytes] = {}
        self.drip: set[str] = set()
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.split("?")[0]
                key = path if path in server.replies else path.rpartition("/")[0] + "/"
                raw = server.replies.get(key, reply({"detail": "Not Found"}, 404))
                step = 1 if key in server.drip else len(raw)
                try:
                    for i in range(0, len(raw), step):
                        if step == 1 and server.stop.wait(DRIP_SECONDS):
                            return
                        self.wfile.write(raw[i : i + step])
                        self.wfile.flush()
                except OSError:  # the client gave up (a deadline, a size cap): what is tested
                    self.close_connection = True

            do_GET = do_POST = do_DELETE = _reply

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, replies: dict[str, bytes], drip: set[str] = frozenset()) -> None:
        self.replies, self.drip = replies, set(drip)

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def hostile():
    server = HostileLightRag()
    yield server
    server.close()


def _cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mnote_evidence", *args],
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def small_site(tmp_path_factory):
    """A built workspace of two notes (no site pages: the knowledge functions need only the index)."""
    base = tmp_path_factory.mktemp("small")
    (base / "ws").mkdir()
    (base / "ws" / "alpha.md").write_text("# Alpha\n\nThe zebrafish retina regenerates.\n", "utf-8")
    (base / "ws" / "beta.md").write_text("# Beta\n\nThe axolotl limb regrows.\n", "utf-8")
    run_build(base / "ws", base / "out")
    return base / "ws", base / "out"


# Each case: the replies to LightRAG's query paths, every one of the wrong shape for its path
# (lightrag-hku 1.5's API), or broken for any path (not JSON, too deep, too big).
DEEP = b"[" * 200_000 + b"]" * 200_000
BAD_HEALTH = reply({"status": "healthy", "configuration": {"llm_model": ["m"]}})
FOR_ANY_PATH = {
    "a list for an object": reply([1, 2]),
    "not JSON": reply(b"<html>gateway</html>"),
    "nested past the parser's stack": reply(DEEP),
    "a body over the cap": reply(b'{"response": "' + b"x" * (MAX_REPLY_BYTES + 1) + b'"}'),
    "a declared length over the cap": reply(b"{}", Content_Length=str(MAX_REPLY_BYTES * 4)),
}
HOSTILE_REPLIES = {
    **{case: dict.fromkeys(("/query", "/query/data", "/health"), raw) for case, raw in FOR_ANY_PATH.items()},
    "numbers for text": {
        "/query": reply({"response": 42, "references": []}),
        "/query/data": reply(
            {"status": "success", "data": {"chunks": [{"content": 5, "file_path": "a.md"}]}}
        ),
        "/health": reply({"status": "healthy", "core_version": 1.5}),
    },
    "lists for text": {
        "/query": reply({"response": "a [1]", "references": [{"reference_id": "1", "file_path": ["a.md"]}]}),
        "/query/data": reply({"status": "success", "data": {"references": [{"reference_id": {"n": 1}}]}}),
        "/health": BAD_HEALTH,
    },
    "text for lists": {
        "/query": reply({"response": "a [1]", "references": "r"}),
        "/query/data": reply({"status": "success", "data": {"chunks": "c", "references": "r"}}),
        "/health": reply({"status": "healthy", "rerank_queue_status": ["x"]}),
    },
    "fields missing": {
        "/query": reply({"references": []}),
        "/query/data": reply({"status": "success"}),
        "/health": BAD_HEALTH,
    },
}


@pytest.mark.parametrize("case", sorted(HOSTILE_REPLIES))
def test_hostile_lightrag_replies_are_reasons_over_http_never_500(hostile, small_site, case):
    """A real `serve`: every /-/knowledge/* route answers a hostile reply with ok:false (status:
    healthy:false) and the reason `knowledge_rag_bad_response`, as JSON, never a 500."""
    _, out = small_site
    hostile.answer(HOSTILE_REPLIES[case])
    served = _served(out, hostile.url)
    for route in ("query", "ask"):
        got = httpx.post(f"{served}/-/knowledge/{route}", json={"query": "zebrafish retina"}, timeout=30)
        assert got.status_code == 200, (route, got.text[:300])
        body = got.json()
        assert body["ok"] is False and body["degradedReason"] == "knowledge_rag_bad_response", body
        assert "Traceback" not in got.text
    health = httpx.get(f"{served}/-/knowledge/status", timeout=30)
    assert health.status_code == 200, health.text[:300]
    assert health.json()["healthy"] is False and health.json()["reason"] == "knowledge_rag_bad_response"


_SERVES: dict[tuple, tuple] = {}


def _served(out: Path, url: str) -> str:
    """One real `serve` per site and LightRAG URL for the module (stopped at exit)."""
    key = (out, url)
    if key not in _SERVES:
        _SERVES[key] = start_serve(out, "--lightrag-url", url, "--lightrag-timeout", "5")
    return _SERVES[key][1]


@pytest.fixture(scope="module", autouse=True)
def _stop_serves():
    yield
    for proc, _ in _SERVES.values():
        stop(proc)
    _SERVES.clear()


@pytest.mark.parametrize("case", sorted(HOSTILE_REPLIES))
def test_ask_answers_a_hostile_reply_with_a_reason_not_a_traceback(hostile, small_site, case):
    """`ask`, a real process: a clear `no answer [knowledge_rag_bad_response]`, exit 1, no traceback."""
    _, out = small_site
    hostile.answer(HOSTILE_REPLIES[case])
    done = _cli(
        "ask", "zebrafish retina", "--site", str(out), "--lightrag-url", hostile.url, "--timeout", "5"
    )
    err = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in err, err[-2000:]
    assert "[knowledge_rag_bad_response]" in err


def test_a_server_dripping_its_status_line_cannot_hold_ask_past_its_timeout(hostile, small_site):
    """One byte every 0.5 s from the first byte of the status line on: `ask --timeout 2` ends within
    about 3 s (2 s, plus the process's start) with the reason `knowledge_rag_timeout`."""
    _, out = small_site
    paths = ("/query", "/query/data")
    hostile.answer(dict.fromkeys(paths, reply({"response": "x" * 200})), drip=set(paths))
    started = time.monotonic()
    done = _cli(
        "ask", "zebrafish retina", "--site", str(out), "--lightrag-url", hostile.url, "--timeout", "2"
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 1 and "[knowledge_rag_timeout]" in done.stderr.decode()
    assert elapsed < 3.5, elapsed


LONE = (
    "\ud800"  # a lone surrogate: `json.dumps` writes it as the escape `\\ud800`, `json.loads` reads it back
)
RETRIEVED = {  # a /query/data reply of the right shape: one chunk of alpha.md
    "status": "success",
    "data": {
        "chunks": [
            {
                "reference_id": "1",
                "content": "The zebrafish retina regenerates.",
                "file_path": "alpha.md",
                "chunk_id": "c1",
            }
        ],
        "references": [{"reference_id": "1", "file_path": "alpha.md"}],
    },
}


def _ask(hostile: HostileLightRag, out: Path, *options: str) -> subprocess.CompletedProcess:
    return _cli(
        "ask",
        "zebrafish retina",
        "--site",
        str(out),
        "--lightrag-url",
        hostile.url,
        "--timeout",
        "5",
        *options,
    )


def test_a_lone_surrogate_in_a_reply_reaches_every_answer_as_a_replacement_character(hostile, small_site):
    """Lone surrogates in /query and /query/data strings (answer, chunk, reference id and path): `ask`,
    `ask --json` and serve's /-/knowledge/ask answer, each with U+FFFD in their place."""
    _, out = small_site
    chunk = {**RETRIEVED["data"]["chunks"][0], "content": f"The zebrafish {LONE} retina regenerates."}
    references = [*RETRIEVED["data"]["references"], {"reference_id": "\udfff", "file_path": f"{LONE}.md"}]
    hostile.answer(
        {
            "/query/data": reply(
                {"status": "success", "data": {"chunks": [chunk], "references": references}}
            ),
            "/query": reply({"response": f"{LONE} lone [1]", "references": references}),
        }
    )
    text = _ask(hostile, out)
    assert text.returncode == 0 and b"Traceback" not in text.stderr, text.stderr[-2000:]
    assert "\ufffd lone" in text.stdout.decode()
    as_json = _ask(hostile, out, "--json")
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    assert json.loads(as_json.stdout)["answer"] == "\ufffd lone [1]"
    got = httpx.get(
        f"{_served(out, hostile.url)}/-/knowledge/ask", params={"query": "zebrafish retina"}, timeout=30
    )
    assert got.status_code == 200, got.text[:300]
    body = got.json()
    assert body["ok"] is True and body["answer"] == "\ufffd lone [1]", body
    assert "\ufffd.md" in [r["filePath"] for r in body["references"]]


def test_ask_whose_answer_fails_after_retrieval_prints_the_reason_and_exits_1(hostile, small_site):
    """/query/data answers, /query answers garbage: `ask` prints one line with the reason and exits 1;
    `ask --json` exits 1 with the retrieval's answer (one chunk) and the reason, degraded."""
    _, out = small_site
    hostile.answer({"/query/data": reply(RETRIEVED), "/query": reply(b"<html>gateway</html>")})
    text = _ask(hostile, out)
    err = text.stderr.decode()
    assert text.returncode == 1 and "Traceback" not in err, err[-2000:]
    assert err.strip().count("\n") == 0 and "[knowledge_rag_bad_response]" in err and "/query" in err, err
    as_json = _ask(hostile, out, "--json")
    assert as_json.returncode == 1, as_json.stderr[-2000:]
    body = json.loads(as_json.stdout)
    assert body["degraded"] is True and body["degradedReason"] == "knowledge_rag_bad_response", body
    assert body["answer"] is None and body["diagnostics"]["chunkCount"] == 1, body


# Ingest replies of the wrong shape: each makes the whole ingest fail, never the build.
INGEST_REPLIES = {
    "a track id that is a list": {"/documents/texts": reply({"track_id": ["t"]})},
    "documents with a list for a file name": {
        "/documents/texts": reply({"status": "success", "track_id": "t1"}),
        "/documents/track_status/": reply(
            {"documents": [{"id": "doc-1", "status": "processed", "file_path": ["alpha.md"]}]}
        ),
    },
    "documents nested past the parser's stack": {
        "/documents/texts": reply({"status": "success", "track_id": "t1"}),
        "/documents/track_status/": reply(DEEP),
    },
    "an insert reply over the cap": {"/documents/texts": reply(b"[" + b" " * (MAX_REPLY_BYTES + 1) + b"]")},
}


@pytest.mark.parametrize("case", sorted(INGEST_REPLIES))
def test_a_hostile_ingest_reply_is_recorded_and_the_build_completes(hostile, tmp_path, case):
    """A real build into a hostile LightRAG: the index and every note are written, the ingest's
    failure is the report's knowledge error, and each file is recorded `status=error` (retried)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "alpha.md").write_text("# Alpha\n\nThe zebrafish retina regenerates.\n", "utf-8")
    hostile.answer(INGEST_REPLIES[case])
    report = run_build(root, tmp_path / "out", lightrag=LightRagConfig(hostile.url, timeout=5))
    assert report.knowledge["error"].startswith("knowledge_rag_bad_response"), report.knowledge
    with connect(tmp_path / "out") as db:
        assert [r[0] for r in db.execute("SELECT status FROM knowledge_source")] == ["error"]
        assert db.execute("SELECT count(*) FROM evidence_resource WHERE status = 'ok'").fetchone()[0] == 1


# Terminal escapes a note, a file name or an answer may carry: OSC 52 (write the clipboard), clear
# the screen, a C1 CSI, a bidi override. None may reach a terminal as it is.
ESCAPES = "\x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b[2J \x9b31m \u202e"
RAW = [b"\x1b", b"\x07", "\x9b".encode(), "\u202e".encode()]


def _assert_inert(out: bytes) -> None:
    assert not [r for r in RAW if r in out], out[-600:]


@pytest.fixture(scope="module")
def escaping_site(tmp_path_factory):
    """A workspace whose note text and file names carry ESCAPES (one file unreadable: an error line),
    built by the real CLI."""
    base = tmp_path_factory.mktemp("esc")
    root = base / "ws"
    root.mkdir()
    (root / f"notes {ESCAPES}.md").write_text(
        f"# Zebrafish {ESCAPES}\n\nzebrafish retina {ESCAPES}\n", "utf-8"
    )
    (root / f"broken {ESCAPES}.pdf").write_bytes(b"%PDF-1.7 not really")
    done = _cli("build", str(root), "--out", str(base / "out"), "--no-site", "--no-ocr")
    assert done.returncode == 0, done.stderr[-2000:]
    return base / "out", done


def test_build_shows_escapes_in_file_names_without_obeying_them(escaping_site):
    _, built = escaping_site
    _assert_inert(built.stdout + built.stderr)
    assert b"broken \\x1b]52;c;" in built.stderr  # the unreadable file's error line: shown, not obeyed


def test_search_shows_escapes_from_notes_and_file_names_without_obeying_them(escaping_site):
    out, _ = escaping_site
    done = _cli("search", "zebrafish", "--site", str(out))
    assert done.returncode == 0, done.stderr
    _assert_inert(done.stdout + done.stderr)
    text = done.stdout.decode()
    assert "\\x1b]52;c;ZWNobyBwd25lZA==\\x07" in text and "\\x1b[2J" in text and "\\x9b31m" in text
    assert "\\u202e" in text and text.count("notes \\x1b]52") >= 1  # the file name too


def test_search_json_keeps_the_text_and_escapes_c1_and_bidi(escaping_site):
    out, _ = escaping_site
    done = _cli("search", "zebrafish", "--site", str(out), "--json")
    _assert_inert(done.stdout)
    body = json.loads(done.stdout)
    assert ESCAPES in body["results"][0]["quote"]  # the same text, only written escaped
    assert b"\\u009b" in done.stdout and b"\\u202e" in done.stdout


def test_ask_shows_escapes_from_the_answer_without_obeying_them(escaping_site, hostile):
    out, _ = escaping_site
    hostile.answer(
        {
            "/query/data": reply({"status": "failure", "data": {}}),
            "/query": reply({"response": f"It regenerates {ESCAPES} [1]", "references": []}),
        }
    )
    done = _cli("ask", "zebrafish retina", "--site", str(out), "--lightrag-url", hostile.url)
    assert done.returncode == 0, done.stderr
    _assert_inert(done.stdout + done.stderr)
    assert "It regenerates \\x1b]52;c;" in done.stdout.decode()
    as_json = _cli("ask", "zebrafish retina", "--site", str(out), "--lightrag-url", hostile.url, "--json")
    _assert_inert(as_json.stdout)
    assert ESCAPES in json.loads(as_json.stdout)["answer"]


def test_an_error_message_shows_escapes_without_obeying_them(escaping_site, hostile):
    """LightRAG rejecting a question with a message full of escapes: the error line is inert."""
    out, _ = escaping_site
    hostile.answer({"/query/data": reply({"detail": f"no {ESCAPES}"}, 422)})
    done = _cli("ask", "zebrafish retina", "--site", str(out), "--lightrag-url", hostile.url)
    assert done.returncode == 1 and b"no \\x1b]52;c;" in done.stderr
    _assert_inert(done.stdout + done.stderr)


def test_search_on_a_terminal_marks_terms_in_bold_and_obeys_nothing_else(escaping_site):
    """`search` writing to a pseudo-terminal: its own bold codes are the only escapes written."""
    out, _ = escaping_site
    main, tty = pty.openpty()
    env = {**os.environ, "NO_COLOR": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnote_evidence", "search", "zebrafish", "--site", str(out)],
        stdout=tty,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(tty)
    written = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the process closed its terminal
            break
        if not chunk:
            break
        written += chunk
    os.close(main)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert b"\x1b[1mzebrafish\x1b[22m" in written.lower()
    _assert_inert(written.replace(b"\x1b[1m", b"").replace(b"\x1b[22m", b""))


# -- a killed `serve --watch` leaves no rebuild behind -------------------------------------------------


def _rebuild_processes(serve_pid: int) -> list[psutil.Process]:
    """The `build` child of a `serve --watch` and everything under it (its forkserver, its workers)."""
    try:
        children = psutil.Process(serve_pid).children()
    except psutil.NoSuchProcess:
        return []
    builds = [c for c in children if "build" in c.cmdline()]
    return [p for b in builds for p in [b, *b.children(recursive=True)]]


def test_killing_serve_watch_mid_rebuild_leaves_no_rebuild_process_and_the_index_intact(tmp_path):
    """`kill -9` of a real `serve --watch` while its rebuild parses 4,500 PDF pages in two workers:
    within seconds no process of the rebuild runs, and the served evidence.sqlite is the previous one,
    whole."""
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nsolvent recovery\n", "utf-8")
    run_build(root, out, site=True, ocr=OcrSettings(engine="none"), max_page_images=1)
    _many_pages_pdf(tmp_path / "report.pdf", 1500)
    for n in range(3):
        shutil.copy(tmp_path / "report.pdf", tmp_path / f"report{n}.pdf")
    proc, _ = start_serve(out, "--watch", str(root), "--no-ocr", "--max-page-images", "1", "--jobs", "2")
    rebuild: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while _rebuild_processes(proc.pid) and time.monotonic() < deadline:  # the catch-up build
            time.sleep(0.1)
        before = (out / "evidence.sqlite").read_bytes()
        for n in range(3):
            (tmp_path / f"report{n}.pdf").rename(root / f"report{n}.pdf")
        (root / "note.md").write_text("# Note\n\nsolvent recovery, edited\n", "utf-8")
        deadline = time.monotonic() + 60
        while len(rebuild) < 4 and time.monotonic() < deadline:  # build, forkserver, two workers
            rebuild = _rebuild_processes(proc.pid)
            time.sleep(0.1)
        assert len(rebuild) >= 4, "the rebuild never started its workers"
        time.sleep(1.0)  # mid-parse
        rebuild = _rebuild_processes(proc.pid)
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 10
        while _alive(rebuild) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive(rebuild) == []
    finally:
        proc.kill()
        proc.communicate()
        for p in rebuild:
            if _alive([p]):
                p.kill()
    assert (out / "evidence.sqlite").read_bytes() == before
    with connect(out) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
