"""Derive the damaged Word file in this folder from python-docx's own comments-rich-para.docx (run by hand).

    python tests/real_documents/docx/make.py

comments-rich-para-missing-image.docx = comments-rich-para.docx with the part word/media/image1.jpeg
left out, so word/_rels/comments.xml.rels points at a part that is not in the package: the body text
is intact and python-docx refuses the whole file (KeyError), the damage of a real "missing image" file.
"""

from __future__ import annotations

import copy
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MISSING = "word/media/image1.jpeg"

with zipfile.ZipFile(HERE / "comments-rich-para.docx") as src, \
        zipfile.ZipFile(HERE / "comments-rich-para-missing-image.docx", "w", zipfile.ZIP_DEFLATED) as out:
    for info in src.infolist():
        if info.filename != MISSING:
            out.writestr(copy.copy(info), src.read(info.filename))
