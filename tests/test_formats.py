"""The format registry (build/core/formats.py): every supported suffix, one provider per format, nothing
else."""

from __future__ import annotations

import json
import re
import shutil
import sys
import types

import pytest

from mnote_evidence.build.core import formats
from mnote_evidence.build.core.formats import BY_SUFFIX, FORMATS, Format, format_for, kind_for
from mnote_evidence.build.core.model import Kind
from mnote_evidence.build.parse.providers import provider_for
from mnote_evidence.build.render.pages import RULES
from mnote_evidence.build.workspace.scan import scan
from mnote_evidence.functions.search.fts import search_blocks
from tests.conftest import CHEM_DOCX, FIXTURES, REPO, connect, run_build

# What the documented provider table promises, written out independently of the registry.
SUPPORTED = {
    ".md": Kind.MARKDOWN,
    ".markdown": Kind.MARKDOWN,
    ".pdf": Kind.PDF,
    ".docx": Kind.OFFICE,
    ".png": Kind.IMAGE,
    ".jpg": Kind.IMAGE,
    ".jpeg": Kind.IMAGE,
    ".webp": Kind.IMAGE,
    ".tif": Kind.IMAGE,
    ".tiff": Kind.IMAGE,
    ".bmp": Kind.IMAGE,
}


def test_registry_maps_every_supported_suffix_to_its_kind_provider_and_page_rule():
    assert {s: f.kind for s, f in BY_SUFFIX.items()} == SUPPORTED
    for suffix, kind in SUPPORTED.items():
        for path in (f"a/b{suffix}", f"a/B{suffix.upper()}"):  # suffixes match case-insensitively
            assert kind_for(path) == kind, path
            provider = provider_for(path)
            assert provider is not None and provider.kind == kind, path
            assert format_for(path).page in RULES, path
    for path in ("x.pptx", "x.csv", "x.doc", "README", "x.pdf.bak", ".md"):
        assert format_for(path) is None and kind_for(path) == Kind.OTHER and provider_for(path) is None, path


def test_scan_takes_kinds_from_the_registry():
    files = scan(FIXTURES)
    assert {f.kind for f in files} == {*formats.indexed_kinds(), Kind.OTHER}
    assert all(f.kind == kind_for(f.path) for f in files)


def test_a_suffix_registered_twice_is_refused():
    twice = (*FORMATS, Format("slides", (".pdf",), Kind.OFFICE, "docx:DocxProvider", page="document"))
    with pytest.raises(ValueError, match=r"\.pdf is registered twice"):
        formats._by_suffix(twice)


def test_a_second_format_of_notes_is_refused():
    # the build asks one provider version for every note (pipeline `_Build.notes`)
    two = (*FORMATS, Format("notes2", (".mdx",), Kind.MARKDOWN, "markdown:MarkdownProvider", page="note"))
    with pytest.raises(ValueError, match="exactly one format must read notes"):
        formats._by_suffix(two)


def test_pptx_is_recorded_unsupported_not_sent_to_the_docx_provider(workspace, tmp_path):
    # A second Office format, even one whose bytes are a valid OOXML zip (here: a real .docx renamed),
    # has no provider until one is registered: it must not reach python-docx through its kind.
    shutil.copy(workspace / CHEM_DOCX, workspace / "Unfiled/deck.pptx")
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    row = (
        connect(out)
        .execute("SELECT * FROM evidence_resource WHERE source_root_relative_path = ?", ["Unfiled/deck.pptx"])
        .fetchone()
    )
    assert (row["status"], row["error_code"], row["kind"]) == ("unsupported", "unsupported_type", "other")
    assert row["provider"] is None and row["artifact_path"] is None and row["block_count"] == 0
    assert "no provider for '.pptx'" in row["error_message"]
    assert "This file type is not parsed" in (out / "Unfiled/deck.pptx.html").read_text("utf-8")


def _readme_example() -> tuple[str, str]:
    """The provider module and the registry line from the docs' "Adding a format" section."""
    pages = [
        p
        for p in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
        if re.search(r"^#+ Adding a format", p.read_text("utf-8"), re.M)
    ]
    assert len(pages) == 1, f"one page explains adding a format: {pages}"
    text = pages[0].read_text("utf-8")
    section = re.split(r"^#+ Adding a format.*$", text, maxsplit=1, flags=re.M)[1]
    section = re.split(r"^#{1,2} ", section, maxsplit=1, flags=re.M)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2, "'Adding a format' shows one provider module and one registry line"
    return blocks[0], blocks[1].strip()


def test_the_readme_example_format_is_one_module_plus_one_line(workspace, tmp_path, monkeypatch):
    module_src, line = _readme_example()
    assert line.count("\n") == 0 and line.startswith("Format(")
    module = types.ModuleType("mnote_evidence.build.parse.providers.text")
    exec(compile(module_src, "README.md: build/parse/providers/text.py", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)  # as if the file were in build/parse/providers/
    fmt = eval(line.rstrip(","), {"Format": Format, "Kind": Kind})
    monkeypatch.setattr(formats, "BY_SUFFIX", formats._by_suffix((*FORMATS, fmt)))  # the one added line
    (workspace / "Unfiled/plain.txt").write_text(
        "First paragraph about solvents.\n\nSecond: 吗啉 in plain text.\n", "utf-8"
    )
    out = tmp_path / "out"
    run_build(workspace, out, site=True)  # jobs=1: parsed in this process, where the module is registered
    conn = connect(out)
    row = conn.execute(
        "SELECT * FROM evidence_resource WHERE source_root_relative_path = ?", ["Unfiled/plain.txt"]
    ).fetchone()
    assert (row["status"], row["kind"], row["provider"], row["block_count"]) == (
        "ok",
        "office",
        "plain-text",
        2,
    )
    hits = search_blocks(conn, "吗啉", 10, kinds=["office"])
    assert "Unfiled/plain.txt" in {h.resource_path for h in hits}
    locator = json.loads(
        conn.execute(
            "SELECT locator_json FROM evidence_block WHERE resource_id = ? AND paragraph_index = 2",
            [row["resource_id"]],
        ).fetchone()[0]
    )
    assert locator["precision"] == "paragraph" and locator["paragraphIndex"] == 2
    html = (out / "Unfiled/plain.txt.html").read_text("utf-8")
    assert f'id="{locator["blockId"]}"' in html and "吗啉 in plain text" in html
