"""The format registry (build/formats.py): every supported suffix, one provider per format, nothing else."""

from __future__ import annotations

import shutil

import pytest

from mnote_evidence.build import formats
from mnote_evidence.build.formats import BY_SUFFIX, FORMATS, Format, format_for, kind_for, provider_for
from mnote_evidence.build.model import Kind
from mnote_evidence.build.render.pages import RULES
from mnote_evidence.build.scan import scan
from tests.conftest import CHEM_DOCX, FIXTURES, connect, run_build

# What the README's provider table promises, written out independently of the registry.
SUPPORTED = {
    ".md": Kind.MARKDOWN, ".markdown": Kind.MARKDOWN, ".pdf": Kind.PDF, ".docx": Kind.OFFICE,
    ".png": Kind.IMAGE, ".jpg": Kind.IMAGE, ".jpeg": Kind.IMAGE, ".webp": Kind.IMAGE,
    ".tif": Kind.IMAGE, ".tiff": Kind.IMAGE, ".bmp": Kind.IMAGE,
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


def test_pptx_is_recorded_unsupported_not_sent_to_the_docx_provider(workspace, tmp_path):
    # A second Office format, even one whose bytes are a valid OOXML zip (here: a real .docx renamed),
    # has no provider until one is registered: it must not reach python-docx through its kind.
    shutil.copy(workspace / CHEM_DOCX, workspace / "Unfiled/deck.pptx")
    out = tmp_path / "out"
    run_build(workspace, out, site=True)
    row = connect(out).execute("SELECT * FROM evidence_resource WHERE source_root_relative_path = ?",
                               ["Unfiled/deck.pptx"]).fetchone()
    assert (row["status"], row["error_code"], row["kind"]) == ("unsupported", "unsupported_type", "other")
    assert row["provider"] is None and row["artifact_path"] is None and row["block_count"] == 0
    assert "no provider for '.pptx'" in row["error_message"]
    assert "This file type is not parsed" in (out / "Unfiled/deck.pptx.html").read_text("utf-8")
