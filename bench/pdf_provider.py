"""PDF provider throughput on a long real PDF, against raw PyMuPDF, liteparse and pdfplumber.

    python bench/pdf_provider.py [PDF]     (default: Debian r-doc-pdf's R-exts.pdf, 236 pages)

Ours = blocks + bbox + sections + sidecar write. Baselines on the same pages,
same run: raw `page.get_text("dict")` (the floor: what we call underneath),
liteparse (the original design's parser; JSON output, OCR off) and pdfplumber
`extract_words()`. Peak RSS of our provider is measured in a fresh process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import best_of  # noqa: E402
from mnote_evidence.build.providers.base import ParseInput  # noqa: E402
from mnote_evidence.build.ocr.settings import OcrSettings  # noqa: E402
from mnote_evidence.build.providers.pdf import PdfProvider  # noqa: E402
from mnote_evidence.build.scan import file_sha256  # noqa: E402
from mnote_evidence.build.sidecars import write_sidecars  # noqa: E402

DEFAULT = Path("/usr/share/R/doc/manual/R-exts.pdf")


def ours(pdf: Path, work: Path) -> int:
    art = PdfProvider(OcrSettings()).parse(ParseInput(pdf.parent, pdf.name, file_sha256(pdf)))
    write_sidecars(work, art, None)
    return len(art.blocks)


def ours_without_outline(pdf: Path, work: Path) -> int:
    """Our font-size-heading path (what a PDF without an outline takes): needs the full dict."""
    original = pymupdf.Document.get_toc
    pymupdf.Document.get_toc = lambda self, simple=True: []
    try:
        return ours(pdf, work)
    finally:
        pymupdf.Document.get_toc = original


def raw_dict(pdf: Path) -> int:
    with pymupdf.open(pdf) as doc:
        return sum(len(page.get_text("dict")["blocks"]) for page in doc)


def pdfplumber_words(pdf: Path) -> int:
    import pdfplumber

    with pdfplumber.open(pdf) as doc:
        return sum(len(page.extract_words()) for page in doc.pages)


def liteparse_json(pdf: Path) -> int:
    from liteparse import LiteParse

    result = LiteParse(ocr_enabled=False, output_format="json").parse(str(pdf))
    return len(getattr(result, "pages", []) or [])


def rss_of_ours(pdf: Path) -> float:
    code = ("import sys, tempfile; from pathlib import Path; sys.path.insert(0, %r);"
            "from bench.pdf_provider import ours; from bench._util import peak_rss_mb;"
            "ours(Path(%r), Path(tempfile.mkdtemp())); print(peak_rss_mb())"
            % (str(Path(__file__).resolve().parent.parent), str(pdf)))
    return float(subprocess.check_output([sys.executable, "-c", code]).strip())


def main() -> None:
    pdf = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    with pymupdf.open(pdf) as doc:
        pages = doc.page_count
    work = Path(tempfile.mkdtemp())
    rss = rss_of_ours(pdf)
    rows = {"ours (blocks+bbox+sections+sidecar)": best_of(lambda: ours(pdf, work)),
            "ours, no-outline path (font-size headings)": best_of(lambda: ours_without_outline(pdf, work)),
            "raw PyMuPDF get_text('dict')": best_of(lambda: raw_dict(pdf))}
    for name, fn in (("pdfplumber extract_words()", pdfplumber_words), ("liteparse (json, no OCR)", liteparse_json)):
        try:
            rows[name] = best_of(lambda fn=fn: fn(pdf), repeat=1 if fn is pdfplumber_words else 3)
        except Exception as exc:  # report, don't hide: the baseline could not run here
            rows[name] = None
            print(f"{name}: could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
    ours_s = rows["ours (blocks+bbox+sections+sidecar)"]
    result = {"pdf": str(pdf), "pages": pages, "peak_rss_mb_ours": round(rss, 1), "runs": {}}
    for name, secs in rows.items():
        result["runs"][name] = None if secs is None else {
            "seconds": round(secs, 3), "ms_per_page": round(secs / pages * 1000, 2),
            "ours_vs_this": round(ours_s / secs, 2)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
