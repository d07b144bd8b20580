"""OCR on real images and a real rasterised PDF page, with the real engines."""

from __future__ import annotations

import json

import pymupdf
import pytest

from mnote_evidence.build.parse.ocr import run as ocr_run
from mnote_evidence.build.parse.ocr.engines import TesseractEngine
from mnote_evidence.build.parse.ocr.normalize import normalize_line, respaced
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.functions.search.fts import search_blocks
from tests.conftest import FACTS, FIXTURES, SPEC_PDF, connect, copy_workspace, run_build
from tests.providers.test_pdf import overlap

IMAGE = FACTS["image"]["path"]


def test_normalisation_joins_cjk_and_spaced_letters():
    assert normalize_line("线程 作用 域") == "线程作用域"
    assert normalize_line("R u s t  并发 笔记") == "Rust 并发笔记"
    assert normalize_line("a b") == "a b"  # two letters are not a spaced-out word
    assert normalize_line("第 2 页 42") == "第 2 页 42"  # digits stay digits, apart from CJK


# RapidOCR 3.x word boxes (text, x0, x1) as it returned them for real images.
TITLE = (
    "Title of my document",
    [("Title", 324, 396), ("of", 407, 442), ("my", 446, 496), ("document", 507, 666)],
)
ICONS = (
    "<MIME>/ i cons (contains",
    [("<MIME>/", 270, 346), ("i", 350, 360), ("cons", 360, 403), ("(contains", 410, 487)],
)  # shared-mime-info-spec.pdf p.3, 150 dpi
THREAD = ("T h re ad", [("T", 232, 268), ("h", 268, 304), ("re", 304, 375), ("ad", 375, 447)])
MIXED = (
    "Rust 并发 — scre en s hot",
    [
        ("R", 22, 37),
        ("u", 37, 51),
        ("s", 51, 66),
        ("t", 66, 82),
        ("并", 106, 121),
        ("发", 121, 136),
        ("—", 183, 199),
        ("s", 213, 228),
        ("c", 228, 242),
        ("r", 242, 258),
        ("e", 261, 275),
        ("e", 275, 291),
        ("n", 294, 308),
        ("s", 308, 324),
        ("h", 327, 342),
        ("o", 342, 356),
        ("t", 356, 370),
    ],
)


def test_engine_spacing_is_kept_and_split_words_rejoined():
    assert respaced(*TITLE) == "Title of my document"  # word gaps of 4-11 px are real spaces
    assert respaced(*ICONS) == "<MIME>/ icons (contains"  # a lone non-word letter touching a word
    assert respaced(*THREAD) == "Thread"  # a touching run of fragments
    assert respaced(*MIXED) == "Rust 并发 — scre en s hot"  # CJK in the line: the engine's spacing
    assert respaced("fidelity 0.97", [("fidelity", 10, 90), ("0.97", 90, 130)]) == "fidelity 0.97"
    assert respaced("install a", [("install", 10, 80), ("a", 80, 90)]) == "install a"  # "a" is a word
    assert respaced("a b", [("ab", 0, 20)]) == "a b"  # pieces that do not spell the text: text unchanged


def test_fixture_image_is_searchable_with_its_box(built, validate):
    root, out, _ = built
    hits = [h for h in search_blocks(connect(out), "线程作用域", 20) if h.resource_path == IMAGE]
    assert hits, "the screenshot's text must be found"
    loc = hits[0].locator
    assert loc["page"] == 1 and loc["precision"] == "bbox" and loc["resourceKind"] == "image"
    assert overlap(loc["bbox"], FACTS["image"]["bbox"]) > 0.8  # where the fixture drew it, in pixels
    doc = json.loads((root / loc["sourceMapPath"]).read_text("utf-8"))
    validate("source_map.schema.json", doc)
    assert doc["fromOcr"] and doc["textFile"].endswith(".ocr.md")
    assert doc["pages"][0]["source"].startswith("ocr:rapidocr")
    assert (doc["pages"][0]["width"], doc["pages"][0]["height"]) == (
        FACTS["image"]["width"],
        FACTS["image"]["height"],
    )
    assert any(b["text"] == "Thread" for b in doc["pages"][0]["blocks"])  # Latin spacing rebuilt


