"""`mnote-evidence mcp` as a real server process, driven by the MCP SDK's own clients over stdio
and streamable HTTP: tools and their schemas, every tool called, bad arguments, LightRAG down,
block resources, absolute links under --site-url, and no token in any output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from mnote_evidence.build.cli.main import main
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.routes import BY_TOOL, run
from tests.conftest import SPEC_PDF
from tests.servers import free_port, wait_until_up

SITE_URL = "https://notes.example.org/kb/"
SECRET = "lrk-mcp-secret-5b1e0c"  # the LightRAG key in the server's environment: must never come out
DOWN = "http://127.0.0.1:9"  # nothing listens there: LightRAG is down
TOOLS = {
    "evidence_search",
    "evidence_read",
    "evidence_open",
    "knowledge_query",
    "knowledge_status",
    "verify_quote",
}
QUOTE = "retention period for audit evidence is seven years"
SEARCH = {"query": "retention period seven years", "topK": 3}
PAGED = {"query": "thread", "topK": 2, "groupBy": "document"}
BAD = [
    ("evidence_search", {"query": "x", "topK": 500}, "'topK' must be from 1 to 50"),
    ("evidence_search", {"query": "x", "topk": 3}, "unknown field(s) topk"),
    ("evidence_search", {}, "'query' is required"),
    ("evidence_search", {"query": "***"}, "nothing to search for"),
    ("evidence_search", {"query": "x", "mode": "magic"}, "one of fts, graph, hybrid"),
    ("evidence_read", {"window": 2}, "give 'blockId'"),
    ("evidence_read", {"blockId": "b-doesnotexist"}, "no block b-doesnotexist"),
    ("evidence_open", {"locator": {"resourcePath": SPEC_PDF, "page": 99}}, "'page' must be from 1 to 3"),
    ("knowledge_query", {"query": "x", "topK": "ten"}, "'topK' must be an integer"),
    ("knowledge_status", {"verbose": True}, "unknown field(s) verbose"),
    ("verify_quote", {"blockId": "b-doesnotexist"}, "'quote' is required"),
    ("verify_quote", {"quote": "x", "blockId": "b-x", "citationUrl": "a.html#b-x"}, "not several"),
]


def own_thread(fn, *args):
    """Run `fn` in a thread of its own: another test may leave an event loop running in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result()


def server_env() -> dict[str, str]:
    return {
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "LIGHTRAG_URL": DOWN,
        "LIGHTRAG_API_KEY": SECRET,
        "PYTHONUNBUFFERED": "1",
    }


@asynccontextmanager
async def session_over(transport: str, site: Path, http_url: str, errlog):
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            env=server_env(),
            args=["-m", "mnote_evidence", "mcp", str(site), "--site-url", SITE_URL],
        )
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
    else:
        async with streamable_http_client(http_url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def conversation(session: ClientSession) -> dict:
    """One client's session: everything the tests below look at, recorded."""
    out: dict = {
        "tools": (await session.list_tools()).tools,
        "templates": (await session.list_resource_templates()).resource_templates,
    }
    out["search"] = await session.call_tool("evidence_search", SEARCH)
    out["paged"] = await session.call_tool("evidence_search", PAGED)
    block = out["search"].structured_content["results"][0]["evidenceId"]
    out["block"] = block
    out["read"] = await session.call_tool("evidence_read", {"blockId": block, "window": 1})
    out["open"] = await session.call_tool("evidence_open", {"blockId": block})
    out["open_box"] = await session.call_tool(
        "evidence_open", {"locator": {"resourcePath": SPEC_PDF, "page": 2, "bbox": [72, 100, 300, 120]}}
    )
    out["verified"] = await session.call_tool("verify_quote", {"quote": QUOTE, "blockId": block})
    url = out["search"].structured_content["results"][0]["source"]["openAction"]["url"]
    out["verified_url"] = await session.call_tool("verify_quote", {"quote": QUOTE, "citationUrl": url})
    out["not_there"] = await session.call_tool(
        "verify_quote", {"quote": QUOTE.replace("seven", "nine"), "blockId": block}
    )
    out["status"] = await session.call_tool("knowledge_status", {})
    out["query"] = await session.call_tool("knowledge_query", {"query": "retention period", "mode": "naive"})
    out["bad"] = [await session.call_tool(name, args) for name, args, _ in BAD]
    out["after_bad"] = await session.call_tool("evidence_search", SEARCH)
    out["resource"] = await session.read_resource(f"evidence://block/{block}")
    for key, attempt in (
        ("unknown_tool", session.call_tool("no_such_tool", {})),
        ("unknown_block", session.read_resource("evidence://block/b-doesnotexist")),
        ("unknown_resource", session.read_resource("evidence://page/1")),
    ):
        try:
            await attempt
            out[key] = None
        except MCPError as exc:
            out[key] = exc
    return out


@pytest.fixture(scope="module")
def site(stale_site) -> Path:
    return stale_site[1]


@pytest.fixture(scope="module")
def http_server(site, tmp_path_factory):
    """(MCP endpoint URL, the file the server's stdout and stderr go to)."""
    port = free_port()
    log = tmp_path_factory.mktemp("mcp-http") / "server.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mnote_evidence",
                "mcp",
                str(site),
                "--http",
                "--port",
                str(port),
                "--site-url",
                SITE_URL,
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, **server_env()},
        )
    wait_until_up(f"http://127.0.0.1:{port}/mcp", proc)
    yield f"http://127.0.0.1:{port}/mcp", log
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module", params=["stdio", "http"])
def talk(request, site, http_server, tmp_path_factory):
    """(transport, recorded conversation, server log text)."""
    url, _ = http_server
    errlog_path = tmp_path_factory.mktemp("mcp") / "stderr.txt"
    old = {k: os.environ.get(k) for k in ("LIGHTRAG_URL", "LIGHTRAG_API_KEY")}
    with open(errlog_path, "w") as errlog:

        async def go() -> dict:
            async with session_over(request.param, site, url, errlog) as session:
                return await conversation(session)

        recorded = own_thread(anyio.run, go)
    assert old == {k: os.environ.get(k) for k in old}
    return request.param, recorded, errlog_path.read_text("utf-8", "replace")


