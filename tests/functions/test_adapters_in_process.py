"""The thin adapters, called in this process on one shared build: what the server tests check over
real processes (MCP over stdio, `serve`, `python -m`), here at the cost of a function call."""

from __future__ import annotations

import asyncio
import runpy
import sys

import pytest

from mnote_evidence import __version__
from mnote_evidence.functions.adapters import mcp_server, mcp_text, serve
from mnote_evidence.functions.handlers.evidence import search
from mnote_evidence.functions.handlers.routes import ROUTES


def test_the_mcp_tools_are_the_route_tables_with_its_schemas():
    tools = {t.name: t for t in mcp_server.tools()}
    routed = {r.tool: r for r in ROUTES if r.tool}
    assert tools.keys() == routed.keys() and "evidence_search" in tools
    assert tools["evidence_search"].input_schema == routed["evidence_search"].spec.json_schema()
    assert all(t.annotations.read_only_hint for t in tools.values())


def test_an_mcp_search_is_the_handlers_answer_with_its_text(built):
    _, out, _ = built
    ctx = mcp_server.context(out, site_url="https://notes.example.org/")
    result = asyncio.run(mcp_server.call_tool(ctx, "evidence_search", {"query": "线程作用域", "topK": 3}))
    assert not result.is_error
    body = search({"query": "线程作用域", "topK": 3}, ctx)
    assert result.structured_content["results"] == body["results"] and body["results"]
    text = result.content[0].text
    assert text == mcp_text.render("evidence_search", body)
    assert body["results"][0]["source"]["openAction"]["url"].startswith("https://notes.example.org/")


def test_an_mcp_tool_error_carries_the_http_message(built):
    _, out, _ = built
    ctx = mcp_server.context(out)
    result = asyncio.run(mcp_server.call_tool(ctx, "evidence_search", {"query": ""}))
    assert result.is_error and result.content[0].text == mcp_text.error_text(result.structured_content)


def test_mcp_refuses_a_folder_without_an_index(tmp_path):
    with pytest.raises(mcp_server.McpSetupError, match="evidence.sqlite not found"):
        mcp_server.context(tmp_path)


def test_serve_tells_whether_the_pages_link_ask(tmp_path):
    assert serve.links_ask(tmp_path) is False  # no site at all
    (tmp_path / "index.html").write_text('<a class="ask-link" href="ask.html">Ask</a>', "utf-8")
    assert serve.links_ask(tmp_path) is True


def test_python_dash_m_is_the_command_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["mnote-evidence", "--version"])
    with pytest.raises(SystemExit) as stop:
        runpy.run_module("mnote_evidence", run_name="__main__")
    assert (
        stop.value.code == 0 and capsys.readouterr().out.strip() == f"mnote-evidence, version {__version__}"
    )
