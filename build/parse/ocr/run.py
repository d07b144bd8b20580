"""What providers call: OCR an image file or some pages of a PDF, through the cache.

Cache keys are content hashes (the image's bytes; the PDF's bytes + page +
dpi), so OCR never runs twice for the same input, whatever the file is called
or wherever it moves. Engines load once per process (`engine_for`).
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from mnote_evidence.build.core.model import ProviderError
from mnote_evidence.build.parse.libraries import image_ops, mupdf, pillow
from mnote_evidence.build.parse.ocr import mineru
from mnote_evidence.build.parse.ocr.engines import ENGINE_NAMES, ENGINES, OcrUnavailable
from mnote_evidence.build.parse.ocr.normalize import OcrLine
from mnote_evidence.build.parse.ocr.settings import OcrSettings, cached_lines, store_lines
from mnote_evidence.build.parse.pixels import capped_scale

if TYPE_CHECKING:
    import pymupdf

_SETUP_CODES = {"mineru_token_missing", "mineru_url_missing", "mineru_upload_not_allowed"}


@cache
def engine_for(name: str):
    """One engine object per process: models load once per worker, not once per image."""
    if name not in ENGINES:
        raise ProviderError(
            "ocr_engine_unknown", f"unknown OCR engine '{name}'; use one of {', '.join(ENGINE_NAMES)}"
        )
    return ENGINES[name]()


@cache
def engine_version(settings: OcrSettings) -> str:
    if settings.engine == "mineru":
        return mineru.VERSION + (
            f"|fallback:{engine_version(replace(settings, engine=settings.fallback))}"
            if settings.fallback
            else ""
        )
    try:
        return engine_for(settings.engine).version()
    except (OcrUnavailable, ImportError, OSError):
        return f"{settings.engine}-unavailable"


def versioned(base: str, settings: OcrSettings) -> str:
    """A provider version that changes with the OCR engine (so switching engines re-parses)."""
    return f"{base}+ocr:{engine_version(settings)}" if settings.enabled else base


def _local(settings: OcrSettings, image: Path) -> list[OcrLine]:
    try:
        return engine_for(settings.engine).recognise(image)
    except OcrUnavailable as exc:
        raise ProviderError("ocr_unavailable", str(exc)) from exc


def _with_fallback(settings: OcrSettings, remote, local):
    """MinerU when configured; the local fallback only if the user named one."""
    if settings.engine != "mineru":
        return local(settings)
    try:
        return remote()
    except ProviderError as exc:
        if exc.code in _SETUP_CODES and settings.fallback:
            return local(replace(settings, engine=settings.fallback))
        raise


def image_key(source_hash: str) -> str:
    """The OCR cache key of an image file: its bytes' hash."""
    return source_hash.removeprefix("sha256:")


def page_key(source_hash: str, page: int, dpi: int) -> str:
    """The OCR cache key of page `page` (1-based) of a PDF rendered at `dpi`."""
    return hashlib.sha256(f"{source_hash}|page {page}|{dpi} dpi".encode()).hexdigest()


def image_lines(
    root: Path, settings: OcrSettings, path: Path, source_hash: str, size: tuple[int, int]
) -> list[OcrLine]:
    """OCR lines of an image file, boxes in pixels of the image as displayed (EXIF rotation applied)."""
    version = engine_version(settings)
    key = image_key(source_hash)
    cached = cached_lines(root, settings, version, key)
    if cached is not None:
        return cached

    def local(s: OcrSettings) -> list[OcrLine]:
        with tempfile.TemporaryDirectory() as tmp, pillow().open(path) as im:
            png = Path(tmp) / "image.png"
            image_ops().exif_transpose(im).convert("RGB").save(png)
            return _local(s, png)

    lines = _with_fallback(settings, lambda: mineru.extract(path, settings, {1: size}).get(1, []), local)
    store_lines(root, settings, version, key, lines)
    return lines


def pdf_page_lines(
    root: Path, settings: OcrSettings, doc: pymupdf.Document, path: Path, source_hash: str, pages: list[int]
) -> dict[int, list[OcrLine]]:
    """OCR lines of some pages of a PDF, boxes in PDF points (top-left origin)."""
    version = engine_version(settings)
    keys = {n: page_key(source_hash, n, settings.pdf_dpi) for n in pages}
    found = {n: cached_lines(root, settings, version, keys[n]) for n in pages}
    missing = [n for n, lines in found.items() if lines is None]
    if missing:
        sizes = {n: (doc[n - 1].rect.width, doc[n - 1].rect.height) for n in missing}
        fresh = _with_fallback(
            settings,
            lambda: mineru.extract(path, settings, sizes),
            lambda s: {n: _render_and_read(s, doc[n - 1]) for n in missing},
        )
        for n in missing:
            found[n] = fresh.get(n, [])
            store_lines(root, settings, version, keys[n], found[n])
    return found  # type: ignore[return-value]


def _render_and_read(settings: OcrSettings, page: pymupdf.Page) -> list[OcrLine]:
    """Render the page at `pdf_dpi` (less for a page past the pixel budget), OCR it, convert pixel
    boxes to points exactly (x 72/dpi)."""
    zoom = capped_scale(page.rect.width, page.rect.height, settings.pdf_dpi / 72.0)
    scale = 1.0 / zoom
    with tempfile.TemporaryDirectory() as tmp:
        png = Path(tmp) / "page.png"
        fitz = mupdf()
        page.get_pixmap(matrix=fitz.Matrix(zoom, zoom), colorspace=fitz.csGRAY).save(png)
        lines = _local(settings, png)
    rect = page.rect
    return [
        OcrLine(
            line.text,
            [
                round(min(max(v * scale, 0), lim), 2)
                for v, lim in zip(line.bbox, (rect.width, rect.height, rect.width, rect.height))
            ],
            line.confidence,
        )
        for line in lines
    ]
