"""Choose the page-image format and zoom: pages/s, bytes/page, and small-print legibility.

    python bench/page_image_formats.py [PDF] [--pages N]

For each (format, zoom): render + encode N pages, report pages/s and mean
bytes/page; legibility = x-height in pixels of 7 pt small print at that zoom
(~0.5 em; below ~5 px letters blur together), plus crops written to
bench/results/legibility/ to look at.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path

import pymupdf
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import results_path

DEFAULT = Path("/usr/share/R/doc/manual/R-exts.pdf")
OUT = results_path("legibility")


def encode(pix: pymupdf.Pixmap, fmt: str) -> bytes:
    if fmt == "png":
        return pix.tobytes("png")
    if fmt == "jpeg-q80 (PyMuPDF)":
        return pix.tobytes("jpg", jpg_quality=80)
    img = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    buf = io.BytesIO()
    if fmt == "jpeg-q80 (Pillow)":
        img.save(buf, "JPEG", quality=80)
    else:
        img.save(buf, "WEBP", quality=80)
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pdf", nargs="?", default=str(DEFAULT))
    ap.add_argument("--pages", type=int, default=40)
    args = ap.parse_args()
    doc = pymupdf.open(args.pdf)
    pages = range(min(args.pages, doc.page_count))
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for zoom in (1.0, 1.5, 2.0):
        for fmt in ("png", "jpeg-q80 (PyMuPDF)", "jpeg-q80 (Pillow)", "webp-q80 (Pillow)"):
            t0 = time.perf_counter()
            total = 0
            for n in pages:
                pix = doc[n].get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
                data = encode(pix, fmt)
                total += len(data)
            secs = time.perf_counter() - t0
            crop = doc[10].get_pixmap(
                matrix=pymupdf.Matrix(zoom, zoom), alpha=False, clip=pymupdf.Rect(90, 90, 330, 160)
            )
            (OUT / f"z{zoom}-{fmt.split()[0]}.{'png' if fmt == 'png' else fmt[:4]}").write_bytes(
                encode(crop, fmt)
            )
            rows.append(
                {
                    "format": fmt,
                    "zoom": zoom,
                    "pages_per_s": round(len(pages) / secs, 1),
                    "kb_per_page": round(total / len(pages) / 1024, 1),
                    "x_height_px_7pt": round(7 * 0.5 * zoom, 1),
                }
            )
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
