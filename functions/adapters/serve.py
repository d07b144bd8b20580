"""`mnote-evidence serve`: Datasette + our plugin + the static site, one URL (SPEC §12).

The port is bound before anything is printed, so a busy port is refused with a
message, not a banner followed by a crash. With `--watch WORKSPACE` a watcher
thread first catches up (an incremental build of whatever changed while no server
was watching), then polls the workspace (stat only, every `POLL_SECONDS`), waits
until changes settle and runs an incremental build in a child process with the
build flags `serve` was given (`--no-ocr`, `--page-zoom`, ...); the child dies with the server,
even killed by SIGKILL (`build/parse/workers.py: die_with`). A failed build is
retried with a growing delay (`RETRY_FIRST_SECONDS` doubling to `RETRY_MAX_SECONDS`)
even if nothing else changes.
Live reload: `/-/evidence/live` says which build the site is at (`live_reload`); a page serve sends
asks it every second and reloads itself after a rebuild that changed the site
(`site_templates/_static/live.js`); without `--watch` it answers that nothing is watched, and the
page stops asking. Static hosts never have the route: their pages ask nothing.
Invariants: the previous index is served until a build has renamed a complete new
`evidence.sqlite` into place, and every view reads it from the next query on
(`functions/adapters/live_database.py`); the server is never restarted. An index of
another schema or segmentation version is reported at start (the query endpoints
answer 503 until it is rebuilt; with `--watch` the catch-up build rebuilds it).
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path

from mnote_evidence.build.knowledge.lightrag import URL_ENV
from mnote_evidence.build.parse.workers import DIE_WITH_ENV
from mnote_evidence.build.workspace.scan import skip_dir
from mnote_evidence.functions.adapters.guard import allowed_hosts_for
from mnote_evidence.functions.adapters.sql_limits import DATASETTE_SETTINGS
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import IndexIncompatible

POLL_SECONDS = 0.3
SETTLE_SECONDS = 0.3
RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 30.0
DB_NAME = "evidence.sqlite"
LIVE_PATH = "/-/evidence/live"


def links_ask(site_dir: Path) -> bool:
    """Whether the built site's pages link the Ask page (read from its front page's header)."""
    try:
        return 'class="ask-link"' in (site_dir / "index.html").read_text("utf-8", errors="replace")
    except OSError:
        return False


class ServeError(Exception):
    """A reason `serve` cannot start, in words for the user (the CLI prints it)."""


def snapshot(root: Path, exclude: Path | None = None) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file the build would look at."""
    out = {}
    excluded = exclude.resolve() if exclude else None
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not skip_dir(d) and (here / d).resolve() != excluded]
        for name in filenames:
            if name.startswith("."):
                continue
            try:
                st = os.stat(here / name)
            except OSError:
                continue
            out[os.path.join(dirpath, name)] = (st.st_size, st.st_mtime_ns)
    return out


def looks_like_notes(folder: Path) -> bool:
    """A folder of Markdown notes (a workspace), as opposed to a built site."""
    for _dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not skip_dir(d)]
        if any(name.lower().endswith(".md") for name in filenames):
            return True
    return False


