"""`mnote-evidence serve --watch`: one real server process, a workspace edited under it."""

from __future__ import annotations

import fcntl
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
from click.testing import CliRunner

from mnote_evidence.build.cli.main import main
from tests.conftest import connect, copy_workspace, run_build, shoot
from tests.servers import free_port, start_serve, stop, wait_until_up

WAIT_SECONDS = 60  # failure detection only; the measured latency is printed and benchmarked


@pytest.fixture
def served(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    out = tmp_path / "out"
    run_build(root, out, site=True)
    proc, base = start_serve(out, "--watch", str(root), "--jobs", "1")
    yield root, out, base, proc
    stop(proc)


def wait_for(base: str, query: str, present: bool = True) -> float:
    started = time.monotonic()
    while time.monotonic() - started < WAIT_SECONDS:
        results = httpx.get(base + "/-/evidence/search", params={"q": query}, timeout=10).json()["results"]
        if bool(results) == present:
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError(f"{query!r} {'never appeared' if present else 'never disappeared'}")


def test_watch_rebuilds_and_serves_new_text_without_errors(served):
    root, out, base, proc = served
    errors, latencies, stop_flag = [], [], threading.Event()

    def client() -> None:  # bounded: stops when the test says so, or after WAIT_SECONDS
        deadline = time.monotonic() + WAIT_SECONDS
        with httpx.Client(timeout=10) as http:
            while not stop_flag.is_set() and time.monotonic() < deadline:
                for q in ("retention period", "线程作用域", "吗啉"):
                    t = time.monotonic()
                    r = http.get(base + "/-/evidence/search", params={"q": q})
                    latencies.append(time.monotonic() - t)
                    if r.status_code != 200 or not r.json()["results"]:
                        errors.append((q, r.status_code))

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    (root / "Inbox/Fresh Note.md").write_text("# Fresh\n\nThe quokka zymurgy protocol.\n", "utf-8")
    first = wait_for(base, "quokka zymurgy")
    note = root / "Archive/Old Ideas.md"
    note.write_text(note.read_text("utf-8") + "\nA second edit mentions platypus.\n", "utf-8")
    second = wait_for(base, "platypus")
    (root / "Inbox/Fresh Note.md").unlink()
    wait_for(base, "quokka zymurgy", present=False)  # deleted -> stale -> not searchable
    stop_flag.set()
    for t in threads:
        t.join()
    print(f"save -> searchable: {first:.2f}s, {second:.2f}s; {len(latencies)} requests during rebuilds")
    assert errors == [] and len(latencies) > 50
    page = httpx.get(base + "/-/evidence/site/Inbox/Fresh%20Note.html", timeout=10)
    assert page.status_code == 200 and "quokka" in page.text  # its stale page, still served


def test_search_box_uses_the_server(served, page):
    _, out, base, _ = served
    page.goto(base + "/-/evidence/site/index.html")
    page.fill("form.search input", "吗啉")
    page.press("form.search input", "Enter")
    page.wait_for_selector("#search-results .result")
    first = page.eval_on_selector("#search-results .result", "a => a.getAttribute('href')")
    assert first.startswith("/-/evidence/site/") and "#b-" in first
    shoot(page, "served-search-box")
    page.click("#search-results .result")
    page.wait_for_load_state("load")
    target = page.evaluate("decodeURIComponent(location.hash.slice(1))")
    assert (
        page.eval_on_selector(f'[id="{target}"]', "el => getComputedStyle(el).outlineColor")
        == "rgb(230, 119, 0)"
    )
    # the same site opened from disk says what to do instead of failing silently
    page.goto((out / "index.html").as_uri())
    page.fill("form.search input", "吗啉")
    page.press("form.search input", "Enter")
    assert "mnote-evidence serve" in page.inner_text("#notice")
    assert page.console_errors == []


def test_watch_catches_up_at_start_and_retries_a_failed_rebuild(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    out = tmp_path / "out"
    run_build(root, out, site=True)
    (root / "Inbox/Offline.md").write_text("# Offline\n\nWritten while no server ran: wombat.\n", "utf-8")
    proc, base = start_serve(out, "--watch", str(root), "--jobs", "1")
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_for(base, "wombat")  # nothing changed after the start: the catch-up build found it
        with open(out / ".build.lock", "w") as lock:  # a build by hand is writing: the watcher's fails
            fcntl.flock(lock, fcntl.LOCK_EX)
            (root / "Inbox/Offline.md").write_text("# Offline\n\nNow about a numbat.\n", "utf-8")
            wait_for_line(lines, "rebuild failed")
        retried = wait_for(base, "numbat")  # no further change: the watcher retried by itself
        wait_for_line(lines, "retrying the failed rebuild")
    finally:
        stop(proc)
        reader.join(timeout=10)
    print(f"retry searchable {retried:.2f}s after the lock was released")
    assert any("catching up" in line for line in lines)


def test_watch_rebuilds_with_the_build_flags_serve_was_given(tmp_path):
    """`serve --watch … --no-ocr --max-page-images 1`: the catch-up and every rebuild keep OCR off and the
    cap (before, the watcher ran a bare `build`: OCR back on, every page image rendered)."""
    import pymupdf
    from PIL import Image

    from mnote_evidence.build.parse.ocr.settings import OcrSettings

    root, out = tmp_path / "ws", tmp_path / "out"
    (root / "Note.assets").mkdir(parents=True)
    Image.new("RGB", (200, 80), "white").save(root / "Note.assets/pic.png")
    doc = pymupdf.open()
    for n in (1, 2):
        doc.new_page().insert_text((72, 100), f"Leaf {n} of the pamphlet.", fontsize=12)
    doc.save(root / "Note.assets/two.pdf")
    note = root / "Note.md"
    note.write_text("# Note\n\n![pic](Note.assets/pic.png) [pdf](Note.assets/two.pdf)\n", "utf-8")
    run_build(root, out, site=True, ocr=OcrSettings(engine="none"), max_page_images=1)
    proc, base = start_serve(out, "--watch", str(root), "--jobs", "1", "--no-ocr", "--max-page-images", "1")
    try:
        note.write_text(note.read_text("utf-8") + "\nEdited under the watcher: bandicoot.\n", "utf-8")
        wait_for(base, "bandicoot")
    finally:
        stop(proc)
    with connect(out) as conn:
        version = conn.execute(
            "SELECT provider_version FROM evidence_resource "
            "WHERE source_root_relative_path = 'Note.assets/pic.png'"
        ).fetchone()[0]
    assert "+ocr:" not in version  # the image was not re-parsed with OCR on
    assert sorted(p.name for p in (out / "_pages").rglob("p*.*")) == ["p1.jpg"]  # the cap held


def wait_for_line(lines: list[str], text: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not any(text in line for line in lines):
        assert time.monotonic() < deadline, "".join(lines)
        time.sleep(0.1)


def test_serve_refuses_a_busy_port_before_printing_urls(stale_site):
    _, out = stale_site
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "mnote_evidence", "serve", str(out), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode != 0
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "http://" not in result.stdout + result.stderr and "Traceback" not in result.stderr


def test_serve_refuses_a_notes_folder_with_the_right_suggestion(workspace):
    result = CliRunner().invoke(main, ["serve", str(workspace)])
    assert result.exit_code != 0
    assert (
        f"mnote-evidence build {workspace}" in result.output and "mnote-evidence serve _site" in result.output
    )
    assert "--out" not in result.output


def test_watch_into_an_empty_site_folder_builds_first(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    out = tmp_path / "site"  # does not exist yet: `serve _site --watch NOTES`, as the refusal suggests
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [
        sys.executable,
        "-m",
        "mnote_evidence",
        "serve",
        str(out),
        "--port",
        str(port),
        "--watch",
        str(root),
        "--jobs",
        "2",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_up(base + "/-/versions.json", proc, timeout=WAIT_SECONDS * 2)
        assert (out / "evidence.sqlite").is_file() and (out / "index.html").is_file()
        assert httpx.get(base + "/-/evidence/search", params={"q": "吗啉"}, timeout=10).json()["results"]
    finally:
        stop(proc)


def test_bound_socket_is_tcp_so_responses_are_not_delayed():
    """asyncio disables Nagle only on sockets whose proto is TCP; with proto 0 every response of
    `serve` waited ~40 ms for a delayed ACK (measured: 170 vs 990 requests/s, 8 clients)."""
    from mnote_evidence.functions.adapters.serve import ServeError, bind

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP and sock.type == socket.SOCK_STREAM
        with pytest.raises(ServeError, match="already in use"):
            sock.listen()
            bind("127.0.0.1", sock.getsockname()[1])
    finally:
        sock.close()


def test_serve_with_a_lightrag_url_names_the_ask_page_a_static_build_does_not_link(stale_site):
    """The pages link Ask only when the build had a LightRAG URL; `serve --lightrag-url` on a site built
    without one says where the Ask page is instead (the served files are not rewritten)."""
    _, out = stale_site
    assert "ask-link" not in (out / "index.html").read_text("utf-8")
    proc, base = start_serve(out, "--lightrag-url", "http://127.0.0.1:9")
    try:
        assert httpx.get(base + "/-/evidence/site/ask.html", timeout=30).status_code == 200
    finally:
        output = stop(proc)
    assert f"Ask page:       {base}/-/evidence/site/ask.html" in output
    proc, base = start_serve(out)  # no knowledge server: no Ask line
    output = stop(proc)
    assert "Ask page" not in output and "Evidence site:" in output
