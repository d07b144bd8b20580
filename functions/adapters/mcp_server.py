"""`mnote-evidence mcp`: the query functions as an MCP server (SPEC §9 adapters, §10, §11).

Built on the official SDK's low-level `Server` (PyPI `mcp`), over stdio or streamable
HTTP on loopback. Every tool is a row of `functions/handlers/routes.py` (`ROUTES` with a `tool`
name): its input schema is the route's `RequestSpec.json_schema()`, the very
declaration the handler validates with, and a call runs the same pure handler through
`routes.run` (one database session, `errors.call`). Invariants:
- a tool answer carries the handler's JSON as structured content plus a short text
  rendering with Markdown links (`functions/adapters/mcp_text.py`);
- bad arguments are tool errors (`isError`, the 4xx message), never a protocol failure
  or a crash, and every tool call over stdio is answered (`ReadableLines`: a lone surrogate is a
  tool error); an unknown tool or resource is a JSON-RPC "invalid params" error;
- LightRAG down is the handler's degraded answer, not an error;
- URLs are the handler's: absolute under `--site-url`, else site-relative;
- resources `evidence://block/<blockId>`: the block's full text and its locator;
- stdout belongs to the protocol under stdio; logs go to stderr and never hold a token
  (the LightRAG key is read from the environment by its client only).
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from mnote_evidence import __version__
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.adapters.mcp_text import BLOCK_URI, error_text, render
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.core.validation import NOT_UNICODE, has_lone_surrogate
from mnote_evidence.functions.handlers import evidence
from mnote_evidence.functions.handlers.routes import BY_TOOL, Route, run, site_base

NAME = "mnote-evidence"
BLOCK_TEMPLATE = BLOCK_URI.format("{blockId}")
_BLOCK_URI = re.compile(r"^evidence://block/([^/?#]+)$")
INSTRUCTIONS = (
    "Evidence from the user's notes and their attachments. Search with evidence_search (or "
    "knowledge_query for cited LightRAG retrieval), read around a hit with evidence_read, check a "
    "sentence with verify_quote before quoting it, and give the user the Markdown links from the "
    "answers: each opens the exact page box, paragraph or lines. Read evidence://block/<id> for a "
    "block's full text."
)


class McpSetupError(Exception):
    """Why the server cannot start, in words for the user (the CLI prints it)."""


def context(
    site_dir: Path,
    site_url: str | None = None,
    lightrag_url: str | None = None,
    lightrag_timeout: float = 30.0,
) -> Context:
    db = site_dir / "evidence.sqlite"
    if not db.is_file():
        raise McpSetupError(
            f"{site_dir}/evidence.sqlite not found: run `mnote-evidence build WORKSPACE --out "
            f"{site_dir}` first, or pass the folder a build wrote"
        )
    try:
        base = site_base(site_url)
    except ValueError as exc:
        raise McpSetupError(f"--site-url: {exc}") from None
    return Context(EvidenceDB(db), base, LightRagConfig.from_env(lightrag_url, lightrag_timeout))


def tools() -> list[types.Tool]:
    return [
        types.Tool(
            name=name,
            title=r.title,
            description=r.description,
            input_schema=r.spec.json_schema(),
            annotations=types.ToolAnnotations(
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=name.startswith("knowledge_"),
            ),
        )
        for name, r in BY_TOOL.items()
    ]


def _tool_error(body: dict) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=error_text(body))], structured_content=body, is_error=True
    )


async def call_tool(
    ctx: Context, name: str, arguments: dict[str, Any] | None, refusal: str | None = None
) -> types.CallToolResult:
    """The tool's answer; `refusal`: the call is answered with this error and runs nothing."""
    if refusal is not None:
        return _tool_error({"ok": False, "error": {"code": "bad_request", "message": refusal}})
    route: Route | None = BY_TOOL.get(name)
    if route is None:
        raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}; tools: {', '.join(BY_TOOL)}")
    status, body = await anyio.to_thread.run_sync(run, route, ctx, {} if arguments is None else arguments)
    if status != 200:
        return _tool_error(body)
    return types.CallToolResult(content=[types.TextContent(text=render(name, body))], structured_content=body)