@pytest.fixture(scope="module")
def in_process(site):
    """The same handlers called directly, with the same site URL: what every tool must answer."""
    ctx = Context(EvidenceDB(site / "evidence.sqlite"), SITE_URL)
    return lambda tool, args: run(BY_TOOL[tool], ctx, args)


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def test_tools_are_listed_with_the_handlers_own_schemas(talk):
    _, got, _ = talk
    tools = {t.name: t for t in got["tools"]}
    assert set(tools) >= TOOLS
    for name, tool in tools.items():
        assert tool.input_schema == BY_TOOL[name].spec.json_schema()  # one definition, not a copy
        assert tool.description and tool.annotations.read_only_hint is True
    assert tools["evidence_search"].input_schema["required"] == ["query"]
    assert [t.uri_template for t in got["templates"]] == ["evidence://block/{blockId}"]


def test_search_is_the_handlers_answer_plus_text_with_absolute_links(talk, in_process):
    _, got, _ = talk
    result = got["search"]
    assert result.is_error is False
    status, expected = in_process("evidence_search", SEARCH)
    assert status == 200 and result.structured_content == expected
    top = expected["results"][0]
    assert top["source"]["resourcePath"] == SPEC_PDF and "seven years" in top["quote"]
    url = top["source"]["openAction"]["url"]
    assert url.startswith(SITE_URL) and url.endswith("#" + top["evidenceId"])
    text = text_of(result)
    assert f"]({url})" in text and f"evidence://block/{top['evidenceId']}" in text and "p.2" in text


def test_pages_and_groups_are_said_in_the_text(talk, in_process):
    _, got, _ = talk
    status, expected = in_process("evidence_search", PAGED)
    assert status == 200 and got["paged"].structured_content == expected
    assert (
        expected["groups"] and expected["nextOffset"] == 2
    )  # the fixtures have more than two files on 'thread'
    text = text_of(got["paged"])
    assert f"of {expected['total']}" in text and f"from {len(expected['groups'])} files" in text
    assert "offset 2" in text


def test_read_and_open_answer_like_the_handlers(talk, in_process):
    _, got, _ = talk
    block = got["block"]
    for key, tool, args in (
        ("read", "evidence_read", {"blockId": block, "window": 1}),
        ("open", "evidence_open", {"blockId": block}),
        (
            "open_box",
            "evidence_open",
            {"locator": {"resourcePath": SPEC_PDF, "page": 2, "bbox": [72, 100, 300, 120]}},
        ),
    ):
        status, expected = in_process(tool, args)
        assert status == 200 and got[key].is_error is False and got[key].structured_content == expected, key
        assert expected["ok"] is True
    assert got["read"].structured_content["anchor"]["evidenceId"] == block
    opened = got["open"].structured_content["openAction"]["url"]
    assert opened.startswith(SITE_URL) and f"]({opened})" in text_of(got["open"])
    box = got["open_box"].structured_content["openAction"]["url"]
    assert (
        box.startswith(SITE_URL)
        and box.endswith("?page=2&bbox=72,100,300,120")
        and box in text_of(got["open_box"])
    )


