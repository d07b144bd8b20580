"""Hostile serving (docs/security.md): attachments, SQL answers and MCP tool arguments, over real
processes: a real `mnote-evidence build` of a workspace of attachments, a real `serve` of it, and a
real `mnote-evidence mcp` over stdio.

- every attachment that is not of a known inert type (PDF, raster images, audio, video, plain text)
  is copied under `_file/` and served as a sandboxed `application/octet-stream` download, whatever
  its suffix or case, by `serve` and by the `_headers` rules for static hosts;
- valid SQL is answered (never a 500), within a row, time and byte budget, and no answer shows a
  server path;
- every MCP tool call gets an answer, and junk locator arguments are tool errors with a message.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import psutil
import pymupdf
import pytest
from PIL import Image

from mnote_evidence.functions.adapters.datasette_plugin import SITE_BASE
from tests.servers import start_serve, stop

SCRIPT = "<script>fetch('/evidence.json?sql=select+1')</script>\n"
# name -> expected served type; None: a download
ATTACHMENTS = {
    "report.xhtm": None,
    "x.es": None,
    "a.svg": None,
    "b.XHTML": None,
    "data.qqq": None,
    "LICENSE": None,
    "two.pdf.xhtm": None,
    "deep/c.SVGZ": None,
    "p.png": "image/png",
    "P2.PNG": "image/png",
    "t.txt": "text/plain",
}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mnote_evidence", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(workspace, site, serve's base URL): a note embedding every attachment, built and served."""
    tmp = tmp_path_factory.mktemp("serving")
    root, out = tmp / "ws", tmp / "out"
    (root / "deep").mkdir(parents=True)
    for name, kind in ATTACHMENTS.items():
        if kind and kind.startswith("image/"):
            Image.new("RGB", (4, 4)).save(root / name, format="PNG")
        else:
            (root / name).write_text(SCRIPT, "utf-8")
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "A page with one line of evidence.")
    doc.save(root / "d.pdf")
    links = " ".join(f"![[{name}]]" for name in ATTACHMENTS)
    (root / "n.md").write_text(f"# N\n\nAttachments: {links}\n", "utf-8")
    assert _cli("build", str(root), "--out", str(out), "--no-ocr").returncode == 0
    proc, base = start_serve(out)
    yield root, out, base, proc
    stop(proc)


def _links(page: Path) -> dict[str, str]:
    """Attachment name -> the href (or img src) the page gives it."""
    html = page.read_text("utf-8")
    found = {}
    for name in ATTACHMENTS:
        quoted = re.escape(name.split("/")[-1])
        match = re.search(rf'(?:src|href)="((?:[^"]*/)?{quoted})"', html)
        assert match, name
        found[name] = match.group(1)
    return found


def _is_download(r: httpx.Response) -> bool:
    return (
        r.headers["content-type"] == "application/octet-stream"
        and r.headers.get("content-disposition") == "attachment"
        and r.headers["content-security-policy"].startswith("sandbox")
        and r.headers["x-content-type-options"] == "nosniff"
    )


def test_attachments_not_known_inert_are_downloads_wherever_they_are_served(served):
    _, out, base, _ = served
    links = _links(out / "n.html")
    for name, kind in ATTACHMENTS.items():
        r = httpx.get(base + SITE_BASE + links[name], timeout=10)
        assert r.status_code == 200, name
        if kind is None:
            # copied under _file/ only: nothing a browser would run lies beside our pages
            assert links[name] == f"_file/{name}" and not (out / name).exists(), name
            assert _is_download(r), (name, dict(r.headers))
        else:
            assert links[name] == name and r.headers["content-type"].split(";")[0] == kind, name
            assert "content-disposition" not in r.headers and r.headers["x-content-type-options"] == "nosniff"
    pdf = httpx.get(base + SITE_BASE + "d.pdf", timeout=10)  # beside its page, shown inline
    assert pdf.headers["content-type"] == "application/pdf" and "content-disposition" not in pdf.headers
    rules = {
        block.split("\n", 1)[0]: block
        for block in ("\n" + (out / "_headers").read_text("utf-8")).split("\n/")
    }
    rule = rules["_file/*"]
    assert "Content-Disposition: attachment" in rule and "Content-Type: application/octet-stream" in rule
    assert "Content-Security-Policy: sandbox" in rule and "X-Content-Type-Options: nosniff" in rules["*"]


def test_files_beside_the_pages_that_the_build_did_not_place_are_downloads_too(served):
    """A file no build of this workspace placed (an older build's copy, a file put there by hand) is
    a download unless it is a page of ours, one of our assets or of a known inert type."""
    _, out, base, _ = served
    (out / "left.xhtm").write_text(SCRIPT, "utf-8")
    (out / "deep" / "LEFT.Es").write_text(SCRIPT, "utf-8")
    (out / "noext").write_text(SCRIPT, "utf-8")
    for rel in ("left.xhtm", "deep/LEFT.Es", "noext"):
        r = httpx.get(base + SITE_BASE + rel, timeout=10)
        assert r.status_code == 200 and _is_download(r), (rel, dict(r.headers))
    page = httpx.get(base + SITE_BASE + "n.html", timeout=10)
    assert page.headers["content-type"].startswith("text/html") and "content-disposition" not in page.headers
    script = httpx.get(base + SITE_BASE + "_static/site.js", timeout=10)
    assert "javascript" in script.headers["content-type"] and "content-disposition" not in script.headers


