"""PDF provider throughput on long real PDFs, against raw PyMuPDF, liteparse and pdfplumber.

    python bench/pdf_provider.py [PDF ...] [--rounds 3] [--pdfplumber-max-pages 500]

Default PDFs (Debian's r-doc-pdf): R-exts.pdf (236 pages) and fullrefman.pdf (2,415 pages).
Ours = blocks + bbox + sections + sidecar write. Baselines on the same pages, same run,
interleaved round by round (min and median of --rounds): raw `page.get_text("dict")` (what
we call underneath when a PDF has no outline), liteparse (JSON
output, OCR off, `max_pages` = the page count: its default stops at 1,000 pages) and
pdfplumber `extract_words()` (one round; skipped above --pdfplumber-max-pages). `ours_vs_this`
= our min wall time / that row's min wall time (below 1: ours is faster); `ours_vs_this_cpu` the
same with CPU time (this process, all threads), which a loaded machine inflates far less than
wall time. Peak RSS of our provider is measured in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import interleaved, machine
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.pdf import PdfProvider
from mnote_evidence.build.parse.sidecars import write_sidecars
from mnote_evidence.build.workspace.scan import file_sha256

MANUALS = Path("/usr/share/R/doc/manual")
DEFAULTS = [MANUALS / "R-exts.pdf", MANUALS / "fullrefman.pdf"]


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


def liteparse_json(pdf: Path, pages: int) -> int:
    """liteparse's page count parsed (its default max_pages of 1,000 would cut a longer PDF short)."""
    from liteparse import LiteParse

    result = LiteParse(ocr_enabled=False, output_format="json", max_pages=pages).parse(str(pdf))
    return len(getattr(result, "pages", []) or [])


def rss_of_ours(pdf: Path) -> float:
    repo = str(Path(__file__).resolve().parent.parent)
    code = (
        f"import sys, tempfile; from pathlib import Path; sys.path.insert(0, {repo!r});"
        "from bench.pdf_provider import ours; from bench._util import peak_rss_mb;"
        f"ours(Path({str(pdf)!r}), Path(tempfile.mkdtemp())); print(peak_rss_mb())"
    )
    return float(subprocess.check_output([sys.executable, "-c", code]).strip())


def measure(pdf: Path, rounds: int, pdfplumber_max: int) -> dict:
    with pymupdf.open(pdf) as doc:
        pages = doc.page_count
    work = Path(tempfile.mkdtemp())
    start = machine()
    rss = rss_of_ours(pdf)
    lite_pages = []
    fns = {
        "ours (blocks+bbox+sections+sidecar)": lambda: ours(pdf, work),
        "ours, no-outline path (font-size headings)": lambda: ours_without_outline(pdf, work),
        "raw PyMuPDF get_text('dict')": lambda: raw_dict(pdf),
        "liteparse (json, no OCR, max_pages = page count)": lambda: lite_pages.append(
            liteparse_json(pdf, pages)
        ),
    }
    try:
        import liteparse  # noqa: F401
    except ImportError as exc:  # report, don't hide: the baseline could not run here
        print(f"liteparse: could not run: {exc}", file=sys.stderr)
        del fns["liteparse (json, no OCR, max_pages = page count)"]
    rows = interleaved(fns, rounds)
    if pages <= pdfplumber_max:
        rows.update(interleaved({"pdfplumber extract_words()": lambda: pdfplumber_words(pdf)}, 1))
    ours_row = rows["ours (blocks+bbox+sections+sidecar)"]
    for row in rows.values():
        row["ms_per_page"] = round(row["min_s"] / pages * 1000, 2)
        row["ours_vs_this"] = round(ours_row["min_s"] / row["min_s"], 2)
        row["ours_vs_this_cpu"] = round(ours_row["cpu_min_s"] / row["cpu_min_s"], 2)
    return {
        "pdf": str(pdf),
        "pages": pages,
        "liteparse_pages_parsed": lite_pages[:1],
        "peak_rss_mb_ours": round(rss, 1),
        "machine_start": start,
        "machine_end": machine(),
        "runs": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pdfs", nargs="*", type=Path, default=[p for p in DEFAULTS if p.exists()])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pdfplumber-max-pages", type=int, default=500)
    args = ap.parse_args()
    if not args.pdfs:
        sys.exit("no PDF: install Debian's r-doc-pdf or name PDFs")
    result = {
        "compares": "ours_vs_this(_cpu) = our provider's min wall (CPU) time / this row's; same PDF, "
        "same run, interleaved",
        "pdfs": [measure(pdf, args.rounds, args.pdfplumber_max_pages) for pdf in args.pdfs],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
