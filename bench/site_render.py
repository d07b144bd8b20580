"""Site rendering: page images against raw PyMuPDF + Pillow, and incremental vs full rebuild.

    python bench/site_render.py [PDF] [--rounds 3]     (default: R-exts.pdf, 236 pages)

1. Page images: our renderer (`build.render.page_images`: atomic file writes, worker split)
   with 1 and 2 workers against bare loops of `get_pixmap` + Pillow JPEG q80 at the same zoom,
   same pages, one process each, interleaved round by round (min of --rounds):
   `raw_in_memory` encodes into a BytesIO (writes nothing: the floor), `raw_to_files` writes
   each JPEG to a file as well (what a renderer must do). Target: ours (1 worker) <= 1.3x raw.
2. Build + site of the fixture workspace plus the long PDF, as whole `python -m mnote_evidence build`
   processes (bench/scale.py's `run_build`): full build against the rebuild after a one-paragraph
   edit to a note, both as process wall time (start-up included) and as the BuildReport's
   `seconds` (inside `build()`).
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

import pymupdf
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import REPO, compile_tree, interleaved, machine
from bench.scale import run_build
from mnote_evidence.build.render import page_images

DEFAULT = Path("/usr/share/R/doc/manual/R-exts.pdf")
FIXTURES = Path(__file__).resolve().parent.parent / "content_fixtures"


def raw(pdf: Path, zoom: float, to_files: bool) -> None:
    folder = Path(tempfile.mkdtemp())
    with pymupdf.open(pdf) as doc:
        for page in doc:
            pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
            buf = io.BytesIO()
            Image.frombytes("RGB", (pix.width, pix.height), pix.samples).save(buf, "JPEG", quality=80)
            if to_files:
                (folder / f"{page.number + 1}.jpg").write_bytes(buf.getvalue())
    shutil.rmtree(folder)


def ours(pdf: Path, zoom: float, pages: int, jobs: int) -> None:
    folder = Path(tempfile.mkdtemp())
    page_images.render_all(
        [
            page_images.PageImageJob(
                str(pdf), str(folder), tuple(range(1, pages + 1)), page_images.PageImageSettings(zoom=zoom)
            )
        ],
        jobs,
    )
    shutil.rmtree(folder)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pdf", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    pdf, zoom = args.pdf, page_images.DEFAULT_ZOOM
    with pymupdf.open(pdf) as doc:
        pages = doc.page_count
    start = machine()
    images = interleaved(
        {
            "raw_in_memory": lambda: raw(pdf, zoom, False),
            "raw_to_files": lambda: raw(pdf, zoom, True),
            "ours_1_worker": lambda: ours(pdf, zoom, pages, 1),
            "ours_2_workers": lambda: ours(pdf, zoom, pages, 2),
        },
        args.rounds,
    )
    for row in images.values():
        row["pages_per_s"] = round(pages / row["min_s"], 1)
    best = {name: row["min_s"] for name, row in images.items()}

    compile_tree(REPO)
    base = Path(tempfile.mkdtemp())
    ws, out = base / "ws", base / "out"
    shutil.copytree(FIXTURES, ws)
    shutil.copy(pdf, ws / "Unfiled" / pdf.name)
    full = run_build(REPO, ws, out, 2)
    note = ws / "Archive/Old Ideas.md"
    note.write_text(note.read_text("utf-8").replace("Text PDFs", "Text-layer PDFs"), "utf-8")
    edit = run_build(REPO, ws, out, 2)
    shutil.rmtree(base)
    print(
        json.dumps(
            {
                "pdf": str(pdf),
                "pages": pages,
                "zoom": zoom,
                "machine_start": start,
                "machine_end": machine(),
                "page_images": images,
                "ours_1_worker_vs_raw_in_memory": round(best["ours_1_worker"] / best["raw_in_memory"], 2),
                "ours_1_worker_vs_raw_to_files": round(best["ours_1_worker"] / best["raw_to_files"], 2),
                "ours_2_workers_vs_1": round(best["ours_2_workers"] / best["ours_1_worker"], 2),
                "full_build": full,
                "one_paragraph_edit": edit,
                "edit_vs_full_percent_in_build": round(edit["build_s"] / full["build_s"] * 100, 1),
                "edit_vs_full_percent_whole_process": round(edit["wall_s"] / full["wall_s"] * 100, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
