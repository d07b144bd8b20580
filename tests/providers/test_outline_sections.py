"""Section paths of real builds of PDFs: outline entries placed by their destination point, headings
matched by text that ignores section numbers, spacing between scripts, punctuation width and case; the
font-size fallback (no outline) never makes a section of a code line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pymupdf

from tests.conftest import connect, run_build

REAL = Path(__file__).resolve().parent.parent / "real_documents" / "outline"
DEBIAN_REFERENCE_PAGES = "debian-reference-zh-cn-p178-179.pdf"


def _goto(page: int, y: float) -> dict:
    return {"kind": pymupdf.LINK_GOTO, "page": page, "to": pymupdf.Point(72, y)}


def _outline_pdf(path: Path) -> None:
    """Two pages; the page text numbers its headings and writes "到CD", the outline does neither."""
    doc = pymupdf.open()
    one = doc.new_page()
    one.insert_text((72, 90), "1 Introduction", fontsize=16)
    one.insert_text((72, 130), "The introduction explains the purpose of the manual.", fontsize=10)
    one.insert_text((72, 300), "9.7.7 直接写入文件到CD/DVD-R/RW", fontname="china-s", fontsize=14)
    one.insert_text((72, 340), "把数据直接写入光盘的方法。", fontname="china-s", fontsize=10)
    two = doc.new_page()
    two.insert_text((72, 90), "The burning method continues on the next page.", fontsize=10)
    two.insert_text((72, 300), "2 ARCHITECTURE, OVERVIEW", fontsize=16)
    two.insert_text((72, 340), "The architecture body text sits below its heading.", fontsize=10)
    doc.set_toc(
        [
            [1, "Introduction", 1, _goto(0, 74)],
            [2, "直接写入文件到 CD/DVD-R/RW", 1, _goto(0, 284)],
            [1, "Architecture overview", 2, _goto(1, 284)],
        ]
    )
    doc.save(path)


def _code_pdf(path: Path) -> None:
    """No outline; code listings set larger than the prose: monospace lines, and numbered listing lines
    in a proportional font."""
    doc = pymupdf.open()
    prose = "The macros below define part {} of the package; each is read once, when the package loads."
    for chapter in (1, 2):
        page = doc.new_page()
        page.insert_text((72, 80), f"{chapter} Implementation part {chapter}", fontsize=16)
        y = 110
        for _line in range(12):
            page.insert_text((72, y), prose.format(chapter), fontsize=9)
            y += 11
        for n in range(1, 5):
            y += 24
            page.insert_text((72, y), rf"\def\AsyMacro{n}#1{{%", fontname="cour", fontsize=11)
            y += 24
            listing = rf"{n + 100 * chapter} \def\ProcessAsymptote#{n}{{%"
            page.insert_text((72, y), listing, fontsize=11)
    doc.save(path)


def _blocks(out: Path, name: str) -> list[dict]:
    with connect(out) as conn:
        rows = conn.execute(
            "SELECT b.kind, b.text, b.page, b.section_path_json FROM evidence_block b "
            "JOIN evidence_resource r USING (resource_id) WHERE r.source_root_relative_path = ? "
            "ORDER BY b.ordinal",
            [name],
        ).fetchall()
    return [{**dict(r), "path": json.loads(r["section_path_json"] or "[]")} for r in rows]


def _sections(out: Path, name: str) -> list[str]:
    with connect(out) as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT s.title FROM evidence_section s JOIN evidence_resource r USING (resource_id) "
                "WHERE r.source_root_relative_path = ?",
                [name],
            )
        ]


def _one(blocks: list[dict], start: str) -> dict:
    [block] = [b for b in blocks if b["text"].startswith(start)]
    return block


def test_numbered_and_mixed_script_headings_are_placed_by_the_outline_point(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    _outline_pdf(ws / "manual.pdf")
    run_build(ws, tmp_path / "out")
    blocks = _blocks(tmp_path / "out", "manual.pdf")
    cd = "直接写入文件到 CD/DVD-R/RW"
    assert _one(blocks, "1 Introduction")["kind"] == "heading"
    assert _one(blocks, "9.7.7")["kind"] == "heading"
    assert _one(blocks, "9.7.7")["path"] == ["Introduction", cd]
    assert _one(blocks, "The introduction")["path"] == ["Introduction"]
    assert _one(blocks, "把数据")["path"] == ["Introduction", cd]
    # the page's first block is the previous section's text, not the next entry's heading
    assert _one(blocks, "The burning method")["path"] == ["Introduction", cd]
    assert _one(blocks, "2 ARCHITECTURE")["kind"] == "heading"
    assert _one(blocks, "The architecture body")["path"] == ["Architecture overview"]


def test_real_manual_pages_file_each_paragraph_under_its_own_heading(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(REAL / DEBIAN_REFERENCE_PAGES, ws / DEBIAN_REFERENCE_PAGES)
    run_build(ws, tmp_path / "out")
    blocks = _blocks(tmp_path / "out", DEBIAN_REFERENCE_PAGES)
    headings = [b["text"] for b in blocks if b["kind"] == "heading"]
    assert headings == [
        "9.6.7 通过挂载选项优化文件系统",
        "9.6.8 通过超级块（superblock）优化文件系统",
        "9.6.9 硬盘优化",
        "9.6.10 固态硬盘优化",
        "9.6.11 使用SMART 预测硬盘故障",
        "9.6.12 通过$TMPDIR 指定临时存储目录",
        "9.6.13 通过LVM 扩展可用存储空间",
    ]
    # page 2 opens with the end of 硬盘优化 (page 1's last section)
    assert _one(blocks, "现代高速CD-ROM")["path"] == ["硬盘优化"]
    assert _one(blocks, "固态硬盘（Solid state drive")["path"] == ["固态硬盘优化"]
    assert _one(blocks, "你可以使用兼容SMART")["path"] == ["使用 SMART 预测硬盘故障"]


def test_code_listings_never_become_sections(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    _code_pdf(ws / "package.pdf")
    run_build(ws, tmp_path / "out")
    assert sorted(_sections(tmp_path / "out", "package.pdf")) == [
        "1 Implementation part 1",
        "2 Implementation part 2",
    ]
    blocks = _blocks(tmp_path / "out", "package.pdf")
    assert _one(blocks, "The macros below define part 2")["path"] == ["2 Implementation part 2"]
