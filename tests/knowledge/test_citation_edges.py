"""Citation edges found by questions on documents no other set uses (tests/real_documents/unseen/).

Each test cites a chunk of a real file through a real lightrag-server build and asserts the public
mapper output: the stated precision is what the locator holds.
"""

from __future__ import annotations

import shutil
import sqlite3

import docx
import pytest

from mnote_evidence.build.knowledge.ingest import source_name
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.citations.mapper import CitationMapper
from tests.conftest import REPO, run_build
from tests.knowledge.harness import LightRag

WORD = REPO / "tests/real_documents/unseen/docx"


@pytest.fixture(scope="module")
def word_site(tmp_path_factory):
    base = tmp_path_factory.mktemp("edges")
    root = base / "ws"
    root.mkdir()
    for name in ("notes.docx", "tables.docx", "comments.docx", "link_in_notes.docx"):
        shutil.copy(WORD / name, root / name)
    server = LightRag(base / "lightrag")
    server.start()
    try:
        report = run_build(root, base / "out", lightrag=LightRagConfig(server.url, timeout=120))
        assert report.knowledge["error"] is None and report.knowledge["failed"] == 0
        yield root, sqlite3.connect(f"file:{base / 'out' / 'evidence.sqlite'}?mode=ro", uri=True)
    finally:
        server.close()


def cite(conn, path: str, phrase: str, question: str) -> dict:
    """The citation of a chunk that is the ingested text around `phrase`."""
    text = conn.execute(
        "SELECT text FROM knowledge_text WHERE source_root_relative_path = ?", [path]
    ).fetchone()[0]
    at = text.index(phrase)
    chunk = {"file_path": source_name(path), "chunk_id": "c", "content": text[max(0, at - 20) : at + 80]}
    return CitationMapper(conn, question, "").citation(chunk, 0)


@pytest.mark.parametrize(
    "path, phrase, question",
    [
        ("notes.docx", "This is an endnote", "endnote at the end of the document"),
        ("notes.docx", "My note.", "my note"),
        ("link_in_notes.docx", "http://wikipedia.org/", "wikipedia"),
        ("tables.docx", "Lebron James", "Lebron Cleveland"),
        ("comments.docx", "This one has multiple paragraphs", "multiple paragraphs comment"),
    ],
)
def test_a_word_note_comment_or_table_row_is_cited_by_its_block_not_a_body_paragraph(
    word_site, validate, path, phrase, question
):
    """A footnote, endnote, comment or table row carries the `paragraphIndex` of the body paragraph it
    is attached to (or that precedes its table), which does not hold its words: the citation opens the
    block's anchor at `block` precision, with no paragraph number."""
    root, conn = word_site
    c = cite(conn, path, phrase, question)
    validate("citation.schema.json", c)
    body = [p.text for p in docx.Document(str(root / path)).paragraphs]
    assert phrase.split()[0] in c["displayQuote"] and not any(phrase in p for p in body)
    assert c["locatorPrecision"] == "block" and c["source"]["precision"] == "block", c
    assert "paragraphIndex" not in c["source"] and c["citationUrl"].endswith("#" + c["blockId"])
    assert "¶" not in c["citationMarkdown"]


def test_a_body_paragraph_keeps_paragraph_precision(word_site, validate):
    root, conn = word_site
    c = cite(conn, "notes.docx", "Test footnote. Test endnote.", "test footnote")
    validate("citation.schema.json", c)
    index = c["source"]["paragraphIndex"]
    assert c["locatorPrecision"] == "paragraph"
    assert "Test footnote" in docx.Document(str(root / "notes.docx")).paragraphs[index - 1].text
