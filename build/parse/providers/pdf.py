"""Text PDFs via PyMuPDF, no OCR (SPEC §3).

One block per PyMuPDF text block, with its 1-based page, bbox in PDF points (top-left origin, clamped
to the page), char range in the `*.parse.md` text and whether the words read inside its box hold its
text (`boxHoldsText`, `pdf_boxes.py`). Sections come from the PDF outline, else from font-size
headings. Each of these is a recorded error, never a silent success: no `%PDF-` magic bytes (an HTML
file named .pdf opens fine), zero pages, a password, no text at all (a scanned PDF needs OCR).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from mnote_evidence.build.core.formats import format_named
from mnote_evidence.build.core.ids import BlockIdAllocator
from mnote_evidence.build.core.model import (
    KIND_PDF,
    ROLE_BODY,
    ROLE_FURNITURE,
    Block,
    Page,
    ParsedResourceArtifact,
    ProviderError,
    Warning_,
)
from mnote_evidence.build.core.text import join_lines
from mnote_evidence.build.parse.libraries import mupdf
from mnote_evidence.build.parse.ocr.overlap import new_lines
from mnote_evidence.build.parse.ocr.run import engine_version, pdf_page_lines
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.providers import provider_version
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.outline import Start, outline_entries, outline_starts
from mnote_evidence.build.parse.sections import SectionTree

if TYPE_CHECKING:
    import pymupdf

_MAX_HEADING_CHARS = 200


@cache
def text_flags() -> int:
    """No images (we only need text), no ligature glyphs ("ﬁ" is stored as "fi")."""
    fitz = mupdf()
    return fitz.TEXTFLAGS_DICT & ~fitz.TEXT_PRESERVE_IMAGES & ~fitz.TEXT_PRESERVE_LIGATURES


@dataclass
class _RawBlock:
    page: int
    bbox: list[float]
    text: str
    size: float
    lines: int
    kind: str = "paragraph"
    confidence: float | None = None
    role: str = ROLE_BODY
    box_holds_text: bool | None = None
    monospace: bool = False  # most of its text is in a monospace font (code)


# OCR a page with (almost) no text layer that images cover a good part of (text pages carry tens of characters
# per square inch); blank or vector-only pages have no image to read
MIN_CHARS_PER_SQ_IN = 2.0
MIN_IMAGE_COVERAGE = 0.3


def needs_ocr(page: pymupdf.Page, native_chars: int) -> bool:
    area = page.rect.width * page.rect.height
    if area <= 0 or native_chars / (area / 72 / 72) >= MIN_CHARS_PER_SQ_IN:
        return False
    covered = 0.0
    for info in page.get_image_info():
        box = mupdf().Rect(info["bbox"]) & page.rect
        covered += box.width * box.height if box.is_valid else 0
    return covered / area >= MIN_IMAGE_COVERAGE


def open_pdf(data: bytes) -> pymupdf.Document:
    """Open PDF bytes or raise a ProviderError with a precise code."""
    if b"%PDF-" not in data[:1024]:
        raise ProviderError(
            "not_a_pdf",
            "file has a .pdf name but is not a PDF (no %PDF- header); check what it really is and rename it",
        )
    try:
        doc = mupdf().open(stream=data, filetype="pdf")
    except Exception as exc:  # MuPDF raises several types for broken files
        raise ProviderError("pdf_corrupt", f"PyMuPDF cannot open it: {exc}") from exc
    if doc.needs_pass:
        raise ProviderError(
            "pdf_encrypted", "PDF is password-protected; save an unprotected copy to index it"
        )
    if doc.page_count == 0:
        raise ProviderError("pdf_corrupt", "PDF has no readable pages (truncated or damaged file)")
    return doc


def _clamp(bbox, rect) -> list[float]:
    x0, y0, x1, y1 = bbox
    return [
        round(max(x0, rect.x0), 2),
        round(max(y0, rect.y0), 2),
        round(min(x1, rect.x1), 2),
        round(min(y1, rect.y1), 2),
    ]


def _raw_blocks(
    page: pymupdf.Page, number: int, entries, fonts: list[tuple[float, bool]] | None
) -> list[_RawBlock]:
    rect = page.rect
    out = []
    for i, (x0, y0, x1, y1, text, _no, kind) in enumerate(entries):
        if kind != 0:
            continue
        lines = text.split("\n")
        joined = join_lines(lines)
        if joined:
            size, mono = fonts[i] if fonts else (0.0, False)
            out.append(
                _RawBlock(number, _clamp((x0, y0, x1, y1), rect), joined, size, len(lines), monospace=mono)
            )
    return out


def _page_blocks_fast(page: pymupdf.Page, textpage: pymupdf.TextPage, number: int) -> list[_RawBlock]:
    """Text + bbox per block from MuPDF's C-side "blocks" output (no font sizes needed)."""
    return _raw_blocks(page, number, textpage.extractBLOCKS(), None)


