"""Markdown provider: blocks, line ranges, sections, links."""

from __future__ import annotations

from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.markdown import MarkdownProvider
from mnote_evidence.build.workspace.scan import file_sha256
from tests.conftest import FIXTURES

NOTE = "Projects/Evidence Kernel.md"


def parse(rel):
    return MarkdownProvider().parse(ParseInput(FIXTURES, rel, file_sha256(FIXTURES / rel)))


def test_block_line_range_matches_the_source_lines():
    art = parse(NOTE)
    lines = (FIXTURES / NOTE).read_text("utf-8").split("\n")
    [block] = [b for b in art.blocks if "retention period" in b.text]
    assert block.type == "list_item"
    first, last = block.line_range
    assert "retention period for audit evidence" in "\n".join(lines[first - 1 : last])
    assert art.text[block.char_range[0] : block.char_range[1]] == lines[first - 1]
    assert art.section_by_id()[block.section_id].path == ["Evidence Kernel", "Decisions"]


def test_links_and_wikilinks_stay_on_their_block():
    art = parse(NOTE)
    links = {(link["target"], link["kind"]) for b in art.blocks for link in b.links}
    assert ("Evidence%20Kernel.assets/evidence-kernel-spec.pdf", "link") in links
    assert ("Kickoff", "wikilink") in links
    assert ("README", "wikilink") in links
    related = [b for b in art.blocks if any(link["target"] == "Kickoff" for link in b.links)][0]
    assert related.text == "See the Kickoff meeting and the workspace home."


def test_non_utf8_note_is_decoded_with_a_warning():
    art = parse("Inbox/Legacy Note.md")
    assert [w.code for w in art.warnings] == ["non_utf8_text"]
    assert any("Crème brûlée" in b.text for b in art.blocks)  # detected, not replaced
    assert "decoded as cp1252" in art.warnings[0].message


def test_tables_and_code_are_blocks():
    art = parse("Projects/Meeting Notes/Kickoff.md")
    kinds = [b.type for b in art.blocks]
    assert "table" in kinds and "quote" in kinds
    table = [b for b in art.blocks if b.type == "table"][0]
    assert "Lin | Build the PDF provider" in table.text
