"""PDF provider on real PDFs with real PyMuPDF."""

from __future__ import annotations

import pymupdf
import pytest

from mnote_evidence.build.core.model import ProviderError
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.pdf import PdfProvider
from mnote_evidence.build.workspace.scan import file_sha256
from tests.conftest import FIXTURES, SPEC_PDF

SENTENCE = "The retention period for audit evidence is seven years"


def parse(root, rel, ocr: OcrSettings = OcrSettings(engine="none")):
    return PdfProvider(ocr).parse(ParseInput(root, rel, file_sha256(root / rel)))


def overlap(a, b) -> float:
    """Intersection area over the area of b."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(w, 0) * max(h, 0) / ((b[2] - b[0]) * (b[3] - b[1]))


def test_known_sentence_has_page_and_bbox_on_the_words():
    art = parse(FIXTURES, SPEC_PDF)
    [block] = [b for b in art.blocks if SENTENCE in b.text]
    assert block.page == 2
    page = art.pages[1]
    x0, y0, x1, y1 = block.bbox
    assert 0 <= x0 < x1 <= page.width and 0 <= y0 < y1 <= page.height
    with pymupdf.open(FIXTURES / SPEC_PDF) as doc:
        words = doc[1].search_for("retention period for audit evidence")
    assert words, "PyMuPDF should find the words themselves"
    assert overlap(block.bbox, tuple(words[0])) > 0.9
    assert art.text[block.char_range[0] : block.char_range[1]] == block.text


def test_sections_come_from_the_outline():
    art = parse(FIXTURES, SPEC_PDF)
    sections = {s.title: s for s in art.sections}
    assert sections["2.1 Providers"].path == ["2 Architecture", "2.1 Providers"]
    [block] = [b for b in art.blocks if SENTENCE in b.text]
    assert art.section_by_id()[block.section_id].title == "3 Retention policy"
    table = sections["4 Provider matrix"]
    assert (table.page_start, table.page_end) == (2, 3)  # the table spans the page break
    assert [b.type for b in art.blocks if b.text == "3 Retention policy"] == ["heading"]


def test_font_size_headings_without_outline():
    art = parse(FIXTURES, "Unfiled/orphan-report.pdf")
    paths = [s.path for s in art.sections]
    assert ["Quarterly Storage Report", "Capacity"] in paths
    assert ["Quarterly Storage Report", "Incidents"] in paths


def test_ligatures_are_expanded():
    art = parse(FIXTURES, SPEC_PDF)
    assert any(b.text == "Evidence Kernel Specification" for b in art.blocks)


@pytest.mark.parametrize(
    "rel, code",
    [
        ("Inbox/Broken Files.assets/corrupt.pdf", "pdf_corrupt"),
        ("Inbox/Broken Files.assets/encrypted.pdf", "pdf_encrypted"),
        ("Inbox/Broken Files.assets/not-really.pdf", "not_a_pdf"),
    ],
)
def test_bad_pdfs_raise_coded_errors(rel, code):
    with pytest.raises(ProviderError) as exc:
        parse(FIXTURES, rel)
    assert exc.value.code == code and exc.value.message


def test_image_only_pdf_is_no_text_not_success(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 50, 50), False)
    pix.clear_with(200)
    page.insert_image(page.rect, pixmap=pix)
    doc.save(tmp_path / "scan.pdf")
    with pytest.raises(ProviderError) as exc:
        parse(tmp_path, "scan.pdf")
    assert exc.value.code == "pdf_no_text"


def test_truncated_to_zero_pages_is_corrupt(tmp_path):
    (tmp_path / "t.pdf").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n")
    with pytest.raises(ProviderError) as exc:
        parse(tmp_path, "t.pdf")
    assert exc.value.code == "pdf_corrupt"
