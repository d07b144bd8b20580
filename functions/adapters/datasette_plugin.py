"""Datasette plugin `mnote-evidence`: a thin HTTP adapter over the handlers in `functions/handlers/`.

Registered by entry point (`datasette plugins` lists it). On a Datasette that holds an
evidence database (one with an `evidence_block` table) it adds, all under `/-/` as
Datasette's conventions ask, so no database or table URL is ever taken over:
- `/-/evidence/search`, `/-/evidence/read`, `/-/evidence/open`, `/-/evidence/verify` and
  `/-/knowledge/*` (the route table `functions/handlers/routes.py`, shared with the ASGI app): GET
  with query parameters or POST with a JSON body, answered by the pure handlers;
- `/-/evidence/search-page`: the search page for readers (`functions/adapters/search_page.py`),
  linked from Datasette's menu and the evidence database's actions;
- `/-/evidence/site/...`: the static site next to the database (when one is there), and
  `/` redirecting to it, so one URL serves browsing, querying and citations;
- `?_search=` on `evidence_block` through our CJK-aware query builder
  (registered as `escape_fts` on evidence databases only);
- links from block ids, locators and resource paths to the site (`render_cell`);
- canned queries and table descriptions (metadata): from the `get_metadata` and
  `canned_queries` hooks on Datasette 0.65, written at `startup` on 1.0
  (`functions/adapters/datasette_compat.py`);
- live rebuilds: the evidence database is served by `LiveDatabase`, so every view
  (Datasette's and ours) reads a rebuilt `evidence.sqlite` from the next query on,
  without a restart and without a failed request (`functions/adapters/live_database.py`).
On a Datasette without an evidence database it registers no route at all. Per-instance state
lives in a `WeakKeyDictionary` keyed by the Datasette object, so it goes with it.

Settings (`plugins.mnote-evidence` in Datasette's metadata on 0.65, its configuration on 1.0),
all optional:
`site_dir` (default: the database's folder if it holds an index.html),
`site_base` (where the site is mounted, default `/-/evidence/site/`), `allowed_hosts` (the Host
names answered, default any; `serve` sets it), `lightrag_url`
(default: `LIGHTRAG_URL`) and `lightrag_timeout` (seconds, default 30). The LightRAG
API key is read from `LIGHTRAG_API_KEY` only.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import weakref
from pathlib import Path
from urllib.parse import unquote

from datasette import hookimpl
from datasette.utils.asgi import Response, asgi_send_file

from mnote_evidence.build.core.headers import site_file_headers
from mnote_evidence.build.core.sqlite_ro import connect_ro
from mnote_evidence.build.core.text import QueryError, fts_query
from mnote_evidence.build.core.urls import page_url
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.adapters import search_page
from mnote_evidence.functions.adapters.datasette_compat import V1, metadata_v0, publish
from mnote_evidence.functions.adapters.guard import Guard, datasette_columns
from mnote_evidence.functions.adapters.live_database import make_live
from mnote_evidence.functions.adapters.metadata import CANNED_QUERIES, DATABASE_DESCRIPTION, TABLES
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.routes import ROUTES, Route, answer

PLUGIN = "mnote-evidence"
SITE_BASE = "/-/evidence/site/"
NO_MATCH = '"\u2063"'  # an FTS phrase nothing is indexed under: "no results", not an SQL error


# -- which database, which site --------------------------------------------------------
def _is_evidence_db(path: str | None) -> bool:
    if not path or not os.path.exists(path):
        return False
    try:
        conn = connect_ro(path)
        try:
            return (
                conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'evidence_block'").fetchone()
                is not None
            )
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False


class _State:
    """Per-Datasette state: the evidence database, its connections, the site folder."""

    def __init__(self, datasette):
        # Discovery only: reading plugin settings here would recurse on 0.65 (settings come
        # from metadata, and our get_metadata hook needs this state). No reference to
        # `datasette` is kept: it is this state's key in a WeakKeyDictionary.
        self.datasette = weakref.ref(datasette)
        self.name, self.db = None, None
        for name, db in datasette.databases.items():
            if _is_evidence_db(db.path):
                self.name, self.db = name, EvidenceDB(db.path)
                break
        self._site: tuple[str, Path | None, LightRagConfig | None] | None = None

    def _settings(self) -> tuple[str, Path | None, LightRagConfig | None]:
        if self._site is None:
            config = self.datasette().plugin_config(PLUGIN) or {}
            site_dir = config.get("site_dir") or (str(self.db.path.parent) if self.db else None)
            found = (
                Path(site_dir).resolve() if site_dir and (Path(site_dir) / "index.html").exists() else None
            )
            lightrag = LightRagConfig.from_env(
                config.get("lightrag_url"), float(config.get("lightrag_timeout", 30))
            )
            base = "/" + config.get("site_base", SITE_BASE).strip("/") + "/"
            self._site = (base, found, lightrag)
        return self._site

    @property
    def site_base(self) -> str:
        return self._settings()[0]

    @property
    def site_dir(self) -> Path | None:
        return self._settings()[1]

    def make_live(self) -> None:
        """Serve Datasette's own views of the evidence database through a LiveDatabase."""
        datasette = self.datasette()
        if self.name is not None and self.name in datasette.databases:
            make_live(datasette, self.name)

    def refresh(self) -> None:
        """Notice a rebuilt file now (closing idle connections to the old one); queries do it anyway."""
        if self.db is None:
            return
        self.db.live.check()
        database = self.datasette().databases.get(self.name)
        if hasattr(database, "live"):
            database.live.check()

    def context(self) -> Context:
        base = self.site_base if self.site_dir else ""
        return Context(self.db, base, self._settings()[2])


_STATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Datasette -> _State


def _state(datasette) -> _State:
    state = _STATES.get(datasette)
    if state is None:
        state = _STATES[datasette] = _State(datasette)
    return state


# -- HTTP adapter ----------------------------------------------------------------------
def _endpoint(route: Route):
    async def view(request, datasette):
        state = _state(datasette)
        body = (await request.post_body()) if request.method == "POST" else None
        status, payload = await asyncio.to_thread(
            answer, route, state.context(), request.method, request.args, body
        )
        return Response.json(payload, status=status, headers={"Cache-Control": "no-store"})

    return view


async def _site_file(request, datasette):
    state = _state(datasette)
    if state.site_dir is None:
        return Response.text("No static site next to this database (build without --no-site).", status=404)
    rel = unquote(request.url_vars["path"])  # Datasette passes the raw, still-encoded path
    if any(part.startswith(".") for part in rel.split("/")) or rel.endswith(".sqlite"):
        return Response.text("Not found", status=404)
    path = (state.site_dir / rel).resolve()
    if path.is_dir():
        path = path / "index.html"
    try:
        path.relative_to(state.site_dir)
    except ValueError:
        return Response.text("Not found", status=404)
    if not path.is_file():
        return Response.text("Not found", status=404)
    # how it is sent follows from the file served (`..`, a trailing slash and symlinks resolved)
    return _FileResponse(path, site_file_headers(path.relative_to(state.site_dir).as_posix(), state.site_dir))


class _FileResponse:
    """A route answer that streams a file with Datasette's own helper, with `headers` (a type and
    disposition from `site_file_headers`; the guard keeps an attachment's)."""

    def __init__(self, path: Path, headers: dict[str, str]):
        self.path, self.headers = path, {k.lower(): v for k, v in headers.items()}

    async def asgi_send(self, send):
        headers = {**self.headers, "cache-control": "no-cache"}
        content_type = headers.pop("content-type", None)
        await asgi_send_file(send, self.path, content_type=content_type, chunk_size=65536, headers=headers)


async def _search_page(request, datasette):
    state = _state(datasette)
    return await search_page.respond(
        request, datasette, state.name, state.context(), state.db.session, state.site_dir is not None
    )


async def _home(request, datasette):
    state = _state(datasette)
    target = state.site_base + "index.html" if state.site_dir else f"/{state.name or ''}"
    return Response.redirect(target)


@hookimpl
def register_routes(datasette):
    state = _state(datasette)
    if state.db is None:
        return []  # not an evidence Datasette: leave every URL to Datasette and other plugins
    base = state.site_base
    routes = [
        *(("^" + re.escape(route.path) + "$", _endpoint(route)) for route in ROUTES),
        (r"^/-/evidence/search-page$", _search_page),
        ("^" + re.escape(base) + "(?P<path>.*)$", _site_file),
        ("^" + re.escape(base.rstrip("/")) + "$", _home),
    ]
    if state.site_dir is not None:
        routes.append((r"^/$", _home))
    return routes


