"""`mnote-evidence`: a thin shell over the library (flags in, library call, report out).

Start-up: each command imports only what it needs, inside the command; at module level
only click, the package version and the few light constants the options' choices and
defaults list (build/defaults.py, OCR engine names, sidecar layouts, search kinds and
modes), the typed errors and progress events. So `ask --json` does not pay for the
build's parsers or Datasette; tests/test_cli.py checks what `ask` imports.

The only module that knows click: it takes every default from the library, turns the
library's typed errors (`build/errors.py`) into messages that say what to do, and draws
progress bars from the library's `ProgressEvent`s.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import click

from mnote_evidence import __version__
from mnote_evidence.build.defaults import DEFAULT_JOBS, DEFAULT_MAX_FILE_MB, DEFAULT_MAX_PAGE_IMAGES, DEFAULT_OUT
from mnote_evidence.build.errors import BuildLocked, MnoteError, NotAWorkspace, UnknownKind
from mnote_evidence.build.fsutil import storage_error_message
from mnote_evidence.build.ocr.engines import ENGINE_NAMES, ENGINES
from mnote_evidence.build.ocr.settings import OcrSettings
from mnote_evidence.build.progress import ProgressEvent, Stage
from mnote_evidence.build.sidecars import LAYOUTS
from mnote_evidence.functions.evidence import DEFAULT_TOP_K, KINDS, MAX_TOP_K, MODES

if TYPE_CHECKING:
    from mnote_evidence.build.pipeline import BuildReport


class _Commands(click.Group):
    """Every command: a disk-full / permission error is one clear line, not a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (OSError, sqlite3.OperationalError) as exc:
            message = storage_error_message(exc)
            if message is None:
                raise
            raise click.ClickException(message) from None


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mnote-evidence")
def main() -> None:
    """Trace every fact in a folder of Markdown notes and attachments to the exact
    place it came from: PDF page and box, Word paragraph, Markdown lines.

    \b
    Typical use:
      mnote-evidence build ~/notes            # parse + index into ./_site/
      mnote-evidence build ~/notes --json     # machine-readable summary
      mnote-evidence search 线程作用域          # hits with links that open the exact place
    """


def _what_to_do(exc: MnoteError) -> str:
    """The library's error as a message for a person: what happened and what to do."""
    if isinstance(exc, BuildLocked):
        return (f"another build is writing {exc.out}; wait for it to finish, "
                "or build into another folder with --out")
    if isinstance(exc, NotAWorkspace):
        if exc.path.exists():
            return (f"WORKSPACE '{exc.path}' is a file, not a folder: pass the folder that holds your notes "
                    f"(for this file, its folder '{exc.path.parent}')")
        return f"WORKSPACE '{exc.path}' does not exist: pass the folder that holds your notes"
    if isinstance(exc, UnknownKind):
        return (f"{exc}: the index in OUT was written by another version, so build into an empty --out "
                "folder; if it happens there too, the format registered for this file (build/formats.py) "
                "names a page rule that build/render/pages.py lacks")
    return str(exc)


