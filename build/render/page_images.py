"""PDF pages as images, cached by the PDF's content hash.

JPEG quality 80 at zoom 2 (144 dpi) by default (chosen by `bench/page_image_formats.py`:
docs/performance.md). Images live in `_pages/<sha256 prefix>/<settings tag>/p<N>.<ext>`, the tag
naming every setting that shapes the file (`z2-jpeg-q80`): unchanged PDFs are never rendered again,
a moved or copied PDF reuses its images, a changed one gets a new folder, and `remove_stale` deletes
the folders of other settings (`build/versions.py` records and reports it).
"""

from __future__ import annotations

import io
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mnote_evidence.build.core.fsutil import UnsafePath, atomic_write_bytes, commit_pending, in_durable_batch
from mnote_evidence.build.core.urls import PAGES_DIR
from mnote_evidence.build.parse.libraries import mupdf, pillow
from mnote_evidence.build.parse.pixels import capped_scale
from mnote_evidence.build.parse.workers import worker_pool
from mnote_evidence.build.render import site_files

if TYPE_CHECKING:
    import pymupdf

JPEG_QUALITY = 80
DEFAULT_FORMAT = "jpeg"
DEFAULT_ZOOM = 2.0
FORMATS = {"jpeg": ("JPEG", "jpg"), "webp": ("WEBP", "webp"), "png": ("PNG", "png")}


@dataclass(frozen=True)
class PageImageSettings:
    """Everything that shapes a page image file; any change gives other files."""

    format: str = DEFAULT_FORMAT
    quality: int = JPEG_QUALITY
    zoom: float = DEFAULT_ZOOM  # 1 = 72 dpi

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"page image format must be one of {', '.join(FORMATS)}, not {self.format!r}")

    @property
    def tag(self) -> str:
        """The folder name of images made with these settings."""
        quality = f"-q{self.quality}" if self.format != "png" else ""
        return f"z{self.zoom:g}-{self.format}{quality}"

    def to_json(self) -> dict:
        return {"format": self.format, "quality": self.quality, "zoom": self.zoom}


@dataclass(frozen=True)
class PageImageJob:
    pdf: str
    folder: str
    pages: tuple[int, ...]
    settings: PageImageSettings
    site: str | None = None  # the site folder `folder` is in: written through real folders below it


def image_folder(source_hash: str, settings: PageImageSettings) -> str:
    """Site-relative folder of a PDF's page images."""
    return f"{PAGES_DIR}/{source_hash.removeprefix('sha256:')[:24]}/{settings.tag}"


def image_name(page: int, settings: PageImageSettings) -> str:
    return f"p{page}.{FORMATS[settings.format][1]}"


def encode_page(page: pymupdf.Page, settings: PageImageSettings) -> bytes:
    zoom = capped_scale(page.rect.width, page.rect.height, settings.zoom)
    pix = page.get_pixmap(matrix=mupdf().Matrix(zoom, zoom), alpha=False)
    img = pillow().frombytes("RGB", (pix.width, pix.height), pix.samples)
    buf = io.BytesIO()
    encoder = FORMATS[settings.format][0]
    if encoder == "PNG":
        img.save(buf, encoder)
    else:
        img.save(buf, encoder, quality=settings.quality)
    return buf.getvalue()


@in_durable_batch  # one sync for the job's images; each is renamed into place only once on disk
def render_job(job: PageImageJob) -> int:
    """The job's page images, in place when it returns (in a worker or within the render's own batch
    alike: a killed render keeps the jobs it finished); with `job.site`, written only through real
    folders below it (a symlink on the way replaced, `site_files`); none when a file stands where its
    folder goes."""
    folder = Path(job.folder)
    site = Path(job.site) if job.site else None
    try:
        if site is None:
            folder.mkdir(parents=True, exist_ok=True)
        else:
            site_files.folder(site, folder.relative_to(site).as_posix())
    except UnsafePath:
        return 0
    with mupdf().open(job.pdf) as doc:
        for n in job.pages:
            atomic_write_bytes(
                folder / image_name(n, job.settings),
                encode_page(doc[n - 1], job.settings),
                root=site,
                replace_links=True,
            )
    commit_pending()  # a batch inside the render's joins it: committed here, not at the render's end
    return len(job.pages)


def missing_pages(out: Path, folder: str, page_count: int, settings: PageImageSettings) -> tuple[int, ...]:
    """The pages without an image in site folder `folder` (a regular file, in real folders)."""
    have = (
        {e.name for e in os.scandir(out / folder) if e.is_file(follow_symlinks=False)}
        if site_files.is_real_folder(out, folder)
        else set()
    )
    return tuple(n for n in range(1, page_count + 1) if image_name(n, settings) not in have)


def _real_folders(folder: Path) -> list[Path]:
    """The folders in `folder`, symlinks left out (never followed)."""
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def remove_stale(out: Path, settings: PageImageSettings) -> int:
    """Delete page images made with any other settings; returns how many files went. Only real
    folders below the site are looked into or removed (`shutil.rmtree` follows no link)."""
    removed = 0
    if not site_files.is_real_folder(out, PAGES_DIR):
        return 0
    for pdf in _real_folders(out / PAGES_DIR):
        for folder in _real_folders(pdf):
            if folder.name not in (settings.tag, "media"):  # media: a Word document's pictures (copies.py)
                removed += sum(1 for f in folder.rglob("*") if f.is_file())
                shutil.rmtree(folder, ignore_errors=True)
    return removed


def split(job: PageImageJob, parts: int) -> list[PageImageJob]:
    size = max(1, -(-len(job.pages) // parts))
    return [
        PageImageJob(job.pdf, job.folder, job.pages[i : i + size], job.settings, job.site)
        for i in range(0, len(job.pages), size)
    ]


def render_all(jobs: list[PageImageJob], workers: int, on_done=lambda n: None) -> int:
    """Render every job's pages; big PDFs are split so all workers stay busy."""
    if not jobs:
        return 0
    if workers <= 1:
        total = 0
        for job in jobs:
            total += render_job(job)
            on_done(len(job.pages))
        return total
    chunks = [c for job in jobs for c in split(job, workers * 2 if len(job.pages) > 8 else 1)]
    total = 0
    with worker_pool(workers, memory_mb=0) as pool:
        for n in pool.map(render_job, chunks):
            total += n
            on_done(n)
    return total
