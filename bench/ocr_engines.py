"""Choose the OCR engine: accuracy and speed of RapidOCR vs Tesseract on the same images, same run.

    python bench/ocr_engines.py

Images (with ground truth):
- the fixture screenshot (线程作用域 Thread scope);
- the same screenshot degraded: rotated 2 degrees, noise, JPEG quality 30;
- "scans": real text PDF pages rasterised at 200 dpi (R-exts.pdf page 20,
  English; the fixture spec page 3, Chinese + English), truth = their text layer.
Accuracy = difflib similarity of the recognised text to the truth with all
whitespace removed (1.0 = identical); for CJK, the key phrase must be found.
"""

from __future__ import annotations

import difflib
import io
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import pymupdf
from PIL import Image, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mnote_evidence.build.parse.ocr.engines import RapidOcrEngine, TesseractEngine
from mnote_evidence.build.parse.ocr.normalize import lines_text

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "content_fixtures/研究/Rust 并发.assets/thread-scope.png"
SPEC = REPO / "content_fixtures/Projects/Evidence Kernel.assets/evidence-kernel-spec.pdf"
R_EXTS = Path("/usr/share/R/doc/manual/R-exts.pdf")


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def scan(pdf: Path, page: int, out: Path) -> tuple[Path, str]:
    with pymupdf.open(pdf) as doc:
        p = doc[page - 1]
        p.get_pixmap(dpi=200, colorspace=pymupdf.csGRAY).save(out)
        return out, p.get_text()


def degraded(src: Path, out: Path) -> Path:
    img = (
        Image.open(src)
        .convert("L")
        .rotate(2, expand=True, fillcolor=255)
        .filter(ImageFilter.GaussianBlur(0.6))
    )
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=30)
    Image.open(buf).save(out)
    return out


def main() -> None:
    work = Path(tempfile.mkdtemp())
    cases = [
        ("screenshot", FIXTURE, "Rust 并发笔记 — screenshot 线程作用域 Thread scope", "线程作用域"),
        (
            "screenshot degraded",
            degraded(FIXTURE, work / "deg.png"),
            "Rust 并发笔记 — screenshot 线程作用域 Thread scope",
            "线程作用域",
        ),
    ]
    spec_img, spec_text = scan(SPEC, 3, work / "spec3.png")
    cases.append(("scan zh+en (spec p.3, 200 dpi)", spec_img, spec_text, "线程作用域"))
    if R_EXTS.exists():
        img, text = scan(R_EXTS, 20, work / "rexts20.png")
        cases.append(("scan en (R-exts p.20, 200 dpi)", img, text, None))
    rows = []
    for engine in (RapidOcrEngine(), TesseractEngine()):
        engine.recognise(FIXTURE)  # warm-up: model load is paid once per process
        for name, path, truth, phrase in cases:
            t = time.perf_counter()
            lines = engine.recognise(path)
            secs = time.perf_counter() - t
            text = lines_text(lines)
            rows.append(
                {
                    "engine": engine.name,
                    "image": name,
                    "seconds": round(secs, 2),
                    "similarity": round(
                        difflib.SequenceMatcher(None, squash(text), squash(truth)).ratio(), 3
                    ),
                    "key_phrase_found": None if phrase is None else phrase in text,
                    "lines": len(lines),
                    "sample": text[:80],
                }
            )
    print(
        json.dumps(
            {"engines": rows, "cache": cache_hit_rebuild(work), "routing": routing_measure()},
            ensure_ascii=False,
            indent=1,
        )
    )


def cache_hit_rebuild(work: Path) -> dict:
    """Full build of the screenshot + a 2-page scanned PDF, then a rebuild with index and sidecars
    deleted: everything is parsed again, OCR comes from the cache."""
    import shutil

    from mnote_evidence.build.pipeline import BuildOptions, build

    ws, out = work / "ws", work / "out"
    (ws / "shots").mkdir(parents=True)
    shutil.copy(FIXTURE, ws / "shots" / FIXTURE.name)
    src = pymupdf.open(SPEC)
    scan_pdf = pymupdf.open()
    for n in (1, 2):
        page = scan_pdf.new_page(width=src[n].rect.width, height=src[n].rect.height)
        page.insert_image(page.rect, pixmap=src[n].get_pixmap(dpi=150))
    scan_pdf.save(ws / "scan.pdf")
    t = time.perf_counter()
    build(ws, BuildOptions(out=out, jobs=1, site=False))
    full = time.perf_counter() - t
    (out / "evidence.sqlite").unlink()
    shutil.rmtree(ws / ".mnote" / "sidecars")
    t = time.perf_counter()
    build(ws, BuildOptions(out=out, jobs=1, site=False))
    return {
        "files": "1 screenshot + 2 scanned pages",
        "first_build_s": round(full, 2),
        "rebuild_with_ocr_cache_s": round(time.perf_counter() - t, 2),
    }


def routing_measure() -> dict:
    """Native characters per square inch of page: the measure that sends a PDF page to OCR."""
    if not R_EXTS.exists():
        return {}
    with pymupdf.open(R_EXTS) as doc:
        density = sorted(len(p.get_text().strip()) / (p.rect.width * p.rect.height / 72 / 72) for p in doc)
    return {
        "pdf": R_EXTS.name,
        "pages": len(density),
        "min": round(density[0], 1),
        "p5": round(density[len(density) // 20], 1),
        "median": round(density[len(density) // 2], 1),
        "threshold": 2.0,
    }


if __name__ == "__main__":
    main()
