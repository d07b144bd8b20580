"""Page rules: the renderer dispatches through a dict keyed by the format registry, and fails loudly."""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from click.testing import CliRunner

from mnote_evidence.build.cli.main import main
from mnote_evidence.build.core.errors import UnknownKind
from mnote_evidence.build.core.formats import FORMATS
from mnote_evidence.build.render import site as site_module
from mnote_evidence.build.render.pages import RULES
from mnote_evidence.build.render.site import STATE_FILE, RenderOptions, render_site
from tests.conftest import CHEM_DOCX, SPEC_PDF


def test_every_registered_format_has_a_page_rule():
    assert {f.page for f in FORMATS} <= set(RULES)


def test_a_resource_of_an_unknown_kind_fails_loudly(site, tmp_path):
    root, out = site
    db = tmp_path / "evidence.sqlite"
    shutil.copy(out / "evidence.sqlite", db)
    conn = sqlite3.connect(db)
    with conn:  # an index written by another version: a kind this build has no page for
        conn.execute(
            "UPDATE evidence_resource SET kind = 'slides' WHERE source_root_relative_path = ?", [CHEM_DOCX]
        )
    conn.close()
    with pytest.raises(UnknownKind) as exc:
        render_site(root, tmp_path / "site", db, RenderOptions())
    assert exc.value.path == CHEM_DOCX and exc.value.kind == "slides"
    assert CHEM_DOCX in str(exc.value) and "'slides'" in str(exc.value)


def test_a_format_without_its_page_rule_fails_loudly(site, tmp_path):
    root, out = site
    pages = site_module._Site(root, tmp_path, out / "evidence.sqlite", RenderOptions())
    try:
        pdf = pages.by_path[SPEC_PDF]
        assert "_pages/" in pages.render_resource(pdf)  # with its rule: page images
        del pages.rules["pdf"]
        with pytest.raises(UnknownKind, match="page rule 'pdf'"):
            pages.render_resource(pdf)
    finally:
        pages.conn.close()


def test_the_cli_reports_an_unknown_kind_without_a_traceback(site, tmp_path):
    ws, work = tmp_path / "ws", tmp_path / "out"  # copies: the shared site stays untouched
    shutil.copytree(site[0], ws, symlinks=True)
    shutil.copytree(site[1], work)
    conn = sqlite3.connect(work / "evidence.sqlite")
    with conn:
        conn.execute(
            "UPDATE evidence_resource SET kind = 'slides' WHERE source_root_relative_path = ?", [CHEM_DOCX]
        )
    conn.close()
    (work / STATE_FILE).unlink()  # the site must be rendered again
    result = CliRunner().invoke(main, ["build", str(ws), "--out", str(work), "--jobs", "1", "--no-ocr"])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "kind 'slides'" in result.output and "empty --out" in result.output