# MuPDF's HTML output (one positioned <p> per line, sized spans whose family MuPDF tags `monospace` for
# fixed-pitch fonts) is built in C: cheaper than get_text("dict")
_HTML_LINE = re.compile(
    r'<p style="top:([-\d.]+)pt;left:([-\d.]+)pt(?:;line-height:([\d.]+)pt)?[^"]*">(.*?)</p>', re.S
)
_HTML_SPAN = re.compile(r"font-family:([^;\"]*);font-size:([\d.]+)pt[^>]*>([^<]*)")


def _block_fonts(entries, html: str) -> list[tuple[float, bool]]:
    """Dominant font size of each block (its lines' spans weighted by text length), and whether most of its
    text is monospace. A line belongs to the block holding its left end at mid-height: a listing's line
    number sits a little lower than its code."""
    weights: list[dict[float, int]] = [{} for _ in entries]
    mono = [0] * len(entries)
    for top, left, height, inner in _HTML_LINE.findall(html):
        x, y = float(left) + 0.5, float(top) + (float(height) / 2 if height else 0.5)
        for i, (x0, y0, x1, y1, *_rest) in enumerate(entries):
            if x0 <= x <= x1 and y0 <= y <= y1:
                for family, size, text in _HTML_SPAN.findall(inner):
                    weights[i][float(size)] = weights[i].get(float(size), 0) + len(text)
                    mono[i] += len(text) if family.endswith("monospace") else 0
                break
    return [
        (round(max(w, key=w.__getitem__), 1), mono[i] * 2 > sum(w.values())) if w else (0.0, False)
        for i, w in enumerate(weights)
    ]


def _page_blocks_sized(page: pymupdf.Page, textpage: pymupdf.TextPage, number: int) -> list[_RawBlock]:
    """Like `_page_blocks_fast`, plus each block's dominant font size and monospace flag (for heading
    detection)."""
    entries = textpage.extractBLOCKS()
    return _raw_blocks(page, number, entries, _block_fonts(entries, textpage.extractHTML()))


# code, not a heading: a TeX or C-like line ("\\def\\x#1{%", "int main() {"), or a numbered listing line
# ("140 \\def\\ProcessAsymptote#1{%": a bare line number, then code punctuation)
_CODE_LINE = re.compile(r"\\[A-Za-z@]{2,}|[{};]\s*$|^\d+\s+\S*[\\{}%#;=<>$]")


def _font_heading_starts(raw: list[_RawBlock]) -> list[Start]:
    """Headings by font size (a PDF without an outline): short body blocks set clearly larger than the
    prose. The prose size leaves code out (listings can outweigh it), and code never heads a section:
    monospace blocks and lines that read as code or as a numbered listing."""
    chars, prose = Counter(), Counter()
    for b in raw:
        chars[b.size] += len(b.text)
        if not b.monospace:
            prose[b.size] += len(b.text)
    if not chars:
        return []
    body = (prose or chars).most_common(1)[0][0]
    candidates = [
        (pos, b)
        for pos, b in enumerate(raw)
        if b.role == ROLE_BODY
        and not b.monospace
        and not _CODE_LINE.search(b.text)
        and b.size >= body * 1.15
        and b.size - body >= 1.0
        and len(b.text) <= _MAX_HEADING_CHARS
        and b.lines <= 3
    ]
    sizes = sorted({round(b.size * 2) / 2 for _, b in candidates}, reverse=True)[:6]
    level_of = {s: i + 1 for i, s in enumerate(sizes)}
    return [Start(pos, level_of.get(round(b.size * 2) / 2, len(sizes)), b.text, pos) for pos, b in candidates]


