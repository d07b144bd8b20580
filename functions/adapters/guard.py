"""The HTTP guard in front of Datasette and our routes (SPEC §12; docs/security.md).

One ASGI middleware, so every route gets the same answers to hostile requests:
- a request line no handler should see is a 4xx with a message: paths over
  `MAX_PATH` bytes or queries over `MAX_QUERY` (414), NUL anywhere, bytes that
  are not UTF-8 (lone surrogates included) in the path or the query (400), JSON
  bodies over `MAX_BODY` (413), nested deeper than `MAX_DEPTH` or carrying lone
  surrogates (400), unknown columns in `_sort`, `_facet`... (`COLUMN_PARAMS`, 400), a `_next` on a
  view's page that is not a row offset (400: Datasette pages views by offset, e.g. `evidence_block`);
- `Host` must be one of `allowed_hosts` (DNS rebinding: a page on evil.example
  resolving to 127.0.0.1 sends `Host: evil.example`); a state-changing method
  from another origin (`Origin`, or `Sec-Fetch-Site: cross-site`) is refused,
  so a cross-origin `text/plain` POST never reaches a handler; only the query
  API (`POST_PREFIXES`) takes a state-changing method at all (405 elsewhere);
- every response carries `nosniff`, `Referrer-Policy` and a CSP; files under
  the site's `_file/`, and every site file the site route sends as an attachment
  (any attachment not of a known inert type: `build/core/headers.py`), are sent
  as sandboxed `application/octet-stream` downloads;
- any 500 from below (or an exception) is replaced by a generic 500 without paths
  or exception text; Datasette's `/-/databases` (it lists file paths), the index
  and hidden files under the site (`/site/evidence.sqlite/` included) are not served.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, unquote_to_bytes, urlsplit

from mnote_evidence.build.core.headers import ATTACHMENT, COMMON, SITE_CSP
from mnote_evidence.build.core.urls import DB_NAME, MOVED_FILES_DIR
from mnote_evidence.functions.core.validation import has_lone_surrogate

MAX_PATH = 2048
MAX_QUERY = 65536
MAX_BODY = 1 << 20
MAX_DEPTH = 64
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Datasette's own pages use inline scripts; ours (the site) do not
DATASETTE_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'self'"
)
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
POST_PREFIXES = ("/-/evidence/", "/-/knowledge/")  # the only routes that take a body; the rest is read-only
HIDDEN = frozenset({"/-/databases"})  # Datasette introspection that shows server file paths
# Datasette table parameters naming a column: an unknown one is a 500 inside Datasette
COLUMN_PARAMS = frozenset({"_sort", "_sort_desc", "_facet", "_facet_array", "_facet_date", "_col", "_nocol"})

Scope = dict[str, Any]
Columns = Callable[[str], Awaitable[set[str] | None]]  # request path -> its table's columns, or None


class ViewColumns(set):
    """The columns of a view (its pages are paged by a row offset, `_next=<n>`)."""


class Refused(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def allowed_hosts_for(host: str, extra: str = "") -> frozenset[str] | None:
    """Hosts `serve --host HOST` answers to: loopback names for a loopback bind (DNS rebinding);
    None (any) for a wildcard bind unless `extra` (comma-separated) names them."""
    named = frozenset(h.strip().lower() for h in extra.split(",") if h.strip())
    if host in ("0.0.0.0", "::", ""):
        return named or None
    return LOCAL_HOSTS | {host.lower()} | named


class Guard:
    def __init__(
        self,
        app,
        *,
        site_bases: tuple[str, ...] = ("/site/",),
        allowed_hosts: frozenset[str] | None = None,
        columns: Columns | None = None,
    ):
        self.app, self.site_bases, self.allowed_hosts, self.columns = app, site_bases, allowed_hosts, columns

    async def __call__(self, scope: Scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        try:
            if scope["path"].rstrip("/").split(".")[0] in HIDDEN:
                raise Refused(404, "not_found", "not found")
            self._check_request(scope)
            receive = await self._checked_body(scope, receive)
            await self._check_columns(scope)
        except Refused as exc:
            return await _answer(
                send, exc.status, {"ok": False, "error": {"code": exc.code, "message": exc.message}}
            )
        await self._forward(scope, receive, send)

    # -- requests -------------------------------------------------------------------------
    def _check_request(self, scope: Scope) -> None:
        raw = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
        query = scope.get("query_string", b"")
        if len(raw) > MAX_PATH or len(query) > MAX_QUERY:
            raise Refused(
                414, "uri_too_long", f"path or query too long (limits {MAX_PATH} / {MAX_QUERY} bytes)"
            )
        for part, what in ((raw, "path"), (query.replace(b"+", b" "), "query")):
            decoded = unquote_to_bytes(part)
            if b"\x00" in decoded:
                raise Refused(400, "bad_request", f"the {what} contains a NUL character")
            try:
                decoded.decode("utf-8")
            except UnicodeDecodeError:
                raise Refused(400, "bad_request", f"the {what} is not valid UTF-8") from None
        site = next((b for b in self.site_bases if scope["path"].startswith(b)), None)
        if site is not None:
            parts = [p for p in scope["path"][len(site) :].split("/") if p]
            if any(p.startswith(".") for p in parts) or (parts and parts[-1].lower().startswith(DB_NAME)):
                raise Refused(404, "not_found", "not found")  # the index and hidden files are not site files
        headers = _headers(scope)
        host = _hostname(headers.get("host", ""))
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            raise Refused(421, "host_not_allowed", "this server does not answer to that Host name")
        if scope["method"] not in SAFE_METHODS:
            if not scope["path"].startswith(POST_PREFIXES):
                raise Refused(
                    405, "method_not_allowed", "this server is read-only: only the query API takes POST"
                )
            origin = headers.get("origin")
            if origin is not None and (
                origin == "null" or urlsplit(origin).netloc.lower() != headers.get("host", "").lower()
            ):
                raise Refused(403, "cross_origin", "requests from another origin are refused")
            if origin is None and headers.get("sec-fetch-site") in ("cross-site", "same-site"):
                raise Refused(403, "cross_origin", "requests from another origin are refused")

    async def _checked_body(self, scope: Scope, receive):
        if scope["method"] in SAFE_METHODS:
            return receive
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > MAX_BODY:
                raise Refused(413, "body_too_large", f"request body over {MAX_BODY} bytes")
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if body.strip()[:1] in (b"{", b"["):
            _check_json(body)
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return replay

    async def _check_columns(self, scope: Scope) -> None:
        params = parse_qsl(scope.get("query_string", b"").decode("utf-8"), keep_blank_values=True)
        names = [v for k, v in params if k in COLUMN_PARAMS]
        offsets = [v for k, v in params if k == "_next"]
        if not (names or offsets) or self.columns is None:
            return
        columns = await self.columns(scope["path"])
        if columns is None:
            return
        unknown = [n for n in names if n not in columns]
        if unknown:
            raise Refused(400, "bad_request", f"no column {unknown[0]!r} in this table")
        if isinstance(columns, ViewColumns) and not all(
            v.isascii() and v.isdigit() and len(v) < 16 for v in offsets
        ):
            raise Refused(400, "bad_request", "'_next' on this page is a row offset: a whole number")

    # -- responses ------------------------------------------------------------------------
    async def _forward(self, scope: Scope, receive, send) -> None:
        path = scope["path"]
        site = next((b for b in self.site_bases if path.startswith(b)), None)
        # an attachment: anything under `_file/`, or a site file sent as one (`site_file_headers`)
        attachment = site is not None and path[len(site) :].lower().startswith(f"{MOVED_FILES_DIR}/")
        failed = False

        async def guarded_send(message):
            nonlocal failed
            if message["type"] == "http.response.start":
                if message["status"] == 500:
                    failed = True
                    return await _answer(
                        send,
                        500,
                        {
                            "ok": False,
                            "error": {
                                "code": "internal_error",
                                "message": "internal error; see the server log",
                            },
                        },
                    )
                headers = message.get("headers", [])
                sent_as_attachment = site is not None and any(
                    k.lower() == b"content-disposition" and v.lower().startswith(b"attachment")
                    for k, v in headers
                )
                message = {
                    **message,
                    "headers": _secure(headers, site is not None, attachment or sent_as_attachment),
                }
            elif failed:
                return None
            return await send(message)

        try:
            await self.app(scope, receive, guarded_send)
        except Exception:
            if not failed:
                failed = True
                await _answer(
                    send,
                    500,
                    {
                        "ok": False,
                        "error": {"code": "internal_error", "message": "internal error; see the server log"},
                    },
                )


def _secure(headers: list, site: bool, attachment: bool) -> list:
    extra = {**COMMON, "Content-Security-Policy": SITE_CSP if site else DATASETTE_CSP}
    if attachment:
        extra.update(ATTACHMENT)
    names = {k.lower().encode() for k in extra}
    kept = [(k, v) for k, v in headers if k.lower() not in names]
    return kept + [(k.lower().encode(), v.encode()) for k, v in extra.items()]


async def _answer(send, status: int, payload: dict) -> None:
    body = json.dumps(payload).encode()
    headers = _secure(
        [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
        ],
        False,
        False,
    )
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _hostname(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _check_json(body: bytes) -> None:
    """Depth first (a cheap scan; `json.loads` recurses), then every string must be encodable."""
    depth, in_string, escaped = 0, False, False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > MAX_DEPTH:
                raise Refused(400, "bad_request", f"JSON nested deeper than {MAX_DEPTH} levels")
        elif byte in (0x5D, 0x7D):
            depth -= 1
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return  # the handler answers its own 400 for invalid JSON
    if has_lone_surrogate(value):
        raise Refused(400, "bad_request", "JSON string with a lone surrogate (not valid Unicode)")


def datasette_columns(datasette) -> Columns:
    """`columns` for Datasette: the columns of the table (or view) a `/<db>/<table>[.json|.csv]`
    path names, or None for any other path."""
    from datasette.utils import tilde_decode

    async def columns(path: str) -> set[str] | None:
        parts = path.strip("/").split("/")
        if len(parts) != 2 or parts[0] not in datasette.databases:
            return None
        db = datasette.databases[parts[0]]
        name = tilde_decode(parts[1])
        for candidate in (name, name.rsplit(".", 1)[0]):
            if await db.table_exists(candidate):
                return set(await db.table_columns(candidate))
            if candidate in await db.view_names():
                return ViewColumns(await db.table_columns(candidate))
        return None

    return columns