class _ProgressBars:
    """Draws the library's progress (`ProgressEvent`s) as one click bar per stage, on stderr."""

    LABELS = {Stage.NOTES: "Reading notes", Stage.PARSE: "Parsing", Stage.RENDER: "Writing pages",
              Stage.PAGE_IMAGES: "Rendering pages"}

    def __init__(self) -> None:
        self.stage: Stage | None = None
        self.bar = None

    def __call__(self, event: ProgressEvent) -> None:
        if event.stage != self.stage:
            self.close()
            self.stage = event.stage
            if event.total and event.stage in self.LABELS:
                self.bar = click.progressbar(length=event.total, label=self.LABELS[event.stage], file=sys.stderr)
                self.bar.__enter__()
        if self.bar is not None and event.done > self.bar.pos:
            self.bar.update(event.done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _run_library(call: Callable[[], BuildReport]) -> BuildReport:
    try:
        return call()
    except MnoteError as exc:
        raise click.ClickException(_what_to_do(exc)) from None


# The build options that shape the output, defined once: `build` takes them, and `serve --watch`
# takes them too and passes them to every rebuild (`build_args`), so a rebuild makes what `build` made.
_OUTPUT_OPTIONS = [
    click.option("--max-file-mb", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_MAX_FILE_MB,
                 show_default=True,
                 help="Files larger than this are recorded as errors (file_too_large), not parsed."),
    click.option("--max-page-images", type=click.IntRange(min=1), default=DEFAULT_MAX_PAGE_IMAGES,
                 show_default=True,
                 help="Render page images for at most this many pages of each PDF; later pages keep their text "
                      "boxes and anchors without an image (warning page_images_capped)."),
    click.option("--page-zoom", type=click.FloatRange(0.5, 4), default=lambda: _default_zoom(), show_default=True,
                 help="PDF page image scale (1 = 72 dpi). 2 keeps 7 pt print legible; 1.5 saves ~35 % bytes."),
    click.option("--ocr-engine", type=click.Choice(ENGINE_NAMES), default=OcrSettings().engine,
                 show_default=True, help="OCR for images and scanned PDF pages (local engines need no network)."),
    click.option("--no-ocr", is_flag=True, help="Turn OCR off: images get no text, scanned PDFs are errors."),
    click.option("--mineru-url", envvar="MINERU_URL", help="MinerU API base URL (token from MINERU_TOKEN only)."),
    click.option("--allow-upload", is_flag=True, help="Allow --ocr-engine mineru to upload files to that service."),
    click.option("--ocr-fallback", type=click.Choice(list(ENGINES)),
                 help="Local engine to use when MinerU is requested but not configured (default: none, an error)."),
    click.option("--sidecars", type=click.Choice(LAYOUTS), default=None,
                 help="Where parse results go: 'beside' = a Note.ocr/ folder next to the owning note (the MNote "
                      "convention); 'mnote' = all under the hidden .mnote/ folder, nothing added beside your "
                      "notes. Default: what the last build into OUT used, else 'beside'."),
]


def _output_options(command: Callable) -> Callable:
    """Apply `_OUTPUT_OPTIONS` to a command (in the order `--help` lists them)."""
    for option in reversed(_OUTPUT_OPTIONS):
        command = option(command)
    return command


def build_args(max_file_mb: float, max_page_images: int, page_zoom: float, ocr_engine: str, no_ocr: bool,
               mineru_url: str | None, allow_upload: bool, ocr_fallback: str | None, sidecars: str | None,
               lightrag_url: str | None = None) -> list[str]:
    """The `build` flags that reproduce these option values (for `serve --watch`'s rebuilds)."""
    args = ["--max-file-mb", repr(max_file_mb), "--max-page-images", str(max_page_images),
            "--page-zoom", repr(page_zoom), "--ocr-engine", ocr_engine]
    args += ["--no-ocr"] if no_ocr else []
    args += ["--allow-upload"] if allow_upload else []
    for flag, value in (("--mineru-url", mineru_url), ("--ocr-fallback", ocr_fallback), ("--sidecars", sidecars),
                        ("--lightrag-url", lightrag_url)):
        args += [flag, value] if value else []
    return args


@main.command("build")
@click.argument("workspace", type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT,
              show_default=True, help="Output folder: receives evidence.sqlite (and the site).")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=DEFAULT_JOBS,
              show_default="CPU count", help="Parse this many files in parallel.")
@click.option("--site/--no-site", default=True, show_default=True,
              help="Render the static site into OUT after indexing.")
@_output_options
@click.option("--lightrag-url", envvar="LIGHTRAG_URL",
              help="Ingest parsed/OCR text into this LightRAG server (API key from LIGHTRAG_API_KEY only).")
