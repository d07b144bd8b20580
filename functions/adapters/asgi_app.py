"""The query functions as a plain ASGI app, no Datasette: deploy them on any Python host (SPEC §9, §11).

The same routes as the Datasette plugin (`functions/handlers/routes.py`: `/-/evidence/search|read|open`,
`/-/knowledge/*`), answered by the same `routes.answer`, over a built `evidence.sqlite`
opened read-only and immutable (a bundled file on a read-only filesystem works; nothing
is ever written next to it). `GET /` lists the routes (a health check). The static site
is served by any static host; `MNOTE_SITE_URL` makes every `openAction` / citation URL
absolute so it opens there.

Invariants: every request passes `functions/adapters/guard.py` first (4xx for hostile requests,
cross-origin POSTs refused, optional Host allow-list, security headers, a generic 500);
every answer is JSON; bad input is a 4xx with a message; nothing answered names a
server path or carries a traceback (a missing database is a 503 that says which
setting to fix; its path goes to the log only).

Configuration (`app_from_env`, used by `app` and `functions/adapters/lambda_handler.py`), all optional:
`MNOTE_EVIDENCE_DB` (default `evidence.sqlite` in the working directory, e.g. bundled
beside the Lambda code), `MNOTE_SITE_URL`, `MNOTE_ALLOWED_HOSTS` (comma-separated),
`LIGHTRAG_URL`, `LIGHTRAG_TIMEOUT` (seconds), `LIGHTRAG_API_KEY` (read by the client only).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from mnote_evidence import __version__
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.adapters.guard import Guard
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.routes import BY_PATH, ROUTES, answer, site_base

DB_ENV, SITE_URL_ENV, HOSTS_ENV, TIMEOUT_ENV = (
    "MNOTE_EVIDENCE_DB",
    "MNOTE_SITE_URL",
    "MNOTE_ALLOWED_HOSTS",
    "LIGHTRAG_TIMEOUT",
)
METHODS = ("GET", "POST")
log = logging.getLogger("mnote_evidence.functions")


class QueryArgs:
    """A query string as the specs read it: `keys()` and `get()` (first value wins)."""

    def __init__(self, raw: bytes):
        self.pairs = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)

    def keys(self) -> list[str]:
        return [k for k, _ in self.pairs]

    def get(self, key: str) -> str | None:
        return next((v for k, v in self.pairs if k == key), None)


class FunctionsApp:
    """The route table over one `Context`; `ctx=None` answers 503 (no database configured)."""

    def __init__(self, ctx: Context | None):
        self.ctx = ctx

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] == "lifespan":
            return await _lifespan(receive, send)
        if scope["type"] != "http":
            return None
        path, method = scope["path"], scope["method"]
        if path in ("/", "/-/functions"):
            return await _json(
                send,
                200,
                {
                    "ok": True,
                    "version": __version__,
                    "routes": [r.path for r in ROUTES],
                    "ready": self.ctx is not None,
                },
            )
        route = BY_PATH.get(path)
        if route is None:
            return await _json(send, 404, _error("not_found", "no such route; GET / lists them"))
        if method not in METHODS:
            return await _json(
                send, 405, _error("method_not_allowed", "use GET or POST"), [(b"allow", b"GET, POST")]
            )
        if self.ctx is None:
            return await _json(
                send,
                503,
                _error("index_missing", f"no evidence database: set {DB_ENV} to the built evidence.sqlite"),
            )
        body = await _body(receive) if method == "POST" else None
        status, payload = await asyncio.to_thread(
            answer, route, self.ctx, method, QueryArgs(scope.get("query_string", b"")), body
        )
        await _json(send, status, payload)


def create_app(
    db: Path | str | None,
    site_url: str = "",
    lightrag: LightRagConfig | None = None,
    allowed_hosts: frozenset[str] | None = None,
):
    """The guarded app over `db` (None or missing: every query route answers 503).
    ValueError for a `site_url` that is not an http(s) URL: a deployment fails at start, not per request."""
    ctx = None
    if db is not None and Path(db).is_file():
        ctx = Context(EvidenceDB(Path(db).resolve()), site_base(site_url), lightrag)
    elif db is not None:
        log.error("evidence database %s not found: the query routes answer 503", db)
    return Guard(FunctionsApp(ctx), site_bases=(), allowed_hosts=allowed_hosts)


def app_from_env(environ: dict[str, str] | None = None):
    env = os.environ if environ is None else environ
    hosts = frozenset(h.strip().lower() for h in env.get(HOSTS_ENV, "").split(",") if h.strip()) or None
    timeout = float(env.get(TIMEOUT_ENV) or 30)
    return create_app(
        env.get(DB_ENV) or "evidence.sqlite",
        env.get(SITE_URL_ENV, ""),
        LightRagConfig.from_env(env.get("LIGHTRAG_URL"), timeout),
        hosts,
    )


class _LazyApp:
    """`uvicorn mnote_evidence.functions.adapters.asgi_app:app`: configured from the environment
    on first use."""

    def __init__(self):
        self._app = None

    async def __call__(self, scope, receive, send) -> None:
        if self._app is None:
            self._app = app_from_env()
        await self._app(scope, receive, send)


app = _LazyApp()


def _error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}}


async def _body(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _json(send, status: int, payload: dict, extra: list | None = None) -> None:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    headers = [
        (b"content-type", b"application/json; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
