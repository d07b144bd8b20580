"""DOCX provider on a real Word file written by python-docx."""

from __future__ import annotations

import json
import shutil
import zipfile

import docx
import pytest

from mnote_evidence.build.core.model import ProviderError
from mnote_evidence.build.parse.providers import docx as docx_provider
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.docx import DocxProvider
from mnote_evidence.build.workspace.scan import file_sha256
from mnote_evidence.functions.search.fts import search_blocks
from tests.conftest import CHEM_DOCX, FIXTURES, REPO, connect, run_build


def parse(root, rel):
    return DocxProvider().parse(ParseInput(root, rel, file_sha256(root / rel)))


def test_paragraph_has_heading_path_index_and_para_id():
    art = parse(FIXTURES, CHEM_DOCX)
    [block] = [b for b in art.blocks if b.text.startswith("吡咯烷（pyrrolidine")]
    section = art.section_by_id()[block.section_id]
    assert section.path == ["溶剂与杂环化合物笔记", "含氮杂环", "吡咯烷"]
    assert block.paragraph_index == 5
    assert block.para_id == "1A2B0005"
    assert block.page is None and block.bbox is None  # never a fake page
    assert art.text[block.char_range[0] : block.char_range[1]] == block.text


def test_empty_paragraphs_count_and_tables_become_rows():
    art = parse(FIXTURES, CHEM_DOCX)
    note = [b for b in art.blocks if b.text.startswith("表中沸点")][0]
    heading = [b for b in art.blocks if b.text == "常用数据表"][0]
    assert heading.paragraph_index == 14  # paragraph 13 is the empty one
    rows = [b for b in art.blocks if b.type == "table_row"]
    assert rows[0].text == "名称 | 沸点 (°C) | 用途" and len(rows) == 5
    assert note.paragraph_index == 15


def test_not_a_zip_is_corrupt():
    with pytest.raises(ProviderError) as exc:
        parse(FIXTURES, "Inbox/Broken Files.assets/not-a-zip.docx")
    assert exc.value.code == "docx_corrupt"


def test_zip_bomb_is_refused_before_inflating(tmp_path, monkeypatch):
    monkeypatch.setattr(docx_provider, "MAX_UNCOMPRESSED", 8 * 2**20)
    with zipfile.ZipFile(tmp_path / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", b"<" + b"a" * (64 * 2**20) + b">")
    assert (tmp_path / "bomb.docx").stat().st_size < 2**20
    with pytest.raises(ProviderError) as exc:
        parse(tmp_path, "bomb.docx")
    assert exc.value.code == "docx_zip_bomb"


REAL = REPO / "tests/real_documents/docx"


def test_package_python_docx_refuses_is_read_from_its_xml_with_a_warning():
    """python-docx's comments-rich-para.docx with one image part missing (a dangling relationship)."""
    with pytest.raises(KeyError):
        docx.Document(str(REAL / "comments-rich-para-missing-image.docx"))
    art = parse(REAL, "comments-rich-para-missing-image.docx")
    intact = parse(REAL, "comments-rich-para.docx")
    assert [w.code for w in art.warnings] == ["docx_repaired"] and "image1.jpeg" in art.warnings[0].message
    assert intact.warnings == []
    assert [(b.type, b.text, b.paragraph_index) for b in art.blocks] == [
        (b.type, b.text, b.paragraph_index) for b in intact.blocks
    ]  # nothing lost to the damage
    assert [b.paragraph_index for b in art.blocks if b.type == "paragraph"] == [
        1,
        3,
        5,
        7,
        9,
        11,
        13,
    ]  # empty ones between


def test_comments_are_blocks_attached_to_their_paragraph():
    art = parse(REAL, "comments-rich-para.docx")
    comments = [b for b in art.blocks if b.type == "comment"]
    assert len(comments) == 4
    first = comments[0]
    assert first.text == "Text with hyperlink https://google.com embedded."
    assert first.paragraph_index == 3 and first.note == "comment by Steve Canny on paragraph 3"
    assert [b.text for b in art.blocks].index(first.text) == 2  # right after "Some text worthy of note."
    assert art.text[first.char_range[0] : first.char_range[1]] == first.text


def test_footnotes_and_endnotes_are_numbered_and_attached():
    art = parse(REAL, "footnotes.docx")
    notes = [(b.text, b.paragraph_index, b.note) for b in art.blocks if b.type == "footnote"]
    assert notes == [
        ("This is footnote text for the first footnote.", 1, "footnote 1 to paragraph 1"),
        ("This is footnote text for the second footnote.", 3, "footnote 2 to paragraph 3"),
        ("This is footnote text for the third footnote.", 3, "footnote 3 to paragraph 3"),
    ]
    assert "[^f2]: This is footnote text for the second footnote." in art.text
    end = parse(REAL, "mammoth-endnotes.docx")
    assert [(b.type, b.note) for b in end.blocks if b.type != "paragraph"] == [
        ("endnote", "endnote 1 to paragraph 1"),
        ("endnote", "endnote 2 to paragraph 1"),
    ]


def test_text_box_paragraphs_are_blocks_once():
    art = parse(REAL, "mammoth-text-box.docx")
    assert [(b.type, b.text, b.note) for b in art.blocks] == [
        ("text_box", "Datum plane", "text box in paragraph 1")
    ]


def test_no_readable_body_is_still_corrupt(tmp_path):
    with zipfile.ZipFile(tmp_path / "x.docx", "w") as zf:
        zf.writestr("word/document.xml", "not xml at all")
    with pytest.raises(ProviderError) as exc:
        parse(tmp_path, "x.docx")
    assert exc.value.code == "docx_corrupt" and "no readable body" in exc.value.message


def test_repaired_file_and_its_notes_are_searchable_and_citeable(tmp_path, validate):
    root = tmp_path / "ws"
    root.mkdir()
    for name in ("comments-rich-para-missing-image.docx", "footnotes.docx"):
        shutil.copy(REAL / name, root / name)
    report = run_build(root, tmp_path / "out")
    assert report.errors == []
    assert {(w["path"], w["code"]) for w in report.warnings} == {
        ("comments-rich-para-missing-image.docx", "docx_repaired")
    }
    conn = connect(tmp_path / "out")
    [hit] = [h for h in search_blocks(conn, "third footnote", 5) if h.resource_path == "footnotes.docx"][:1]
    assert hit.locator["precision"] == "paragraph" and hit.locator["paragraphIndex"] == 3
    validate("locator.schema.json", hit.locator)
    doc = json.loads((root / hit.locator["sourceMapPath"]).read_text("utf-8"))
    validate("source_map.schema.json", doc)
    hits = search_blocks(conn, "character style", 5)
    assert hits and hits[0].resource_path == "comments-rich-para-missing-image.docx"
