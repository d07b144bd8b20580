"""The build options that shape the output, defined once: `build` takes them, and `serve --watch`
takes them too and passes them to every rebuild (`build_args`), so a rebuild makes what `build` made.
Only those two commands import this module (it names the OCR engines and sidecar layouts)."""

from __future__ import annotations

from collections.abc import Callable

import click

from mnote_evidence.build.core.defaults import (
    DEFAULT_MAX_FILE_MB,
    DEFAULT_MAX_PAGE_IMAGES,
    DEFAULT_SEARCH_FILE_MIB,
)
from mnote_evidence.build.parse.ocr.engines import ENGINE_NAMES, ENGINES
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.sidecars import LAYOUTS

_OUTPUT_OPTIONS = [
    click.option(
        "--max-file-mb",
        type=click.FloatRange(min=0, min_open=True),
        default=DEFAULT_MAX_FILE_MB,
        show_default=True,
        help="Files larger than this are recorded as errors (file_too_large), not parsed.",
    ),
    click.option(
        "--max-page-images",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_PAGE_IMAGES,
        show_default=True,
        help="Render page images for at most this many pages of each PDF; later pages keep their text "
        "boxes and anchors without an image (warning page_images_capped).",
    ),
    click.option(
        "--page-zoom",
        type=click.FloatRange(0.5, 4),
        default=lambda: _default_zoom(),
        show_default=True,
        help="PDF page image scale (1 = 72 dpi). 2 keeps 7 pt print legible; 1.5 saves ~35 % bytes.",
    ),
    click.option(
        "--search-file-mib",
        type=click.FloatRange(min=0.0625),
        default=DEFAULT_SEARCH_FILE_MIB,
        show_default=True,
        help="The static search index (_search/) is split into files of at most this many MiB, for hosts "
        "with a per-file limit (Cloudflare Pages: 25 MiB).",
    ),
    click.option(
        "--ocr-engine",
        type=click.Choice(ENGINE_NAMES),
        default=OcrSettings().engine,
        show_default=True,
        help="OCR for images and scanned PDF pages (local engines need no network).",
    ),
    click.option("--no-ocr", is_flag=True, help="Turn OCR off: images get no text, scanned PDFs are errors."),
    click.option(
        "--mineru-url", envvar="MINERU_URL", help="MinerU API base URL (token from MINERU_TOKEN only)."
    ),
    click.option(
        "--allow-upload", is_flag=True, help="Allow --ocr-engine mineru to upload files to that service."
    ),
    click.option(
        "--ocr-fallback",
        type=click.Choice(list(ENGINES)),
        help="Local engine to use when MinerU is requested but not configured (default: none, an error).",
    ),
    click.option(
        "--sidecars",
        type=click.Choice(LAYOUTS),
        default=None,
        help="Where parse results go: 'mnote' = all under the hidden .mnote/ folder, nothing added "
        "beside your notes; 'beside' = a Note.ocr/ folder next to the owning note (the MNote "
        "convention). Default: what the last build of WORKSPACE used (kept in WORKSPACE/.mnote/), "
        "else 'beside' if its notes already have Note.ocr/ folders, else 'mnote'.",
    ),
]


def output_options(command: Callable) -> Callable:
    """Apply `_OUTPUT_OPTIONS` to a command (in the order `--help` lists them)."""
    for option in reversed(_OUTPUT_OPTIONS):
        command = option(command)
    return command


def build_args(
    max_file_mb: float,
    max_page_images: int,
    page_zoom: float,
    search_file_mib: float,
    ocr_engine: str,
    no_ocr: bool,
    mineru_url: str | None,
    allow_upload: bool,
    ocr_fallback: str | None,
    sidecars: str | None,
    lightrag_url: str | None = None,
) -> list[str]:
    """The `build` flags that reproduce these option values (for `serve --watch`'s rebuilds)."""
    args = [
        "--max-file-mb",
        repr(max_file_mb),
        "--max-page-images",
        str(max_page_images),
        "--page-zoom",
        repr(page_zoom),
        "--search-file-mib",
        repr(search_file_mib),
        "--ocr-engine",
        ocr_engine,
    ]
    args += ["--no-ocr"] if no_ocr else []
    args += ["--allow-upload"] if allow_upload else []
    for flag, value in (
        ("--mineru-url", mineru_url),
        ("--ocr-fallback", ocr_fallback),
        ("--sidecars", sidecars),
        ("--lightrag-url", lightrag_url),
    ):
        args += [flag, value] if value else []
    return args


def _default_zoom() -> float:
    """The renderer's default page zoom (imported only when `build` runs: `ask` starts without PyMuPDF)."""
    from mnote_evidence.build.render.page_images import DEFAULT_ZOOM

    return DEFAULT_ZOOM
