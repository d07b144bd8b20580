"""A PDF page with a text layer and a screenshot is OCR'd, and each text on it is indexed once: the
native paragraph as its native block (never again as an OCR line, although the screenshot shows a copy
of it and the engine reads the native text too), the screenshot's own text as OCR lines."""

from __future__ import annotations

import pymupdf
import pytest

from mnote_evidence.functions.search.fts import search_blocks
from tests.conftest import connect, run_build

PARAGRAPH = "Graphical install uses the GTK installer where you can use the mouse."
SHOT_LINES = ["Debian Edu boot menu", "Advanced options", PARAGRAPH, "Memory diagnostic tools"]
PDF = "manual/install.pdf"


def screenshot_png() -> bytes:
    """A screenshot of an installer menu, drawn by PyMuPDF: its own lines and the paragraph's copy."""
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=500)
    page.draw_rect(page.rect, color=None, fill=(0.15, 0.2, 0.35))
    for n, line in enumerate(SHOT_LINES):
        page.insert_text((30, 60 + 110 * n), line, fontname="helv", fontsize=18, color=(1, 1, 1))
    return page.get_pixmap(dpi=144).tobytes("png")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("overlap") / "ws"
    (root / "manual").mkdir(parents=True)
    doc = pymupdf.open()
    page = doc.new_page()  # A4: a short paragraph and a large screenshot, as in an installation manual
    page.insert_text((56, 80), PARAGRAPH, fontname="helv", fontsize=10)
    page.insert_image(pymupdf.Rect(56, 110, 540, 520), stream=screenshot_png())
    doc.save(root / PDF)
    (root / "note.md").write_text("# Install\n\n![[manual/install.pdf]]\n")
    out = root.parent / "out"
    assert run_build(root, out).errors == []
    return out


def pdf_blocks(out) -> list[tuple[str, str]]:
    rows = connect(out).execute(
        "SELECT b.kind, b.text FROM evidence_block b JOIN evidence_resource r USING (resource_id)"
        " WHERE r.source_root_relative_path = ? ORDER BY b.ordinal",
        [PDF],
    )
    return [tuple(row) for row in rows]


def test_the_native_paragraph_is_indexed_once(built):
    blocks = pdf_blocks(built)
    copies = [(kind, text) for kind, text in blocks if "GTK installer" in text or "GTKinstaller" in text]
    assert [text for _, text in copies] == [PARAGRAPH], blocks
    assert copies[0][0] != "ocr_line"  # the text layer's block, not the engine's reading of it


def test_the_screenshots_own_text_is_read(built):
    blocks = pdf_blocks(built)
    ocr = " ".join(text for kind, text in blocks if kind == "ocr_line")
    assert "boot menu" in ocr and "Memory diagnostic" in ocr, blocks
    hits = search_blocks(connect(built), "memory diagnostic", 10)
    assert any(h.resource_path == PDF for h in hits)