class Watcher(threading.Thread):
    """Rebuild `out` from `workspace`: once at start (catch up), then on every change, retrying failures."""

    def __init__(
        self,
        workspace: Path,
        out: Path,
        jobs: int,
        log: Callable[[str], None] = print,
        on_rebuilt: Callable[[], None] | None = None,
        build_args: tuple[str, ...] = (),
    ):
        super().__init__(name="mnote-evidence-watch", daemon=True)
        self.workspace, self.out, self.jobs, self.log = workspace.resolve(), out.resolve(), jobs, log
        self.build_args = tuple(build_args)  # the serve command's build flags, on every rebuild
        self.on_rebuilt = on_rebuilt
        self.stop = threading.Event()
        self.builds = 0
        self.failures = 0
        self.site_changes = 0  # rebuilds that changed the index or wrote pages: open pages reload

    def run(self) -> None:
        last: dict | None = None  # None: nothing built yet by this watcher -> catch up first
        retry_at, delay = None, RETRY_FIRST_SECONDS
        while not self.stop.is_set():
            current = snapshot(self.workspace, self.out)
            changed = last is not None and current != last
            if last is None or changed or (retry_at is not None and time.monotonic() >= retry_at):
                detected = time.monotonic()
                if changed:
                    current = self._settle(current)
                why = (
                    "catching up with changes made while no server was watching"
                    if last is None
                    else ("change" if changed else f"retrying the failed rebuild (after {delay / 2:.0f}s)")
                )
                ok = self.build_once(detected, why)
                last = current  # seen before the build started: later saves trigger another build
                if ok:
                    retry_at, delay = None, RETRY_FIRST_SECONDS
                else:
                    retry_at, delay = time.monotonic() + delay, min(delay * 2, RETRY_MAX_SECONDS)
            self.stop.wait(POLL_SECONDS)

    def _settle(self, current: dict) -> dict:
        """Wait until the editor has finished saving (two equal snapshots in a row)."""
        while not self.stop.wait(SETTLE_SECONDS):
            settled = snapshot(self.workspace, self.out)
            if settled == current:
                break
            current = settled
        return current

    def build_once(self, detected: float | None = None, why: str = "change") -> bool:
        """One incremental build in a child process; True when it succeeded."""
        detected = time.monotonic() if detected is None else detected
        cmd = [
            sys.executable,
            "-m",
            "mnote_evidence",
            "build",
            str(self.workspace),
            "--out",
            str(self.out),
            "--jobs",
            str(self.jobs),
            *self.build_args,
            "--json",
        ]  # tokens pass through the environment
        # the build dies with this server (DIE_WITH_ENV): a killed `serve` leaves no rebuild running
        env = {**os.environ, DIE_WITH_ENV: str(os.getpid())}
        result = subprocess.run(cmd, capture_output=True, text=True, env=env)
        self.builds += 1
        if result.returncode != 0:
            self.failures += 1
            self.log(
                f"rebuild failed (exit {result.returncode}, {why}); still serving the previous index, "
                f"will retry\n{result.stderr.strip()[-2000:]}"
            )
            return False
        try:
            report = json.loads(result.stdout)
        except ValueError:
            report = {}
        site = report.get("site") or {}
        if self.on_rebuilt:
            self.on_rebuilt()
        if report.get("changed", True) or site.get("pages_written", 0):
            self.site_changes += 1
        what = "rebuilt" if report.get("changed", True) else "index up to date"
        self.log(
            f"{what} in {report.get('seconds', 0):.2f}s ({report.get('parsed', 0)} parsed, "
            f"{site.get('pages_written', 0)} pages; {why}), done {time.monotonic() - detected:.2f}s "
            f"after {'the change was seen' if why == 'change' else 'it started'}"
        )
        return True


def live_reload(watcher: Watcher | None) -> types.ModuleType:
    """A Datasette plugin of one `serve` process: `LIVE_PATH` answers `{"watching", "build"}`, where
    `build` changes after every rebuild that changed the site (and when the server restarts), so an
    open page knows when to reload. Every site file is sent with the build it was read at
    (`Server-Timing: mnote-build;desc="…"`, taken before the file is read), so a page reloads after a
    rebuild that landed between its own request and its first question. Its route sits behind the
    guard like every other route."""
    from datasette import hookimpl
    from datasette.utils.asgi import Response

    from mnote_evidence.functions.adapters.datasette_plugin import SITE_BASE

    started = time.time_ns()

    def build() -> str:
        return f"{started}-{watcher.site_changes if watcher is not None else 0}"

    async def view(request):
        payload = {"watching": watcher is not None, "build": build()}
        return Response.json(payload, headers={"Cache-Control": "no-store"})

    @hookimpl
    def register_routes(datasette):
        return [("^" + re.escape(LIVE_PATH) + "$", view)]

    @hookimpl
    def asgi_wrapper(datasette):
        def wrap(app):
            async def stamped(scope, receive, send):
                if scope["type"] != "http" or not scope.get("path", "").startswith(SITE_BASE):
                    return await app(scope, receive, send)
                # read before the file: a rebuild in between costs one extra reload, never a stale page
                timing = f'mnote-build;desc="{build()}"'.encode()

                async def send_stamped(message):
                    if message["type"] == "http.response.start":
                        headers = [*message.get("headers", []), (b"server-timing", timing)]
                        message = {**message, "headers": headers}
                    await send(message)

                return await app(scope, receive, send_stamped)

            return stamped

        return wrap

    plugin = types.ModuleType("mnote_evidence_live")  # Datasette lists plugins by their module's name
    plugin.register_routes = register_routes
    plugin.asgi_wrapper = asgi_wrapper
    return plugin