class PdfProvider:
    name = "pymupdf"
    kind = KIND_PDF

    def __init__(self, ocr: OcrSettings):
        self.ocr = ocr

    def version(self) -> str:
        return provider_version(format_named("pdf"), self.ocr)

    def parse(self, item: ParseInput) -> ParsedResourceArtifact:
        data = item.full_path.read_bytes()
        doc = open_pdf(data)
        try:
            return self._parse_doc(doc, item)
        finally:
            doc.close()

    def _parse_doc(self, doc: pymupdf.Document, item: ParseInput) -> ParsedResourceArtifact:
        # imported with the first PDF parsed: every build imports this module for `version()`
        from mnote_evidence.build.parse.providers.pdf_boxes import check_page

        toc = outline_entries(doc)
        extract = _page_blocks_fast if toc else _page_blocks_sized
        pages, raw, to_ocr = [], [], []
        for number, page in enumerate(doc, start=1):
            pages.append(Page(number, round(page.rect.width, 2), round(page.rect.height, 2)))
            textpage = page.get_textpage(flags=text_flags())
            found = extract(page, textpage, number)
            check_page(found, textpage)
            raw.extend(found)
            if self.ocr.enabled and not doc.is_encrypted and needs_ocr(page, sum(len(b.text) for b in found)):
                to_ocr.append(number)
        if to_ocr:
            raw = self._with_ocr(doc, item, raw, to_ocr, pages)
        if not raw:
            if doc.is_repaired:
                raise ProviderError(
                    "pdf_corrupt",
                    "PDF is damaged (MuPDF had to repair it) and no text "
                    "could be recovered; re-export or re-download it",
                )
            if doc.is_encrypted:
                raise ProviderError("pdf_encrypted", "PDF is encrypted and no text could be extracted")
            if not self.ocr.enabled:
                raise ProviderError(
                    "pdf_no_text",
                    "PDF has no text layer and OCR is off (--no-ocr); build with OCR to read scanned pages",
                )
            raise ProviderError("pdf_no_text", "PDF has no extractable text, and OCR found none either")
        mark_furniture(raw, pages)
        starts = outline_starts(toc, raw) if toc else _font_heading_starts(raw)
        text, blocks, tree = _blocks(item.path, raw, starts)
        warnings = (
            [Warning_("pdf_repaired", "PDF is damaged; MuPDF repaired it and some text may be missing")]
            if doc.is_repaired
            else []
        )
        return ParsedResourceArtifact(
            kind=KIND_PDF,
            provider=self.name,
            provider_version=self.version(),
            source_path=item.path,
            source_hash=item.source_hash,
            text=text,
            blocks=blocks,
            sections=tree.sections,
            pages=pages,
            warnings=warnings + tree.warnings,
            from_ocr=bool(to_ocr),
        )

    def _with_ocr(
        self, doc, item: ParseInput, raw: list[_RawBlock], numbers: list[int], pages: list[Page]
    ) -> list[_RawBlock]:
        """OCR lines of the scanned pages, merged into reading order after each page's native text; on a
        page with a text layer only the lines it does not already hold (`ocr/overlap.py`)."""
        lines = pdf_page_lines(item.root, self.ocr, doc, item.full_path, item.source_hash, numbers)
        source = f"ocr:{engine_version(self.ocr)}"
        native: dict[int, list[tuple[list[float], str]]] = {}
        for b in raw:
            native.setdefault(b.page, []).append((b.bbox, b.text))
        for number in numbers:
            pages[number - 1].source = source
            raw.extend(
                _RawBlock(number, line.bbox, line.text, 0.0, 1, "ocr_line", line.confidence)
                for line in new_lines(lines[number], native.get(number, []))
            )
        return sorted(raw, key=lambda b: b.page)  # stable: native blocks first on each page


def mark_furniture(raw: list[_RawBlock], pages: list[Page]) -> None:
    """Set `role = "furniture"` on running headers, footers and page numbers."""
    from mnote_evidence.build.parse.providers.furniture import PageBlock, furniture_flags

    flags = furniture_flags(
        [PageBlock(b.page, b.bbox, b.text) for b in raw], {p.page: p.height for p in pages}
    )
    for b, flag in zip(raw, flags):
        if flag:
            b.role = ROLE_FURNITURE


def _blocks(path: str, raw: list[_RawBlock], starts: list[Start]):
    """Blocks in reading order, the `*.parse.md` text they index into, and the section tree."""
    starts_at: dict[int, list[Start]] = {}
    for start in starts:
        starts_at.setdefault(start.position, []).append(start)
    headings = {start.heading for start in starts}
    new_id = BlockIdAllocator(path)
    tree = SectionTree(path)
    parts: list[str] = []
    length = 0
    blocks: list[Block] = []
    page = 0

    def emit(s: str) -> int:
        nonlocal length
        parts.append(s)
        length += len(s)
        return length

    for pos, b in enumerate(raw):
        if b.page != page:
            page = b.page
            emit(("\n\n" if pos else "") + f"<!-- page {page} -->")
        kind = b.kind
        for start in starts_at.get(pos, []):
            tree.open(start.level, start.title, b.page)
        if pos in headings:
            kind = "heading"
        prefix = "#" * min(tree.current.level, 6) + " " if kind == "heading" else ""
        start = emit("\n\n" + prefix)
        end = emit(b.text)
        blocks.append(
            tree.add(
                Block(
                    new_id(kind, b.text),
                    kind,
                    b.text,
                    page=b.page,
                    bbox=b.bbox,
                    char_range=[start, end],
                    confidence=b.confidence,
                    role=b.role,
                    box_holds_text=b.box_holds_text,
                )
            )
        )
    emit("\n")
    return "".join(parts), blocks, tree