# columns named like the ones the plugin links (`render_cell`), holding values of other types
CELL_QUERIES = [
    "select 1 as locator_json",
    "select 'x' as locator_json",
    "select '{}' as locator_json",
    "select '[1]' as locator_json",
    """select '{"openAction": 5}' as locator_json""",
    """select '{"openAction": {"url": 5}, "page": []}' as locator_json""",
    "select x'00ff' as locator_json",
    "select 'b-1' as block_id, 1 as locator_json",
    "select 'b-1' as block_id, '{}' as locator_json",
    "select 7 as source_root_relative_path",
    "select x'00ff' as source_root_relative_path",
]


def test_valid_sql_is_answered_whatever_its_columns_are_called(served):
    _, _, base, _ = served
    for sql in CELL_QUERIES:
        for path in ("/evidence", "/evidence.json"):
            r = httpx.get(base + path, params={"sql": sql}, timeout=30)
            assert r.status_code == 200, (sql, path, r.status_code, r.text[:300])
    real = httpx.get(
        base + "/evidence", params={"sql": "select block_id, locator_json from evidence_block limit 1"}
    )
    assert real.status_code == 200 and "open " in real.text  # a real locator is still a link


def test_sql_answers_are_bounded_in_bytes_and_show_no_server_path(served):
    """One answer holds at most a bounded number of bytes (one value, and all rows together): a query
    that would build more is a 4xx with a message, and the server does not grow by it."""
    _, out, base, proc = served
    server = psutil.Process(proc.pid)
    before = server.memory_info().rss
    huge = [
        "select randomblob(300000000)",
        "select length(randomblob(300000000))",
        "with recursive r(i) as (select 1 union all select i + 1 from r where i < 1000) "
        "select randomblob(900000) from r",
        "with recursive r(i) as (select 1 union all select i + 1 from r where i < 1000) "
        "select " + ", ".join(["randomblob(900000)"] * 50) + " from r",
    ]
    for sql in huge:
        for path in ("/evidence", "/evidence.json"):
            r = httpx.get(base + path, params={"sql": sql}, timeout=60)
            assert 400 <= r.status_code < 500, (sql[:60], path, r.status_code)
            assert "too big" in r.text or "too large" in r.text or "too many" in r.text, r.text[:300]
    grown_mb = (server.memory_info().rss - before) / 2**20
    assert grown_mb < 400, grown_mb
    paths = {str(out), str(out.resolve()), str(out.parent)}
    for sql in (
        "select * from pragma_database_list",
        "select file from pragma_database_list",
        "select group_concat(file) from pragma_database_list",
        "select * from no_such_table",
        "select load_extension('/nope')",
    ):
        for path in ("/evidence", "/evidence.json"):
            r = httpx.get(base + path, params={"sql": sql}, timeout=30)
            assert r.status_code < 500 and not any(p in r.text for p in paths), (sql, r.text[:400])


# tools/call arguments as JSON text: `\\ud800` is a lone surrogate once decoded
SURROGATE_CALLS = [
    ("evidence_search", '{"query": "\\ud800"}'),
    ("evidence_search", '{"\\ud800": 1}'),
    ("evidence_read", '{"blockId": "\\udfff"}'),
    ("verify_quote", '{"quote": "a\\ud800b", "blockId": "b-x"}'),
    ("evidence_open", '{"locator": {"resourcePath": "\\ud800", "page": 1}}'),
    ("\\ud800", "{}"),
]
JUNK_BOXES = [
    '"junk"',
    "[1, 2, 3]",
    "[1, 2, 3, 4, 5]",
    "[NaN, 1, 2, 3]",
    "[1, 2, Infinity, 4]",
    '["1", "2", "3", "4"]',
    "[-1, 0, 10, 10]",
    "[10, 10, 5, 5]",
    "[true, 0, 1, 1]",
    "{}",
]


class StdioMcp:
    """A real `mnote-evidence mcp SITE` process spoken to line by line (JSON-RPC over stdio), so a
    request can hold what an SDK client would refuse to send."""

    def __init__(self, site: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mnote_evidence", "mcp", str(site)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "LIGHTRAG_URL": "http://127.0.0.1:9"},
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.proc.stdout], daemon=True).start()
        self.next_id = 0
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        assert "result" in self.request("initialize", json.dumps(init))
        self.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')

    def request(self, method: str, params: str, id_last: bool = False) -> dict:
        """Send one request (params as JSON text; its id after them if `id_last`) and wait for its
        answer (None after 20 s)."""
        self.next_id += 1
        members = [f'"method": "{method}"', f'"params": {params}']
        members.insert(len(members) if id_last else 0, f'"id": {self.next_id}')
        line = '{"jsonrpc": "2.0", ' + ", ".join(members) + "}\n"
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()
        try:
            answer = json.loads(self.lines.get(timeout=20))
        except queue.Empty:
            return None
        assert answer["id"] == self.next_id
        return answer

    def call(self, tool: str, arguments: str) -> dict | None:
        return self.request("tools/call", f'{{"name": "{tool}", "arguments": {arguments}}}')

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


