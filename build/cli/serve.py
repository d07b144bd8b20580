"""`mnote-evidence serve`: the site, Datasette and the evidence routes on one URL
(`functions/adapters/serve.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mnote_evidence.build.cli.common import run_library
from mnote_evidence.build.cli.options import build_args, output_options
from mnote_evidence.build.core.defaults import DEFAULT_JOBS, DEFAULT_OUT


@click.command("serve")
@click.argument("site_dir", default=DEFAULT_OUT, type=click.Path(file_okay=False, path_type=Path))
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=8001, show_default=True)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on (0.0.0.0 makes the site visible to your network).",
)
@click.option(
    "--watch",
    "watch",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Workspace to watch: rebuild incrementally on every change while serving.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 64),
    default=DEFAULT_JOBS,
    show_default="CPU count",
    help="Parallel parsers for --watch rebuilds.",
)
@output_options
@click.option(
    "--lightrag-url",
    envvar="LIGHTRAG_URL",
    help="LightRAG server for /-/knowledge/* and the Ask page (and, with --watch, ingested into).",
)
@click.option("--lightrag-timeout", type=click.FloatRange(1, 600), default=30.0, show_default=True)
def serve_command(
    site_dir: Path,
    port: int,
    host: str,
    watch: Path | None,
    jobs: int,
    lightrag_url: str | None,
    lightrag_timeout: float,
    **output: Any,
) -> None:
    """Serve SITE_DIR (the output of `build`): the static site, Datasette over its
    evidence.sqlite, and the /-/evidence/search|read|open endpoints, on one URL.

    With --watch, every rebuild gets the build options given here (--no-ocr,
    --ocr-engine, --page-zoom, ...), so it makes what `build` with them made.

    \b
      mnote-evidence build ~/notes && mnote-evidence serve
      mnote-evidence serve _site --watch ~/notes     # catch up, then rebuild on every save
    """
    import shlex

    from mnote_evidence.functions.adapters.serve import ServeError, looks_like_notes, serve

    if watch is not None:  # its rebuilds would be refused: said once, before serving
        from mnote_evidence.build.pipeline import check_output

        run_library(lambda: check_output(watch, site_dir))
    if not (site_dir / "evidence.sqlite").is_file():
        if site_dir.is_dir() and looks_like_notes(site_dir):
            notes = shlex.quote(str(site_dir))
            raise click.ClickException(
                f"{site_dir} is a folder of notes, not a built site (it has Markdown files and no "
                "evidence.sqlite)."
                f" Build it, then serve the result:\n  mnote-evidence build {notes}\n  mnote-evidence serve "
                "_site\n"
                "or build and keep it up to date while serving:\n  mnote-evidence serve _site --watch "
                f"{notes}"
            )
        if watch is None:
            raise click.ClickException(
                f"{site_dir}/evidence.sqlite not found: run `mnote-evidence build WORKSPACE --out "
                f"{shlex.quote(str(site_dir))}` first, or `mnote-evidence serve {shlex.quote(str(site_dir))} "
                "--watch WORKSPACE` to build and serve"
            )
    try:
        serve(
            site_dir,
            host,
            port,
            watch,
            jobs,
            lightrag_url,
            lightrag_timeout,
            build_args(**output, lightrag_url=lightrag_url),
        )
    except ServeError as exc:
        raise click.ClickException(str(exc)) from None
