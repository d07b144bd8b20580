"""Each command imports only what it uses: checked in a real process with
`python -X importtime`, which lists every module the process imported (bench/startup.py times them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import click
import pytest

from mnote_evidence.build.cli.main import COMMANDS, main
from tests.conftest import FIXTURES, REPO, SPEC_PDF, copy_workspace, run_build

PDF = {"pymupdf", "fitz"}
IMAGE_AND_WORD = {"PIL", "docx", "lxml"}
HTTP = {"httpx", "httpcore", "http.client"}
SERVERS = {"datasette", "mcp", "uvicorn", "starlette"}
SITE = {"jinja2"}
DATA = {"numpy", "pandas", "sqlite_utils"}
POOL = {"multiprocessing", "concurrent.futures.process"}  # worker processes: a no-op starts none


def imported(*args: str) -> tuple[set[str], str]:
    """(modules the command imported, its stdout); the command must succeed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mnote_evidence", *args],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {
        line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }, done.stdout


def tops(modules: set[str]) -> set[str]:
    """The top-level packages of `modules`, plus the modules themselves."""
    return modules | {m.split(".")[0] for m in modules}


def test_help_imports_no_command():
    modules, out = imported("--help")
    assert all(name in out for name in COMMANDS)
    assert not {
        m
        for m in modules
        if m.startswith("mnote_evidence.build.cli.") and m != "mnote_evidence.build.cli.main"
    }
    assert "mnote_evidence.functions.handlers.evidence" not in modules
    assert tops(modules) & (PDF | IMAGE_AND_WORD | HTTP | SERVERS | SITE | DATA | {"sqlite3"}) == set()


def test_help_lists_each_commands_own_summary():
    """The registry's summaries (what `--help` prints without importing the commands) are the
    commands' own first help sentences: a changed docstring without its summary fails here."""
    ctx = click.Context(main)
    for name, entry in COMMANDS.items():
        assert main.get_command(ctx, name).get_short_help_str(10**4) == entry.summary, name


@pytest.mark.parametrize("command", ["serve", "mcp", "build"])
def test_a_commands_help_loads_no_server_or_parser(command):
    modules, out = imported(command, "--help")
    assert "Usage: mnote-evidence " + command in out
    assert tops(modules) & (PDF | IMAGE_AND_WORD | HTTP | SERVERS | SITE | DATA) == set()


def _markdown_workspace(dest):
    for note in FIXTURES.rglob("*.md"):
        target = dest / note.relative_to(FIXTURES)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(note, target)
    return dest


def test_markdown_only_no_op_build_loads_no_pdf_image_word_or_http_library(tmp_path):
    ws, out = _markdown_workspace(tmp_path / "ws"), tmp_path / "out"
    imported("build", str(ws), "--out", str(out), "--json")  # the first build: renders the site
    modules, stdout = imported("build", str(ws), "--out", str(out), "--json")
    assert json.loads(stdout)["parsed"] == 0  # a no-op
    # with the site: its render has nothing to do, so it loads neither Jinja nor the page rules
    assert tops(modules) & (PDF | IMAGE_AND_WORD | HTTP | SERVERS | SITE | DATA | POOL) == set()
    assert (
        "mnote_evidence.build.render.site" in modules and "mnote_evidence.build.render.pages" not in modules
    )
    imported("build", str(ws), "--out", str(tmp_path / "bare"), "--no-site")
    modules, stdout = imported("build", str(ws), "--out", str(tmp_path / "bare"), "--no-site", "--json")
    assert json.loads(stdout)["parsed"] == 0
    assert tops(modules) & (PDF | IMAGE_AND_WORD | HTTP | SERVERS | SITE | DATA | POOL) == set()
    assert "mnote_evidence.build.render.site" not in modules


def test_no_op_build_of_pdfs_images_and_word_files_loads_none_of_their_libraries(tmp_path):
    ws, out = copy_workspace(tmp_path / "ws"), tmp_path / "out"
    run_build(ws, out)  # the fixtures' PDFs, DOCX and images, parsed (the library call, no site)
    modules, stdout = imported("build", str(ws), "--out", str(out), "--no-site", "--json")
    report = json.loads(stdout)
    assert report["parsed"] == 0 and report["unchanged"] > 0
    assert tops(modules) & (PDF | IMAGE_AND_WORD | HTTP | SERVERS | SITE | DATA | POOL) == set()


def test_a_build_that_parses_a_pdf_does_load_pymupdf(tmp_path):
    """The other side of the checks above: what is used is loaded (and seen by -X importtime)."""
    (tmp_path / "ws").mkdir()
    shutil.copy2(FIXTURES / SPEC_PDF, tmp_path / "ws" / "spec.pdf")
    modules, stdout = imported(
        "build", str(tmp_path / "ws"), "--out", str(tmp_path / "out"), "--no-site", "--no-ocr", "--json"
    )
    assert json.loads(stdout)["parsed"] == 1
    assert "pymupdf" in modules
    assert tops(modules) & (HTTP | SERVERS | SITE | {"docx"}) == set()


def test_search_and_verify_load_no_parser_http_renderer_or_server(built):
    _, out, _ = built
    for args in (["search", "线程作用域", "--site", str(out)], ["verify", "线程作用域", "--site", str(out)]):
        modules, stdout = imported(*args)
        assert stdout.strip()
        assert (
            tops(modules) & (PDF | IMAGE_AND_WORD | HTTP | SERVERS | SITE | DATA | {"markdown_it"}) == set()
        )
        assert "mnote_evidence.build.pipeline" not in modules