def _tool_error(answer: dict | None) -> str:
    """The message of a tool error (an `isError` result) or of a JSON-RPC error; fails on anything else."""
    assert answer is not None, "no answer"
    if "error" in answer:
        return answer["error"]["message"]
    assert answer["result"]["isError"] is True, answer
    return answer["result"]["content"][0]["text"]


def test_every_mcp_tool_call_is_answered_and_junk_locators_are_tool_errors(served):
    _, out, _, _ = served
    mcp = StdioMcp(out)
    try:
        for tool, arguments in SURROGATE_CALLS:
            assert "not valid Unicode" in _tool_error(mcp.call(tool, arguments)), (tool, arguments)
        for box in JUNK_BOXES:
            for page in ('"page": 1, ', ""):
                locator = f'{{"locator": {{"resourcePath": "d.pdf", {page}"bbox": {box}}}}}'
                assert "bbox" in _tool_error(mcp.call("evidence_open", locator)), locator
        for page in ('"1"', "0", "true", "1.5", "NaN"):
            locator = f'{{"locator": {{"resourcePath": "d.pdf", "page": {page}}}}}'
            assert "page" in _tool_error(mcp.call("evidence_open", locator)), locator
        good = mcp.call(
            "evidence_open", '{"locator": {"resourcePath": "d.pdf", "page": 1, "bbox": [72, 90, 300, 110]}}'
        )
        assert good["result"]["structuredContent"]["precision"] == "bbox", good
        search = mcp.call("evidence_search", '{"query": "evidence"}')
        assert search["result"]["structuredContent"]["results"], search  # still serving
    finally:
        mcp.close()


DEEP = "[" * 100_000 + "]" * 100_000
# requests no JSON parser reads whole (too deep for any stack, past the SDK's depth limit of 200 only,
# broken): (method, params as JSON text, the id after the params)
UNREADABLE_REQUESTS = [
    ("tools/call", f'{{"name": "evidence_search", "arguments": {{"query": {DEEP}}}}}', False),
    ("tools/call", f'{{"name": "evidence_search", "arguments": {{"query": {DEEP}}}}}', True),
    (
        "tools/call",
        '{"name": "evidence_search", "arguments": {"query": ' + "[" * 300 + "]" * 300 + "}}",
        False,
    ),
    ("resources/read", f'{{"uri": {DEEP}}}', True),
    ("tools/call", '{"name": "evidence_search", "arguments": {"query": "x"}', False),  # a brace short
    ("tools/call", '{"name": "evidence_search", "arguments": {"query": "x\\ud800"}}, "x": [1,}', True),
]


def test_every_mcp_request_with_an_id_is_answered_however_unreadable(served):
    """Nested past any parser's stack, past the SDK's depth limit, or broken JSON: each request with an
    id gets a JSON-RPC error (parse error) or a tool error for that id, and the server goes on serving."""
    _, out, _, _ = served
    mcp = StdioMcp(out)
    try:
        for method, params, id_last in UNREADABLE_REQUESTS:
            answer = mcp.request(method, params, id_last=id_last)
            assert _tool_error(answer), (method, params[:80], id_last)
        search = mcp.call("evidence_search", '{"query": "evidence"}')
        assert search["result"]["structuredContent"]["results"], search
    finally:
        mcp.close()


def test_the_search_index_is_served_as_data_its_manifest_revalidated_its_files_cached():
    """`_search/` on a static host (`_headers`) and by `serve`: inert downloads, never a page or a script; the
    manifest asked again on every load, every other file (named by its bytes) kept."""
    from mnote_evidence.build.core.headers import headers_file, site_file_headers

    rules = {
        block.split("\n", 1)[0]: block.rstrip("\n")
        for block in ("\n" + headers_file("/site/")).split("\n/")
        if block
    }
    folder = rules["site/_search/*"]
    assert "Content-Type: application/octet-stream" in folder and "Content-Disposition: attachment" in folder
    assert "Content-Security-Policy: sandbox" in folder and "Cache-Control" not in folder
    assert rules["site/_search/manifest.json"].split("\n")[1:] == ["  Cache-Control: no-cache"]
    for folder in ("t", "b", "f", "r"):
        assert rules[f"site/_search/{folder}/*"].split("\n")[1:] == [
            "  Cache-Control: public, max-age=31536000, immutable"
        ]
    assert sum("Cache-Control" in rule for rule in rules.values()) == 5  # no rule adds another value
    for name in ("_search/manifest.json", "_search/t/0123456789ab", "_SEARCH/f/0123456789ab"):
        assert site_file_headers(name, Path("/nonexistent"))["Content-Type"] == "application/octet-stream"