@click.option("--json", "as_json", is_flag=True, help="Print the build summary as JSON on stdout.")
@click.option("--strict", is_flag=True, help="Exit with status 1 if any file was recorded as an error.")
def build_command(workspace: Path, out: Path, jobs: int, site: bool, max_file_mb: float, max_page_images: int,
                  page_zoom: float, ocr_engine: str, no_ocr: bool, mineru_url: str | None, allow_upload: bool,
                  ocr_fallback: str | None, lightrag_url: str | None, sidecars: str | None, as_json: bool,
                  strict: bool) -> None:
    """Parse WORKSPACE (a folder of notes) into sidecars, OUT/evidence.sqlite and
    a static site in OUT (open OUT/index.html, or serve OUT from any static host).

    Incremental: files whose content hash is unchanged are not parsed again and
    their pages are not re-rendered. Bad files (corrupt, encrypted, empty, too
    large...) are recorded with an error code and message; the rest of the
    build completes. Sidecars are written next to the owning note
    (`Note.ocr/`) or under `.mnote/sidecars/` (all of them with `--sidecars mnote`).
    """
    from mnote_evidence.build.knowledge.lightrag import LightRagConfig
    from mnote_evidence.build.pipeline import BuildOptions, build  # the build's imports (PyMuPDF, ...) only here

    ocr = OcrSettings(engine="none" if no_ocr else ocr_engine, mineru_url=mineru_url, allow_upload=allow_upload,
                      fallback=ocr_fallback)
    bars = _ProgressBars() if sys.stderr.isatty() and not as_json else None
    options = BuildOptions(out=out, jobs=jobs, max_file_mb=max_file_mb, site=site, page_zoom=page_zoom,
                           max_page_images=max_page_images, ocr=ocr,
                           lightrag=LightRagConfig.from_env(lightrag_url), sidecars=sidecars, on_progress=bars)
    try:
        report = _run_library(lambda: build(workspace, options))
    finally:
        if bars:
            bars.close()
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        _print_report(report)
    if strict and report.errors:
        sys.exit(1)


def _default_zoom() -> float:
    """The renderer's default page zoom (imported only when `build` runs: `ask` starts without PyMuPDF)."""
    from mnote_evidence.build.render.page_images import DEFAULT_ZOOM

    return DEFAULT_ZOOM


def _print_report(report: BuildReport) -> None:
    from mnote_evidence.build.versions import describe as describe_redone

    counts = ", ".join(f"{n} {status}" for status, n in report.status_counts.items()) or "no files"
    what = "updated" if report.changed else "up to date"
    click.echo(f"{report.db_path}: {what} in {report.seconds:.2f}s ({counts})")
    click.echo(f"  parsed {report.parsed}, reused sidecars {report.reused_sidecars}, "
               f"unchanged {report.unchanged}, newly stale {report.stale}, removed {report.removed}")
    if report.site is not None:
        s = report.site
        click.echo(f"  site: {s.pages_written} pages written, {s.pages_unchanged} unchanged, "
                   f"{s.page_images} page images, {s.tombstones} tombstones -> "
                   f"{Path(report.db_path).parent / 'index.html'}")
        for p in s.problems:
            click.echo(f"  site    {p['path']}: [{p['code']}] {p['message']}", err=True)
    if report.knowledge is not None:
        k = report.knowledge
        click.echo(f"  lightrag: {k['inserted']} inserted, {k['deleted']} deleted, {k['unchanged']} unchanged, "
                   f"{k['failed']} failed" + (f"; not reachable: {k['error']}" if k["error"] else ""))
    for line in describe_redone(report.redone, report.site):
        click.echo(f"  redone: {line}")
    for err in report.errors:
        click.echo(f"  error   {err['path']}: [{err['code']}] {err['message']}", err=True)
    for warn in report.warnings:
        click.echo(f"  warning {warn['path']}: [{warn['code']}] {warn['message']}", err=True)


@main.command("serve")
@click.argument("site_dir", default=DEFAULT_OUT, type=click.Path(file_okay=False, path_type=Path))
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=8001, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to listen on (0.0.0.0 makes the site visible to your network).")
@click.option("--watch", "watch", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Workspace to watch: rebuild incrementally on every change while serving.")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=DEFAULT_JOBS,
              show_default="CPU count", help="Parallel parsers for --watch rebuilds.")
@_output_options
@click.option("--lightrag-url", envvar="LIGHTRAG_URL",
              help="LightRAG server for /-/knowledge/* and the Ask page (and, with --watch, ingested into).")