def _scanned_pdf(path):
    """Page 1 keeps its text layer; page 2 is the real spec page 2 rasterised (no text layer)."""
    src = pymupdf.open(FIXTURES / SPEC_PDF)
    out = pymupdf.open()
    out.insert_pdf(src, from_page=0, to_page=0)
    pix = src[1].get_pixmap(dpi=150)
    page = out.new_page(width=src[1].rect.width, height=src[1].rect.height)
    page.insert_image(page.rect, pixmap=pix)
    out.save(path)
    return src


def test_scanned_page_is_ocrd_and_native_page_is_not(tmp_path, validate):
    root = tmp_path / "ws"
    root.mkdir()
    src = _scanned_pdf(root / "mixed.pdf")
    out = tmp_path / "out"
    run_build(root, out, ocr=OcrSettings(cache_dir=str(tmp_path / "cache")))
    hits = [
        h
        for h in search_blocks(connect(out), "retention period audit evidence", 5)
        if h.resource_path == "mixed.pdf"
    ]
    assert hits and hits[0].locator["page"] == 2
    truth = tuple(src[1].search_for("The retention period for audit evidence")[0])
    assert overlap(hits[0].locator["bbox"], truth) > 0.6  # OCR box, converted to points, on the words
    doc = json.loads((root / hits[0].locator["sourceMapPath"]).read_text("utf-8"))
    validate("source_map.schema.json", doc)
    assert "source" not in doc["pages"][0] and doc["pages"][1]["source"].startswith("ocr:")
    assert {b["type"] for b in doc["pages"][0]["blocks"]} != {"ocr_line"}
    assert {b["type"] for b in doc["pages"][1]["blocks"]} == {"ocr_line"}


def test_rebuild_uses_the_cache_not_the_engine(tmp_path, monkeypatch):
    root = copy_workspace(tmp_path / "ws")
    src = _scanned_pdf(root / "Unfiled/scan.pdf")
    src.close()
    ocr = OcrSettings(cache_dir=str(tmp_path / "cache"))
    out = tmp_path / "out"
    run_build(root, out, ocr=ocr)
    before = connect(out).execute("SELECT block_id, locator_json FROM evidence_block ORDER BY 1").fetchall()
    (out / "evidence.sqlite").unlink()
    for sidecar in list(root.rglob("*.ocr.md")) + list(root.rglob("*.source-map.json")):
        sidecar.unlink()  # force every file to be parsed again

    class MustNotRun:  # fault injection: any call to the engine fails the test
        def recognise(self, image):
            raise AssertionError("OCR ran again for bytes it had already read")

    monkeypatch.setattr(ocr_run, "engine_for", lambda name: MustNotRun())
    report = run_build(root, out, ocr=ocr)
    assert report.parsed > 10
    assert (
        connect(out).execute("SELECT block_id, locator_json FROM evidence_block ORDER BY 1").fetchall()
        == before
    )


def test_no_ocr_turns_it_off(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    _scanned_pdf(root / "Unfiled/scan.pdf").close()
    scan = pymupdf.open()
    scan.new_page().insert_image(pymupdf.Rect(0, 0, 595, 842), filename=str(root / IMAGE))
    scan.save(root / "Unfiled/only-scan.pdf")
    report = run_build(root, tmp_path / "out", ocr=OcrSettings(engine="none"))
    codes = {e["path"]: e["code"] for e in report.errors}
    assert codes["Unfiled/only-scan.pdf"] == "pdf_no_text"
    assert "--no-ocr" in {e["path"]: e["message"] for e in report.errors}["Unfiled/only-scan.pdf"]
    conn = connect(tmp_path / "out")
    assert (
        conn.execute(
            "SELECT block_count FROM evidence_resource WHERE source_root_relative_path = ?", [IMAGE]
        ).fetchone()[0]
        == 0
    )


def test_tesseract_engine_reads_lines_with_boxes(tesseract):
    lines = TesseractEngine().recognise(FIXTURES / IMAGE)
    text = " ".join(line.text for line in lines)
    assert "Thread" in text and "screenshot" in text
    assert all(
        0 <= line.bbox[0] < line.bbox[2] <= FACTS["image"]["width"] and 0 <= line.confidence <= 1
        for line in lines
    )


@pytest.mark.parametrize("engine", ["rapidocr", "tesseract"])
def test_corrupt_image_is_an_error_whatever_the_engine(tmp_path, engine):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    report = run_build(root, tmp_path / "out", ocr=OcrSettings(engine=engine, cache_dir=str(tmp_path / "c")))
    assert [(e["path"], e["code"]) for e in report.errors] == [("broken.png", "image_corrupt")]