@hookimpl
def menu_links(datasette, actor, request):
    if _state(datasette).db is None:
        return None
    return [{"href": search_page.PATH, "label": "Search evidence"}]


@hookimpl
def database_actions(datasette, actor, database, request):
    if database != _state(datasette).name:
        return None
    return [{"href": search_page.PATH, "label": "Search evidence (snippets, files, pages)"}]


@hookimpl
def startup(datasette):
    state = _state(datasette)
    state.make_live()
    if V1 and state.name is not None:
        return publish(datasette, state.name, DATABASE_DESCRIPTION, TABLES, CANNED_QUERIES)
    return None


@hookimpl
def asgi_wrapper(datasette):
    _state(datasette).make_live()  # before the first request: app() builds this wrapper

    def wrap(app):
        state = _state(datasette)
        if state.db is None:
            return app
        # every request passes the guard first (functions/adapters/guard.py)
        hosts = (datasette.plugin_config(PLUGIN) or {}).get("allowed_hosts")
        return Guard(
            app,
            site_bases=(state.site_base,),
            columns=datasette_columns(datasette),
            allowed_hosts=frozenset(h.lower() for h in hosts) if hosts else None,
        )

    return wrap


def refresh(datasette) -> None:
    """Called by `serve --watch` after a rebuild: every view switches now, idle old connections close."""
    _state(datasette).refresh()


# -- Datasette's own views ---------------------------------------------------------------
def _escape_fts(query: str) -> str:
    try:
        return fts_query(query)
    except QueryError:
        return NO_MATCH


@hookimpl
def prepare_connection(conn, database, datasette):
    state = _state(datasette)
    if database == state.name:
        conn.create_function("escape_fts", 1, _escape_fts)


if not V1:  # Datasette 0.65: metadata, canned queries and the CSRF exemption come from hooks

    @hookimpl
    def get_metadata(datasette, key, database, table):
        state = _state(datasette)
        if state.name is None:
            return {}
        return metadata_v0(state.name, DATABASE_DESCRIPTION, TABLES)

    @hookimpl
    def canned_queries(datasette, database, actor):
        if database == _state(datasette).name:
            return CANNED_QUERIES
        return None

    @hookimpl
    def skip_csrf(datasette, scope):
        # Our JSON POST routes take no CSRF token; the Guard refuses cross-origin POSTs
        # (Origin, Sec-Fetch-Site), as Datasette 1.0 itself does.
        return _state(datasette).db is not None and scope.get("path", "").startswith(
            ("/-/evidence/", "/-/knowledge/")
        )


def _locator(value) -> tuple[str, str] | None:
    """(open URL, where) of a locator's JSON, or None for any value that is not one: a column of any
    query may be called `locator_json` (`select 1 as locator_json`), so nothing about it is trusted."""
    try:
        loc = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return None
    action = loc.get("openAction") if isinstance(loc, dict) else None
    url = action.get("url") if isinstance(action, dict) else None
    if not isinstance(url, str):
        return None
    page, precision = loc.get("page"), loc.get("precision")
    where = f"p.{page}" if isinstance(page, int) else precision if isinstance(precision, str) else ""
    return url, where


@hookimpl
def render_cell(row, value, column, table, database, datasette):
    from markupsafe import Markup, escape

    state = _state(datasette)
    if database != state.name or value is None:
        return None
    base = state.site_base if state.site_dir else None
    if base is None:
        return None
    try:
        keys = row.keys()
    except AttributeError:
        return None
    if column == "block_id" and "locator_json" in keys and isinstance(value, str):
        found = _locator(row["locator_json"])
        if found:
            return Markup(f'<a href="{escape(base + found[0])}">{escape(value)}</a>')
    if column == "locator_json":
        found = _locator(value)
        if found:
            url, where = found
            return Markup(
                f'<a href="{escape(base + url)}">open {escape(where)} ▸</a> '
                f"<code>{escape(value[:120])}…</code>"
            )
    if column == "source_root_relative_path" and isinstance(value, str):
        # the recorded page (the site's placement: `urls.Pages`) of a row of the table, not of a query
        recorded = row["page_url"] if table == "evidence_resource" and "page_url" in keys else None
        url = recorded if isinstance(recorded, str) else page_url(value)
        return Markup(f'<a href="{escape(base + url)}">{escape(value)}</a>')
    return None