@click.option("--lightrag-timeout", type=click.FloatRange(1, 600), default=30.0, show_default=True)
def serve_command(site_dir: Path, port: int, host: str, watch: Path | None, jobs: int, lightrag_url: str | None,
                  lightrag_timeout: float, **output: Any) -> None:
    """Serve SITE_DIR (the output of `build`): the static site, Datasette over its
    evidence.sqlite, and the /-/evidence/search|read|open endpoints, on one URL.

    With --watch, every rebuild gets the build options given here (--no-ocr,
    --ocr-engine, --page-zoom, ...), so it makes what `build` with them made.

    \b
      mnote-evidence build ~/notes && mnote-evidence serve
      mnote-evidence serve _site --watch ~/notes     # catch up, then rebuild on every save
    """
    import shlex

    from mnote_evidence.functions.serve import ServeError, looks_like_notes, serve

    if not (site_dir / "evidence.sqlite").is_file():
        if site_dir.is_dir() and looks_like_notes(site_dir):
            notes = shlex.quote(str(site_dir))
            raise click.ClickException(
                f"{site_dir} is a folder of notes, not a built site (it has Markdown files and no evidence.sqlite)."
                f" Build it, then serve the result:\n  mnote-evidence build {notes}\n  mnote-evidence serve _site\n"
                f"or build and keep it up to date while serving:\n  mnote-evidence serve _site --watch {notes}")
        if watch is None:
            raise click.ClickException(
                f"{site_dir}/evidence.sqlite not found: run `mnote-evidence build WORKSPACE --out "
                f"{shlex.quote(str(site_dir))}` first, or `mnote-evidence serve {shlex.quote(str(site_dir))} "
                "--watch WORKSPACE` to build and serve")
    try:
        serve(site_dir, host, port, watch, jobs, lightrag_url, lightrag_timeout,
              build_args(**output, lightrag_url=lightrag_url))
    except ServeError as exc:
        raise click.ClickException(str(exc)) from None


@main.command("ask")
@click.argument("question")
@click.option("--site", "site_dir", default=DEFAULT_OUT, type=click.Path(file_okay=False, path_type=Path),
              show_default=True, help="The built site (its evidence.sqlite maps LightRAG's sources).")
@click.option("--lightrag-url", envvar="LIGHTRAG_URL", help="LightRAG server (default: LIGHTRAG_URL).")
@click.option("--mode", type=click.Choice(["naive", "local", "global", "hybrid", "mix"]), default="mix",
              show_default=True)