def test_verify_quote_answers_like_the_handler(talk, in_process):
    _, got, _ = talk
    block = got["block"]
    for key, quote, verdict in (
        ("verified", QUOTE, "found"),
        ("not_there", QUOTE.replace("seven", "nine"), "not_found"),
    ):
        status, expected = in_process("verify_quote", {"quote": quote, "blockId": block})
        assert status == 200 and got[key].is_error is False and got[key].structured_content == expected
        assert expected["verdict"] == verdict and expected["match"]["evidenceId"] == block
        url = expected["match"]["source"]["openAction"]["url"]
        assert url.startswith(SITE_URL) and f"]({url})" in text_of(got[key])
    assert text_of(got["verified"]).startswith("Found at the cited place")
    by_url = got["verified_url"].structured_content  # the absolute link an answer gave, handed back
    assert by_url["verdict"] == "found" and by_url["target"] == {
        **by_url["target"],
        "scope": "block",
        "blockId": block,
    }
    assert "Most similar" in text_of(got["not_there"]) and "quote_not_in_block" in text_of(got["not_there"])


def test_lightrag_down_gives_the_degraded_answer_not_an_error(talk):
    _, got, _ = talk
    status, query = got["status"], got["query"]
    assert status.is_error is False and status.structured_content["healthy"] is False
    assert status.structured_content["reason"] == "knowledge_rag_unavailable"
    assert query.is_error is False
    body = query.structured_content
    assert body["ok"] is False and body["degraded"] is True and body["citations"] == []
    assert body["degradedReason"] == "knowledge_rag_unavailable"
    assert "LightRAG unavailable" in text_of(query)
    # the question still gets evidence: the passages evidence search finds for it
    assert body["passages"]["results"] and "Passages of the evidence that match" in text_of(query)


def test_bad_arguments_are_tool_errors_with_the_http_message_and_the_session_survives(talk, in_process):
    _, got, _ = talk
    for (tool, args, fragment), result in zip(BAD, got["bad"], strict=True):
        assert result.is_error is True, (tool, args)
        assert fragment in text_of(result), (tool, text_of(result))
        status, expected = in_process(tool, args)
        assert 400 <= status < 500 and result.structured_content == expected  # the same 4xx body as over HTTP
    assert got["after_bad"].is_error is False and got["after_bad"].structured_content["results"]


def test_unknown_tools_and_resources_are_protocol_errors_not_crashes(talk):
    _, got, _ = talk
    assert isinstance(got["unknown_tool"], MCPError) and "no_such_tool" in got["unknown_tool"].message
    assert (
        isinstance(got["unknown_block"], MCPError)
        and "no block b-doesnotexist" in got["unknown_block"].message
    )
    assert (
        isinstance(got["unknown_resource"], MCPError)
        and "evidence://block/" in got["unknown_resource"].message
    )


def test_block_resource_has_the_full_text_and_the_locator(talk, site):
    import sqlite3

    _, got, _ = talk
    block = got["block"]
    (text,) = (
        sqlite3.connect(site / "evidence.sqlite")
        .execute("SELECT text FROM evidence_block WHERE block_id = ?", [block])
        .fetchone()
    )
    contents = {c.mime_type: c for c in got["resource"].contents}
    assert contents["text/plain"].text == text
    about = json.loads(contents["application/json"].text)
    assert about["evidenceId"] == block and about["source"]["page"] == 2
    assert about["source"]["openAction"]["url"].startswith(SITE_URL)


def test_no_token_in_any_output(talk):
    transport, got, errlog = talk
    answers = json.dumps(
        [r.model_dump(mode="json") for r in (got["search"], got["status"], got["query"], *got["bad"])]
    )
    assert SECRET not in answers and SECRET not in errlog
    assert transport == "stdio" or "Traceback" not in errlog


def test_http_refuses_another_host_name_or_origin(http_server):
    url, _ = http_server
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    host = httpx.post(url, headers={**headers, "Host": "evil.example"}, content=b"{}", timeout=10)
    origin = httpx.post(url, headers={**headers, "Origin": "https://evil.example"}, content=b"{}", timeout=10)
    assert host.status_code == 421 and origin.status_code == 403


def test_http_server_log_has_no_token_or_traceback(http_server, talk):
    _, log = http_server
    text = log.read_text("utf-8", "replace")
    assert "MCP endpoint: http://127.0.0.1:" in text  # the log is there, and it is this server's
    assert SECRET not in text and "Traceback" not in text


def test_cli_refuses_what_it_cannot_serve(tmp_path, site):
    runner = CliRunner()
    missing = runner.invoke(main, ["mcp", str(tmp_path / "nowhere")])
    assert missing.exit_code == 1 and "evidence.sqlite not found" in missing.output
    bad_url = runner.invoke(main, ["mcp", str(site), "--site-url", "ftp://example.org/x"])
    assert bad_url.exit_code == 1 and "--site-url" in bad_url.output and "http(s)" in bad_url.output
