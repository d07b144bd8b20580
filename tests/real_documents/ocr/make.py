"""Re-create the two PDFs in this folder from Debian files (run by hand; the tests only read the PDFs).

    python tests/real_documents/ocr/make.py

- libtasn1-p2-p4-p8.pdf: pages 2, 4 and 8 of /usr/share/doc/libtasn1-doc/libtasn1.pdf
  (Debian package libtasn1-doc), the manual's own text layer and fonts, unchanged.
- gnupg-help-zh_CN.pdf: the prose of /usr/share/gnupg/help.zh_CN.txt (Debian package gnupg),
  one paragraph per help entry, typeset by MuPDF's Story in its built-in CJK font
  (Droid Sans Fallback), fonts subset.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

HERE = Path(__file__).resolve().parent
LIBTASN1 = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")
GNUPG_ZH = Path("/usr/share/gnupg/help.zh_CN.txt")


def english() -> None:
    out = pymupdf.open()
    with pymupdf.open(LIBTASN1) as src:
        for page in (2, 4, 8):
            out.insert_pdf(src, from_page=page - 1, to_page=page - 1)
    out.save(HERE / "libtasn1-p2-p4-p8.pdf", garbage=4, deflate=True)


def chinese() -> None:
    paras, cur = [], []
    for line in GNUPG_ZH.read_text("utf-8").splitlines():
        if line.startswith("#"):
            continue
        if line.startswith(".") or not line.strip():  # ".gpg.key" entry names and entry ends
            if cur:
                paras.append("".join(cur))
                cur = []
            continue
        cur.append(line.strip())
    if cur:
        paras.append("".join(cur))
    story = pymupdf.Story(html="".join(f"<p>{p}</p>" for p in paras),
                          user_css="* {font-size: 11pt; line-height: 1.5;} p {margin: 0 0 6pt 0;}")
    tmp = HERE / "zh.tmp.pdf"
    writer = pymupdf.DocumentWriter(str(tmp))
    more = True
    while more:
        device = writer.begin_page(pymupdf.paper_rect("a4"))
        more, _ = story.place(pymupdf.Rect(60, 60, 535, 780))
        story.draw(device)
        writer.end_page()
    writer.close()
    with pymupdf.open(tmp) as doc:
        doc.subset_fonts()
        doc.save(HERE / "gnupg-help-zh_CN.pdf", garbage=4, deflate=True)
    tmp.unlink()


if __name__ == "__main__":
    english()
    chinese()
