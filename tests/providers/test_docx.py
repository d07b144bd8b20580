"""DOCX provider on a real Word file written by python-docx."""

from __future__ import annotations

import zipfile

import pytest

from mnote_evidence.build.model import ProviderError
from mnote_evidence.build.providers import docx as docx_provider
from mnote_evidence.build.providers.base import ParseInput
from mnote_evidence.build.providers.docx import DocxProvider
from mnote_evidence.build.scan import file_sha256
from tests.conftest import CHEM_DOCX, FIXTURES


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
    assert art.text[block.char_range[0]:block.char_range[1]] == block.text


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
