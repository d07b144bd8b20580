"""OCR of a rendered page that mixes Chinese and Latin text: Latin words keep the spaces between
them (the engine's own spacing), Chinese runs get none, and both are found by a real build's index."""

from __future__ import annotations

import re

import pymupdf
import pytest

from mnote_evidence.functions.search.fts import search_blocks
from tests.conftest import connect, run_build

# lines as a Chinese manual prints them: Latin names and phrases inside Chinese sentences
LINES = [
    "自由 Pascal 编译器：软件包 fpc 提供 Free Pascal 和 Object Pascal 的编译器。",
    "维护者不再维护的软件包会被标记为 Request for Adoption 并等待新的维护者。",
    "参见 Integrating MS Windows Networks with Samba 和 Windows domain 服务。",
    "GNU C 编译器和 flex 是 Fast Lexical Analyzer 的实现，见 Prentice Hall 的书。",
]


def write_page(path) -> None:
    """The lines typeset as a Chinese manual is: a serif Latin font beside a CJK one, 10 pt, 200 dpi."""
    latin, cjk = pymupdf.Font("tiro"), pymupdf.Font("china-s")
    doc = pymupdf.open()
    page = doc.new_page(width=640, height=30 + 24 * len(LINES))
    writer = pymupdf.TextWriter(page.rect)
    for n, line in enumerate(LINES):
        pos = pymupdf.Point(20, 26 + 24 * n)
        for run in re.findall(r"[\x00-\x7f]+|[^\x00-\x7f]+", line):
            _, pos = writer.append(pos, run, font=latin if run.isascii() else cjk, fontsize=10)
    writer.write_text(page)
    page.get_pixmap(dpi=200).save(path)  # a page as a screenshot shows it


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed") / "ws"
    (root / "shots").mkdir(parents=True)
    write_page(root / "shots/manual-page.png")
    (root / "note.md").write_text("# Beside\n\nA note beside the page.\n")
    out = root.parent / "out"
    assert run_build(root, out).errors == []
    return out


def ocr_text(out) -> str:
    rows = connect(out).execute(
        "SELECT b.text FROM evidence_block b JOIN evidence_resource r USING (resource_id)"
        " WHERE r.source_root_relative_path = 'shots/manual-page.png'"
    )
    return "\n".join(row[0] for row in rows)


@pytest.mark.parametrize(
    "phrase", ["Free Pascal", "Request for Adoption", "Windows domain", "Fast Lexical Analyzer"]
)
def test_latin_words_in_chinese_lines_keep_their_spaces(built, phrase):
    assert phrase in ocr_text(built)
    hits = search_blocks(connect(built), phrase, 10)
    assert any(h.resource_path == "shots/manual-page.png" for h in hits), phrase


def test_chinese_runs_have_no_spaces_and_are_found(built):
    text = ocr_text(built)
    assert "标记为" in text and "新的维护者" in text
    hits = search_blocks(connect(built), "新的维护者", 10)
    assert any(h.resource_path == "shots/manual-page.png" for h in hits)
