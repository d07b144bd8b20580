"""`mnote-evidence mcp`: the query functions as an MCP server (SPEC §9 adapters, §10, §11).

Built on the official SDK's low-level `Server` (PyPI `mcp`), over stdio or streamable
HTTP on loopback. Every tool is a row of `functions/handlers/routes.py` (`ROUTES` with a `tool`
name): its input schema is the route's `RequestSpec.json_schema()`, the very
declaration the handler validates with, and a call runs the same pure handler through
`routes.run` (one database session, `errors.call`). Invariants:
- a tool answer carries the handler's JSON as structured content plus a short text
  rendering with Markdown links (`functions/adapters/mcp_text.py`);
- bad arguments are tool errors (`isError`, the 4xx message), never a protocol failure
  or a crash, and every request over stdio with an id is answered (`ReadableLines`: a lone
  surrogate in a tool call is a tool error, a line the SDK cannot parse a JSON-RPC parse error);
  an unknown tool or resource is a JSON-RPC "invalid params" error;
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
from mcp_types.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

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
            f"{site_dir}/evidence.sqlite not found: pass the folder a build wrote "
            "(`mnote-evidence build WORKSPACE --out SITE_DIR`)"
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


UNREADABLE = "mnote-evidence/unreadable"  # what a request the SDK cannot read is passed on as
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[{]+|[\]}]+|[:,]|[^\s{}\[\]:,"]+')  # JSON tokens, read apart


class ReadableLines:
    """stdin's lines for the SDK's stdio transport, each one a request it answers. The SDK drops a
    line its parser refuses without a word (a lone surrogate, `"\\ud800"`; nesting past its depth
    limit of 200; broken JSON), and the client would wait forever. So each line is checked with the
    SDK's own parser, and one it refuses goes on readable: JSON whose only fault is a lone surrogate
    with its strings made valid (a tool call among them answered with a tool error, its arguments
    emptied); any other line that names an id, as an `UNREADABLE` request with that id, answered
    with a JSON-RPC parse error (or invalid request). `refused`: request id -> the error."""

    def __init__(self, lines, refused: dict[Any, types.ErrorData]):
        self.lines, self.refused = lines, refused

    async def __aiter__(self):
        async for line in self.lines:
            yield self.readable(line)

    def readable(self, line: str) -> str:
        error = _refusal(line)
        if error is None:
            return line
        valid = self._valid(line)
        if valid is not None:
            return valid
        top = _top_level(line)
        request_id = top.get("id")
        if not _is_id(request_id) or "result" in top or "error" in top:  # a notification or a response
            return line
        request_id = _valid_strings(request_id)
        self.refused[request_id] = error
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": UNREADABLE})

    def _valid(self, line: str) -> str | None:
        """The line with its strings made valid, when that is all the SDK refused it for; else None."""
        try:
            message = json.loads(line)
            if not (isinstance(message, dict) and has_lone_surrogate(message)):
                return None
            message = _valid_strings(message)
        except (ValueError, RecursionError):
            return None
        if _refusal(json.dumps(message)) is not None:
            return None
        params = message.get("params")
        if message.get("method") == "tools/call" and isinstance(params, dict) and "id" in message:
            self.refused[message["id"]] = types.ErrorData(code=INVALID_PARAMS, message=NOT_UNICODE)
            message["params"] = {"name": str(params.get("name")), "arguments": {}}
        return json.dumps(message)


def _refusal(line: str) -> types.ErrorData | None:
    """Why the SDK's stdio transport cannot read `line` (None: it reads it), with its parser."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:  # pydantic's ValidationError
        errors = exc.errors() if hasattr(exc, "errors") else []
        if errors and errors[0]["type"] == "json_invalid":
            return types.ErrorData(code=PARSE_ERROR, message=f"Parse error: {errors[0]['msg']}")
        return types.ErrorData(code=INVALID_REQUEST, message="Invalid request: not a JSON-RPC 2.0 message")
    return None


def _top_level(line: str) -> dict[str, Any]:
    """The members of the JSON object `line` at its top level: a scalar's value, `...` for an object
    or a list. Read token by token (a run of brackets is one token), never parsing what is nested,
    so a line too deep or too broken for a parser still tells its id, in time linear in its length."""
    members: dict[str, Any] = {}
    depth, key, previous = 0, None, ""
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token[0] in "[{":
            if depth == 0 and token[0] == "[":
                return {}  # a batch, which the SDK does not take: no one id to answer
            if depth == 1 and previous == ":" and key is not None:
                members.setdefault(key, ...)
            depth += len(token)
        elif token[0] in "]}":
            depth -= len(token)
            if depth <= 0:
                break
        elif depth == 1 and token not in (":", ","):
            if previous == ":" and key is not None:
                members.setdefault(key, _scalar(token))
            elif previous in ("{", ","):
                key = _scalar(token) if token.startswith('"') else None
        previous = token
    return members


def _scalar(token: str) -> Any:
    try:
        return json.loads(token)
    except ValueError:
        return None


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _valid_strings(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_valid_strings(k): _valid_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_strings(v) for v in value]
    return value


def build_server(ctx: Context, refused: dict[Any, types.ErrorData] | None = None) -> Server:
    """The server; `refused`: request id -> the error that request is answered with (`ReadableLines`)."""
    listed = tools()
    refused = {} if refused is None else refused

    async def on_list_tools(_, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(request, params: types.CallToolRequestParams) -> types.CallToolResult:
        refusal = refused.pop(request.request_id, None)
        message = None if refusal is None else refusal.message
        return await call_tool(ctx, params.name, params.arguments, message)

    async def on_unreadable(request, params: types.RequestParams) -> types.ErrorData:
        return refused.pop(request.request_id, None) or types.ErrorData(
            code=PARSE_ERROR, message="Parse error"
        )

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

    server = Server(
        NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )
    server.add_request_handler(UNREADABLE, types.RequestParams, on_unreadable)
    return server


def serve_stdio(ctx: Context) -> None:
    from mcp.server.stdio import stdio_server

    refused: dict[Any, types.ErrorData] = {}
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
