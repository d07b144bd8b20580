"""`mnote-evidence build`: flags in, `pipeline.build`, a summary (or --json) and progress bars out."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mnote_evidence.build.cli.common import echo, echo_json, run_library
from mnote_evidence.build.cli.options import output_options
from mnote_evidence.build.core.defaults import DEFAULT_JOBS, DEFAULT_OUT
from mnote_evidence.build.core.progress import ProgressEvent, Stage
from mnote_evidence.build.parse.ocr.settings import OcrSettings

if TYPE_CHECKING:
    from mnote_evidence.build.pipeline import BuildReport


@click.command("build")
@click.argument("workspace", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="Output folder: receives evidence.sqlite (and the site).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 64),
    default=DEFAULT_JOBS,
    show_default="CPU count",
    help="Parse this many files in parallel.",
)
@click.option(
    "--executor",
    envvar="MNOTE_EXECUTOR",
    default="local",
    show_default=True,
    callback=lambda ctx, param, value: _executor(value),
    help="Where files are parsed: 'local' (--jobs worker processes) or a Dask scheduler's address "
    "(tcp://HOST:PORT; dask://HOST:PORT is the same), whose workers need not see WORKSPACE "
    "(pip install 'mnote-evidence[cluster]').",
)
@click.option(
    "--site/--no-site",
    default=True,
    show_default=True,
    help="Render the static site into OUT after indexing.",
)
@output_options
@click.option(
    "--lightrag-url",
    envvar="LIGHTRAG_URL",
    help="Ingest parsed/OCR text into this LightRAG server (API key from LIGHTRAG_API_KEY only).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the build summary as JSON on stdout.")
@click.option("--strict", is_flag=True, help="Exit with status 1 if any file was recorded as an error.")
@click.option(
    "--rehash", is_flag=True, help="Hash every file, not only those whose size or modification time changed."
)
def build_command(
    workspace: Path,
    out: Path,
    jobs: int,
    executor: str,
    site: bool,
    max_file_mb: float,
    max_page_images: int,
    page_zoom: float,
    search_file_mib: float,
    ocr_engine: str,
    no_ocr: bool,
    mineru_url: str | None,
    allow_upload: bool,
    ocr_fallback: str | None,
    lightrag_url: str | None,
    sidecars: str | None,
    as_json: bool,
    strict: bool,
    rehash: bool,
) -> None:
    """Parse WORKSPACE (a folder of notes) into sidecars, OUT/evidence.sqlite and
    a static site in OUT (open OUT/index.html, or serve OUT from any static host).

    Incremental: files whose size and modification time are unchanged are not
    read again (--rehash reads them all), files whose content hash is unchanged
    are not parsed again, and their pages are not re-rendered. Bad files (corrupt, encrypted, empty, too
    large...) are recorded with an error code and message; the rest of the
    build completes. Sidecars are written under the hidden `.mnote/sidecars/`
    (next to the owning note, in `Note.ocr/`, with `--sidecars beside`). OUT
    may not be inside WORKSPACE, unless in a hidden folder (WORKSPACE/.site).
    """
    from mnote_evidence.build.knowledge.lightrag import LightRagConfig
    from mnote_evidence.build.pipeline import (
        BuildOptions,
        build,
    )

    _die_with_the_server()

    ocr = OcrSettings(
        engine="none" if no_ocr else ocr_engine,
        mineru_url=mineru_url,
        allow_upload=allow_upload,
        fallback=ocr_fallback,
    )
    bars = _ProgressBars() if sys.stderr.isatty() and not as_json else None
    options = BuildOptions(
        out=out,
        jobs=jobs,
        executor=executor,
        max_file_mb=max_file_mb,
        site=site,
        page_zoom=page_zoom,
        max_page_images=max_page_images,
        search_file_mib=search_file_mib,
        ocr=ocr,
        lightrag=LightRagConfig.from_env(lightrag_url),
        sidecars=sidecars,
        on_progress=bars,
        rehash=rehash,
        tune_gc=True,  # this process is ours: the build may keep its long-lived objects out of the GC
    )
    try:
        report = run_library(lambda: build(workspace, options))
    finally:
        if bars:
            bars.close()
    if as_json:
        echo_json(report.to_json())
    else:
        _print_report(report)
    if strict and report.errors:
        sys.exit(1)


def _executor(value: str) -> str:
    from mnote_evidence.build.parse.executors import DASK_SCHEMES

    if value != "local" and not value.startswith(DASK_SCHEMES):
        raise click.BadParameter(f"{value!r}: use 'local' or a Dask scheduler's address, tcp://HOST:PORT")
    return value


def _die_with_the_server() -> None:
    """A build that `serve --watch` started (it names itself in `DIE_WITH_ENV`) ends when the server
    does, even by SIGKILL: the index is replaced only whole, so the server's next build starts from
    the previous one."""
    import os

    from mnote_evidence.build.parse.workers import DIE_WITH_ENV, die_with

    server = os.environ.pop(DIE_WITH_ENV, "")
    if server.isdigit():
        die_with(int(server))
        if os.getppid() != int(server):  # the server was gone before this build could watch it
            sys.exit(1)


def _print_report(report: BuildReport) -> None:
    from mnote_evidence.build.versions import describe as describe_redone

    counts = ", ".join(f"{n} {status}" for status, n in report.status_counts.items()) or "no files"
    what = "updated" if report.changed else "up to date"
    echo(f"{report.db_path}: {what} in {report.seconds:.2f}s ({counts})")
    echo(
        f"  parsed {report.parsed}, reused sidecars {report.reused_sidecars}, "
        f"unchanged {report.unchanged}, newly stale {report.stale}, removed {report.removed}"
    )
    ignored, unpublished = report.excluded["ignored"], report.excluded["unpublished"]
    if ignored or unpublished:
        echo(
            f"  excluded {ignored + unpublished} ({ignored} by .mnoteignore, "
            f"{unpublished} publish: false or draft: true)"
        )
    if report.site is not None:
        s = report.site
        echo(
            f"  site: {s.pages_written} pages written, {s.pages_unchanged} unchanged, "
            f"{s.page_images} page images, {s.tombstones} tombstones, {s.tag_pages} tag pages -> "
            f"{Path(report.db_path).parent / 'index.html'}"
        )
        for p in s.problems:
            echo(f"  site    {p['path']}: [{p['code']}] {p['message']}", err=True)
    if report.knowledge is not None:
        k = report.knowledge
        echo(
            f"  lightrag: {k['inserted']} inserted, {k['deleted']} deleted, {k['unchanged']} unchanged, "
            f"{k['failed']} failed" + (f"; not reachable: {k['error']}" if k["error"] else "")
        )
    for line in describe_redone(report.redone, report.site):
        echo(f"  redone: {line}")
    for err in report.errors:
        echo(f"  error   {err['path']}: [{err['code']}] {err['message']}", err=True)
    for warn in report.warnings:
        echo(f"  warning {warn['path']}: [{warn['code']}] {warn['message']}", err=True)


class _ProgressBars:
    """Draws the library's progress (`ProgressEvent`s) as one click bar per stage, on stderr."""

    LABELS = {
        Stage.NOTES: "Reading notes",
        Stage.PARSE: "Parsing",
        Stage.RENDER: "Writing pages",
        Stage.PAGE_IMAGES: "Rendering pages",
    }

    def __init__(self) -> None:
        self.stage: Stage | None = None
        self.bar = None

    def __call__(self, event: ProgressEvent) -> None:
        if event.stage != self.stage:
            self.close()
            self.stage = event.stage
            if event.total and event.stage in self.LABELS:
                self.bar = click.progressbar(
                    length=event.total, label=self.LABELS[event.stage], file=sys.stderr
                )
                self.bar.__enter__()
        if self.bar is not None and event.done > self.bar.pos:
            self.bar.update(event.done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
