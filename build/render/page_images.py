"""PDF pages as images, cached by the PDF's content hash.

Format and zoom were chosen by measurement (`bench/page_image_formats.py`, README):
JPEG quality 80 encoded by Pillow at zoom 2 (144 dpi): 7 pt small print gets a
7 px x-height, ~36 pages/s and ~270 KB/page on a text-heavy manual. PNG via
PyMuPDF is 3.5x slower at the same size, WebP 8x slower for 40 % fewer bytes.

Images live in `_pages/<sha256 prefix>/z<zoom>/p<N>.jpg`: unchanged PDFs are
never rendered again, a moved or copied PDF reuses its images, and a changed
one gets a new folder.
"""

from __future__ import annotations

import io
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pymupdf
from PIL import Image

from mnote_evidence.build.fsutil import atomic_write_bytes

JPEG_QUALITY = 80
DEFAULT_ZOOM = 2.0
PAGES_DIR = "_pages"


@dataclass(frozen=True)
class PageImageJob:
    pdf: str  # absolute path of the source PDF
    folder: str  # absolute output folder for this PDF + zoom
    pages: tuple[int, ...]  # 1-based
    zoom: float


def image_folder(source_hash: str, zoom: float) -> str:
    """Site-relative folder of a PDF's page images."""
    return f"{PAGES_DIR}/{source_hash.removeprefix('sha256:')[:24]}/z{zoom:g}"


def image_name(page: int) -> str:
    return f"p{page}.jpg"


def encode_page(page: pymupdf.Page, zoom: float) -> bytes:
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
    img = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=JPEG_QUALITY, optimize=False)
    return buf.getvalue()


def render_job(job: PageImageJob) -> int:
    folder = Path(job.folder)
    folder.mkdir(parents=True, exist_ok=True)
    with pymupdf.open(job.pdf) as doc:
        for n in job.pages:
            atomic_write_bytes(folder / image_name(n), encode_page(doc[n - 1], job.zoom))
    return len(job.pages)


def missing_pages(folder: Path, page_count: int) -> tuple[int, ...]:
    have = set(os.listdir(folder)) if folder.is_dir() else set()
    return tuple(n for n in range(1, page_count + 1) if image_name(n) not in have)


def split(job: PageImageJob, parts: int) -> list[PageImageJob]:
    size = max(1, -(-len(job.pages) // parts))
    return [PageImageJob(job.pdf, job.folder, job.pages[i : i + size], job.zoom)
            for i in range(0, len(job.pages), size)]


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
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("forkserver")) as pool:
        for n in pool.map(render_job, chunks):
            total += n
            on_done(n)
    return total
