"""OCR text against ground truth: real PDF pages rendered at 150 and 200 dpi, RapidOCR and Tesseract.

    python bench/ocr_truth.py            # writes bench/results/ocr_truth.json

Pages: the committed tests/real_documents/ocr/ PDFs (libtasn1 manual pages; GnuPG's Chinese help
text typeset in MuPDF's CJK font) and, when installed, Debian's R-exts.pdf, R-FAQ.pdf and
shared-mime-info-spec.pdf. Truth = each page's text layer. English: word recall/precision after
NFKC, case folding and splitting at punctuation; Chinese: per CJK character (tests/ocr/truth.py).
`cjk_in_latin_pages` counts CJK characters the engine produced on pages whose truth has none
(digits read as 日 and the like).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import results_path
from mnote_evidence.build.parse.ocr.engines import RapidOcrEngine, TesseractEngine
from tests.ocr.truth import cjk_chars, compare, latin_words, page_truth_and_ocr

REPO = Path(__file__).resolve().parent.parent
OCR_PAGES = REPO / "tests/real_documents/ocr"
PAGES = (
    [(OCR_PAGES / "libtasn1-p2-p4-p8.pdf", n, "en") for n in (1, 2, 3)]
    + [(OCR_PAGES / "gnupg-help-zh_CN.pdf", n, "zh") for n in (1, 2)]
    + [(Path("/usr/share/R/doc/manual/R-exts.pdf"), n, "en") for n in (20, 42)]
    + [
        (Path("/usr/share/R/doc/manual/R-FAQ.pdf"), 10, "en"),
        (Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"), 3, "en"),
    ]
)


def main() -> None:
    rows = []
    for engine in (RapidOcrEngine(), TesseractEngine()):
        for pdf, page, lang in PAGES:
            if not pdf.exists():
                print(f"skip {pdf} (not installed)", file=sys.stderr)
                continue
            for dpi in (150, 200):
                t = time.perf_counter()
                truth, text = page_truth_and_ocr(engine, pdf, page, dpi)
                row = {
                    "engine": engine.name,
                    "pdf": pdf.name,
                    "page": page,
                    "dpi": dpi,
                    "lang": lang,
                    "seconds": round(time.perf_counter() - t, 2),
                    "words": compare(latin_words(truth), latin_words(text)).to_json(),
                }
                if lang == "zh":
                    row["cjk"] = compare(cjk_chars(truth), cjk_chars(text)).to_json()
                else:
                    row["cjk_in_latin_pages"] = sum(cjk_chars(text).values())
                rows.append(row)
                print(json.dumps(row, ensure_ascii=False), file=sys.stderr)
    summary = {}
    for engine in ("rapidocr", "tesseract"):
        for dpi in (150, 200):
            en = [r for r in rows if r["engine"] == engine and r["dpi"] == dpi and r["lang"] == "en"]
            zh = [r for r in rows if r["engine"] == engine and r["dpi"] == dpi and r["lang"] == "zh"]
            summary[f"{engine} {dpi} dpi"] = {
                "en_word_recall_min": min((r["words"]["recall"] for r in en), default=None),
                "en_word_precision_min": min((r["words"]["precision"] for r in en), default=None),
                "zh_char_recall_min": min((r["cjk"]["recall"] for r in zh), default=None),
                "zh_char_precision_min": min((r["cjk"]["precision"] for r in zh), default=None),
                "cjk_chars_on_latin_pages": sum(r.get("cjk_in_latin_pages", 0) for r in en),
                "seconds_per_page_median": sorted(r["seconds"] for r in en + zh)[len(en + zh) // 2]
                if en + zh
                else None,
            }
    out = {"summary": summary, "pages": rows}
    results_path("ocr_truth.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
