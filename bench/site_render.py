"""Site rendering: page images against raw PyMuPDF + Pillow, and incremental vs full rebuild.

    python bench/site_render.py [PDF]     (default: R-exts.pdf, 236 pages)

1. Page images: our renderer (`build.render.page_images`, including atomic file
   writes, worker split) against a bare loop of `get_pixmap` + Pillow JPEG q80 at
   the same zoom, same pages, same run, one process each. Target <= 1.3x.
2. Build + site of the fixture workspace plus the long PDF: full build against
   the rebuild after a one-paragraph edit to a note.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pymupdf
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import best_of  # noqa: E402
from mnote_evidence.build.pipeline import BuildOptions, build  # noqa: E402
from mnote_evidence.build.render import page_images  # noqa: E402

DEFAULT = Path("/usr/share/R/doc/manual/R-exts.pdf")
FIXTURES = Path(__file__).resolve().parent.parent / "content_fixtures"


def raw(pdf: Path, zoom: float) -> None:
    with pymupdf.open(pdf) as doc:
        for page in doc:
            pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
            buf = io.BytesIO()
            Image.frombytes("RGB", (pix.width, pix.height), pix.samples).save(buf, "JPEG", quality=80)


def ours(pdf: Path, zoom: float, pages: int, jobs: int) -> None:
    folder = Path(tempfile.mkdtemp())
    page_images.render_all([page_images.PageImageJob(str(pdf), str(folder), tuple(range(1, pages + 1)),
                                                     page_images.PageImageSettings(zoom=zoom))], jobs)
    shutil.rmtree(folder)


def main() -> None:
    pdf = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    zoom = page_images.DEFAULT_ZOOM
    with pymupdf.open(pdf) as doc:
        pages = doc.page_count
    t_raw = best_of(lambda: raw(pdf, zoom), 2)
    t_ours = best_of(lambda: ours(pdf, zoom, pages, 1), 2)
    t_ours2 = best_of(lambda: ours(pdf, zoom, pages, 2), 2)

    base = Path(tempfile.mkdtemp())
    ws, out = base / "ws", base / "out"
    shutil.copytree(FIXTURES, ws)
    shutil.copy(pdf, ws / "Unfiled" / pdf.name)
    t0 = time.perf_counter()
    build(ws, BuildOptions(out=out, jobs=2))
    full = time.perf_counter() - t0
    note = ws / "Archive/Old Ideas.md"
    note.write_text(note.read_text("utf-8").replace("Text PDFs", "Text-layer PDFs"), "utf-8")
    t0 = time.perf_counter()
    report = build(ws, BuildOptions(out=out, jobs=2))
    edit = time.perf_counter() - t0
    shutil.rmtree(base)
    print(json.dumps({
        "pdf": str(pdf), "pages": pages, "zoom": zoom,
        "raw_render_plus_pillow_jpeg_s": round(t_raw, 3),
        "ours_1_worker_s": round(t_ours, 3), "ours_vs_raw": round(t_ours / t_raw, 2),
        "ours_2_workers_s": round(t_ours2, 3), "pages_per_s_2_workers": round(pages / t_ours2, 1),
        "full_build_with_site_s": round(full, 3), "one_paragraph_edit_rebuild_s": round(edit, 3),
        "edit_vs_full_percent": round(edit / full * 100, 1), "pages_written_after_edit": report.site.pages_written,
    }, indent=2))


if __name__ == "__main__":
    main()