@click.option("--top-k", type=click.IntRange(1, 50), default=10, show_default=True)
@click.option("--timeout", type=click.FloatRange(1, 600), default=30.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the whole answer (citations included) as JSON.")
def ask_command(question: str, site_dir: Path, lightrag_url: str | None, mode: str, top_k: int, timeout: float,
                as_json: bool) -> None:
    """Ask LightRAG QUESTION and print the answer with citations you can click:
    each opens the exact page, box or paragraph in the built site."""
    from mnote_evidence.build.knowledge.lightrag import LightRagConfig
    from mnote_evidence.functions.contracts import Context
    from mnote_evidence.functions.db import EvidenceDB
    from mnote_evidence.functions.errors import call
    from mnote_evidence.functions.knowledge import ask

    if not (site_dir / "evidence.sqlite").is_file():
        raise click.ClickException(f"{site_dir}/evidence.sqlite not found: build the workspace first")
    ctx = Context(EvidenceDB(site_dir / "evidence.sqlite"), "", LightRagConfig.from_env(lightrag_url, timeout))
    status, body = call(lambda r: ask(r, ctx), {"query": question, "mode": mode, "topK": top_k})
    if as_json:
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
    elif status != 200 or not body.get("ok"):
        code = body.get("error", {}).get("code") or body.get("degradedReason")
        message = body.get("error", {}).get("message") or body.get("message") or ""
        raise click.ClickException(f"no answer [{code}]: {message}")
    else:
        click.echo(ask_text(body, site_dir))
    if status != 200 or not body.get("ok"):
        sys.exit(1)


def site_link(site_dir: Path, url: str) -> str:
    """A site-relative URL as a link that opens the anchor: file:// into the built site, or the
    site-relative URL as is when no site was rendered there (`build --no-site`)."""
    if (site_dir / "index.html").is_file():
        return site_dir.resolve().as_uri() + "/" + url
    return url


def ask_text(body: dict, site_dir: Path) -> str:
    """The answer with [id] badges, then one line per citation with a file:// link into the site."""
    answer = "".join(s.get("text") or f"[{s['citationId']}]" for s in body.get("segments", []))
    lines = [answer.strip() or "(no answer text)", ""]
    for c in body["citations"]:
        where = " · ".join(x for x in (c["sourcePath"], f"p.{c['page']}" if "page" in c else "",
                                       " > ".join(c["headingPath"])) if x)
        lines.append(f"[{c['citationId']}] {where} ({c['locatorPrecision']})")
        lines.append(f"    {c['displayQuote'][:160]}")
        lines.append(f"    {site_link(site_dir, c['citationUrl'])}")
    return "\n".join(lines)


@main.command("search")
@click.argument("query")
@click.option("--site", "site_dir", default=DEFAULT_OUT, type=click.Path(file_okay=False, path_type=Path),
              show_default=True, help="The built site whose evidence.sqlite is searched.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS),
              help="Only these kinds of files (repeat the option for several).")
@click.option("--path", "path_prefix", help="Only files whose workspace path starts with this (e.g. 研究/).")
@click.option("--mode", type=click.Choice(MODES), default="fts", show_default=True,
              help="fts: full-text; graph: follow links from the hits; hybrid: both.")
@click.option("--top", "top_k", type=click.IntRange(1, MAX_TOP_K), default=DEFAULT_TOP_K, show_default=True)
@click.option("--include-furniture", is_flag=True,
              help="Also rank PDF page furniture (running headers, footers, page numbers).")
@click.option("--json", "as_json", is_flag=True, help="Print the search function's response as JSON.")
def search_command(query: str, site_dir: Path, kinds: tuple[str, ...], path_prefix: str | None, mode: str,
                   top_k: int, include_furniture: bool, as_json: bool) -> None:
    """Search the evidence index for QUERY (Chinese substrings and English words) and print
    each hit with a link that opens its exact place in the site: the same function as the
    HTTP route /-/evidence/search.

    \b
      mnote-evidence search 线程作用域
      mnote-evidence search "retention period" --kind pdf --top 3
    """
    from mnote_evidence.functions.db import EvidenceDB
    from mnote_evidence.functions.errors import call
    from mnote_evidence.functions.evidence import Context, search

    if not (site_dir / "evidence.sqlite").is_file():
        raise click.ClickException(f"{site_dir}/evidence.sqlite not found: run `mnote-evidence build WORKSPACE "
                                   f"--out {site_dir}` first, or point --site at a built site")
    request: dict = {"query": query, "mode": mode, "topK": top_k}
    if kinds:
        request["resourceKinds"] = list(kinds)
    if path_prefix:
        request["pathPrefix"] = path_prefix
    if include_furniture:
        request["includeFurniture"] = True
    status, body = call(lambda r: search(r, Context(EvidenceDB(site_dir / "evidence.sqlite"))), request)
    if status != 200:
        raise click.ClickException(f"{body['error']['message']} [{body['error']['code']}]")
    click.echo(json.dumps(body, ensure_ascii=False, indent=2) if as_json else search_text(body, site_dir))


def search_text(body: dict, site_dir: Path) -> str:
    """One entry per result: where (path, page / lines / paragraph, section), the quote, the link."""
    results = body["results"]
    lines = [f"{len(results)} result{'s' if len(results) != 1 else ''} for {body['query']!r} ({body['mode']})"]
    for n, r in enumerate(results, 1):
        loc = r["source"]
        first, last = loc.get("lineRange", (0, 0))
        place = (f"p.{loc['page']}" if "page" in loc else
                 (f"line {first}" if first == last else f"lines {first}-{last}") if "lineRange" in loc else
                 f"¶{loc['paragraphIndex']}" if "paragraphIndex" in loc else "")
        where = " · ".join(x for x in (loc["resourcePath"], place, " > ".join(loc.get("sectionPath", []))) if x)
        via = f", via {r['via']['edgeType']}" if "via" in r else ""
        lines += ["", f"{n}. {where} ({loc['precision']}{via})", f"   {r['quote']}",
                  f"   {site_link(site_dir, loc['openAction']['url'])}"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
