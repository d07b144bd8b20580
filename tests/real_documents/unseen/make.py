"""Cut the `unseen` citation set from the manuals and python/pandoc test files (run by hand).

    python tests/real_documents/unseen/make.py MANUALS_DIR PANDOC_GIT_DIR

Pages are copied with PyMuPDF `insert_pdf` (text layer, fonts and outline entries of those pages kept);
the scans are pages rendered at 120 dpi, grayscale: a PNG for the image OCR path and an image-only
PDF for the PDF OCR path. The Word files are pandoc's own test files, copied unchanged.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pymupdf

HERE = Path(__file__).resolve().parent
CUTS = {  # file -> 1-based pages kept
    "debian-reference.en.pdf": [175, 176, 177, 229, 230, 231],
    "asymptote.pdf": [29, 30, 31, 102, 103],
    "debian-reference.zh-cn.pdf": [168, 169, 170, 219],
}
SCANS = {"debian-reference.en.pdf": [122, 186]}  # page 122 as a PNG, page 186 as an image-only PDF
DOCX = [
    "notes.docx",
    "link_in_notes.docx",
    "tables.docx",
    "table_with_list_cell.docx",
    "headers.docx",
    "i18n_blocks.docx",
    "block_quotes.docx",
    "lists_continuing.docx",
    "track_changes_insertion.docx",
    "comments.docx",
]


def main(manuals: Path, pandoc_git: Path) -> None:
    (HERE / "manuals").mkdir(exist_ok=True)
    (HERE / "scans").mkdir(exist_ok=True)
    (HERE / "docx").mkdir(exist_ok=True)
    for name, pages in CUTS.items():
        src = pymupdf.open(manuals / name)
        out = pymupdf.open()
        for p in pages:
            out.insert_pdf(src, from_page=p - 1, to_page=p - 1)
        stem = name.removesuffix(".pdf")
        out.save(HERE / "manuals" / f"{stem}-p{pages[0]}-{pages[-1]}.pdf", garbage=4, deflate=True)
    for name, (png_page, pdf_page) in SCANS.items():
        src = pymupdf.open(manuals / name)
        stem = name.removesuffix(".pdf")
        pix = src[png_page - 1].get_pixmap(dpi=120, colorspace=pymupdf.csGRAY)
        pix.save(HERE / "scans" / f"{stem}-p{png_page}.png")
        pix = src[pdf_page - 1].get_pixmap(dpi=120, colorspace=pymupdf.csGRAY)
        scan = pymupdf.open()
        page = scan.new_page(width=src[pdf_page - 1].rect.width, height=src[pdf_page - 1].rect.height)
        page.insert_image(page.rect, pixmap=pix)
        scan.save(HERE / "scans" / f"{stem}-p{pdf_page}-scan.pdf", garbage=4, deflate=True)
    for name in DOCX:
        data = subprocess.run(
            ["git", "--git-dir", str(pandoc_git), "show", f"HEAD:test/docx/{name}"],
            capture_output=True,
            check=True,
        ).stdout
        (HERE / "docx" / name).write_bytes(data)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