def block_contents(ctx: Context, uri: str) -> list[types.TextResourceContents]:
    """`evidence://block/<id>`: the block's full text (text/plain) and its locator (application/json),
    both read in one database session (one build): `evidence.read` resolves the id (retired ids
    follow the anchor map; deleted files are refused), then the block's whole text."""
    match = _BLOCK_URI.match(uri)
    if not match:
        raise MCPError(INVALID_PARAMS, f"unknown resource {uri!r}; blocks are {BLOCK_TEMPLATE}")
    with ctx.db.session() as conn:
        status, body = call(
            lambda r: evidence.read(r, ctx), {"blockId": unquote(match.group(1)), "window": 0}
        )
        if status != 200:
            raise MCPError(INVALID_PARAMS, error_text(body))
        anchor = body["anchor"]
        (text,) = conn.execute(
            "SELECT text FROM evidence_block WHERE block_id = ?", [anchor["evidenceId"]]
        ).fetchone()
    about = {"evidenceId": anchor["evidenceId"], "kind": anchor["kind"], "source": anchor["source"]}
    if body.get("redirectedFrom"):
        about["redirectedFrom"] = body["redirectedFrom"]
    return [
        types.TextResourceContents(uri=uri, mime_type="text/plain", text=text),
        types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps(about, ensure_ascii=False)
        ),
    ]


class ReadableLines:
    """stdin's lines for the SDK's stdio transport, each one a request it answers. The SDK drops a
    line its JSON parser refuses without a word (one with a lone surrogate, `"\\ud800"`), and the
    client would wait forever; such a request goes on with its strings made valid, and a tool call
    among them is answered with an error (its id in `refused`, its arguments emptied)."""

    _SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # only such lines can hold one

    def __init__(self, lines, refused: dict):
        self.lines, self.refused = lines, refused

    async def __aiter__(self):
        async for line in self.lines:
            yield self.readable(line) if self._SURROGATE.search(line) else line

    def readable(self, line: str) -> str:
        try:
            message = json.loads(line)
        except ValueError:
            return line  # not JSON: nothing to answer to
        if not (isinstance(message, dict) and has_lone_surrogate(message)):
            return line
        message = _valid_strings(message)
        params = message.get("params")
        if message.get("method") == "tools/call" and isinstance(params, dict) and "id" in message:
            self.refused[message["id"]] = NOT_UNICODE
            message["params"] = {"name": str(params.get("name")), "arguments": {}}
        return json.dumps(message)


def _valid_strings(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_valid_strings(k): _valid_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_strings(v) for v in value]
    return value


def build_server(ctx: Context, refused: dict | None = None) -> Server:
    """The server; `refused`: request id -> the error that tool call is answered with (`ReadableLines`)."""
    listed = tools()
    refused = {} if refused is None else refused

    async def on_list_tools(_, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(request, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call_tool(ctx, params.name, params.arguments, refused.pop(request.request_id, None))

    async def on_list_resources(_, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])  # too many to list: read them by template

    async def on_list_resource_templates(_, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="evidence-block",
                    title="Evidence block",
                    uri_template=BLOCK_TEMPLATE,
                    description="One block (paragraph, PDF box, OCR line, note lines): its full text, "
                    "then its locator as JSON. Block ids are the evidenceId / blockId of tool results.",
                )
            ]
        )

    async def on_read_resource(_, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        contents = await anyio.to_thread.run_sync(block_contents, ctx, params.uri)
        return types.ReadResourceResult(contents=contents)

    return Server(
        NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )


def serve_stdio(ctx: Context) -> None:
    from mcp.server.stdio import stdio_server

    refused: dict = {}
    server = build_server(ctx, refused)
    lines = ReadableLines(anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, "utf-8", "replace")), refused)

    async def main() -> None:
        async with stdio_server(stdin=lines) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def serve_http(ctx: Context, host: str, port: int) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp (loopback: Host/Origin checked against DNS rebinding)."""
    import uvicorn

    from mnote_evidence.functions.adapters.serve import bind

    sock = bind(host, port)
    app = build_server(ctx).streamable_http_app(host=host)
    print(f"MCP endpoint: http://{host}:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run(sockets=[sock])