def _index_problem(db: Path) -> str | None:
    """What the query endpoints will answer instead of results (None: the index is readable)."""
    probe = EvidenceDB(db)
    try:
        with probe.session():
            return None
    except IndexIncompatible as exc:
        return exc.message
    finally:
        probe.live.close_all()


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now: a busy port is refused before anything is printed."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say they are
    # TCP; otherwise every small response waits for a delayed ACK (docs/performance.md).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: restart without waiting
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"port {port} on {host} is already in use (another `mnote-evidence serve` or "
                f"Datasette?): stop it, or pick a free port with --port"
            ) from None
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def _uri_safe(site_dir: Path) -> Path:
    """The site folder by a path Datasette can open: it builds `file:{path}` URIs unescaped, so a
    `#`, `?` or `%` in the path would open another (empty) file; such a folder is reached through
    a symlink in a private temporary folder (replacements by rename are still seen through it)."""
    if not set(str(site_dir)) & set("#?%"):
        return site_dir
    alias = Path(tempfile.mkdtemp(prefix="mnote-serve-")) / "site"
    alias.symlink_to(site_dir.resolve(), target_is_directory=True)
    return alias


def _plugin_config(host: str, lightrag_url: str | None, lightrag_timeout: float) -> dict:
    """Plugin settings, which `/-/metadata.json` shows: no path (the site is the database's folder)
    and no URL credentials (the LightRAG URL goes to the plugin through the environment)."""
    if lightrag_url:
        os.environ[URL_ENV] = lightrag_url
    config: dict = {"lightrag_timeout": lightrag_timeout}
    hosts = allowed_hosts_for(host, os.environ.get("MNOTE_ALLOWED_HOSTS", ""))
    if hosts is not None:
        config["allowed_hosts"] = sorted(hosts)
    return config


def serve(
    site_dir: Path,
    host: str,
    port: int,
    watch: Path | None,
    jobs: int,
    lightrag_url: str | None = None,
    lightrag_timeout: float = 30.0,
    build_args: list[str] | tuple[str, ...] = (),
) -> None:
    """Bind, build first if `--watch` has nothing to serve yet, print the URLs, serve until interrupted.

    `build_args` (the `build` flags, from the CLI) go to every `--watch` build: first, catch-up, later."""
    import uvicorn
    from datasette.app import Datasette
    from datasette.plugins import pm

    from mnote_evidence.functions.adapters.datasette_plugin import SITE_BASE, refresh

    sock = bind(host, port)
    db = site_dir / DB_NAME
    log = lambda m: print(m, flush=True)  # noqa: E731
    watcher = (
        Watcher(watch, site_dir, jobs, log=log, build_args=tuple(build_args)) if watch is not None else None
    )
    if watcher is not None and not db.is_file():
        log(f"Building {watch} into {site_dir} first…")
        if not watcher.build_once(why="first build"):
            sock.close()
            raise ServeError(f"the first build of {watch} failed (see above); nothing to serve yet")
    problem = _index_problem(db)
    if problem:  # still serve: the site and the SQL work; the query endpoints answer 503 with this
        print(
            f"warning: {problem}" + (" (the first --watch build rebuilds it)" if watcher else ""), flush=True
        )
    ds = Datasette(
        immutables=[str(_uri_safe(site_dir) / DB_NAME)],
        settings={"suggest_facets": False, "facet_time_limit_ms": 50, **DATASETTE_SETTINGS},
        metadata={"plugins": {"mnote-evidence": _plugin_config(host, lightrag_url, lightrag_timeout)}},
    )
    pm.register(live_reload(watcher), name="mnote-evidence-live")  # before ds.app(), which reads the routes
    url = f"http://{host}:{sock.getsockname()[1]}"
    print(
        f"Evidence site:  {url}{SITE_BASE}index.html\nData (SQL):     {url}/{db.stem}\n"
        f"Search API:     {url}/-/evidence/search?query=...",
        flush=True,
    )
    if lightrag_url and watcher is None and not links_ask(site_dir):
        print(
            f"Ask page:       {url}{SITE_BASE}ask.html (the pages link it once the site is built with "
            "--lightrag-url, as `serve --watch` does)",
            flush=True,
        )
    if watcher is not None:
        watcher.on_rebuilt = lambda: refresh(ds)
        watcher.start()
        print(f"Watching {watch} for changes", flush=True)
    try:
        uvicorn.Server(uvicorn.Config(ds.app(), host=host, port=port, log_level="warning")).run(
            sockets=[sock]
        )
    finally:
        if watcher:
            watcher.stop.set()
