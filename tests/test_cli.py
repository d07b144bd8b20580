"""The command line: --help, --json, --strict (through click's runner; a real process only in test_atomic)."""

from __future__ import annotations

import inspect
import json

import click
from click.testing import CliRunner

from mnote_evidence.build.cli.main import main
from mnote_evidence.build.cli.options import build_args
from mnote_evidence.build.cli.options import output_options as _output_options


def test_help_explains_the_build():
    result = CliRunner().invoke(main, ["build", "--help"])
    assert result.exit_code == 0
    for flag in ("--out", "--jobs", "--json", "--strict", "--max-file-mb"):
        assert flag in result.output


def test_json_summary_and_strict_exit(workspace, tmp_path):
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(main, ["build", str(workspace), "--out", str(out), "--json", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["changed"] is True and summary["status_counts"]["ok"] >= 14
    assert {e["code"] for e in summary["errors"]} >= {"pdf_corrupt", "pdf_encrypted", "empty_file"}
    strict = runner.invoke(main, ["build", str(workspace), "--out", str(out), "--strict"])
    assert strict.exit_code == 1
    assert "pdf_encrypted" in strict.output


def test_missing_workspace_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(main, ["build", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_ask_imports_only_what_it_needs(built):
    """`ask --json` start-up: a real process, LightRAG configured but down. It runs the whole
    command (client included) and imports its transport, httpcore, but none of the build's parsers,
    Datasette, the site renderer or the build pipeline."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.servers import free_port

    _, out, _ = built
    repo = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": repo, "LIGHTRAG_URL": f"http://127.0.0.1:{free_port()}"}
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "mnote_evidence",
            "ask",
            "吡咯烷的沸点",
            "--site",
            str(out),
            "--json",
            "--timeout",
            "2",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    body = json.loads(done.stdout)
    assert done.returncode == 1 and body["degradedReason"] == "knowledge_rag_unavailable"
    imported = {
        line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }
    assert {
        "mnote_evidence.functions.handlers.knowledge",
        "mnote_evidence.functions.citations.mapper",
        "httpcore",
    } <= imported
    heavy = {
        "pymupdf",
        "fitz",
        "docx",
        "PIL",
        "datasette",
        "jinja2",
        "markdown_it",
        "mnote_evidence.build.pipeline",
    }
    assert imported & heavy == set()


def test_serve_gives_its_watch_rebuilds_every_output_option_of_build(tmp_path):
    """`serve` takes build's output options (defined once) and `build_args` turns them back into `build`
    flags that `build` parses to the same values: no option is dropped on a `--watch` rebuild."""
    shared = {p.name for p in _output_options(click.command()(lambda **kw: None)).params}
    assert shared | {"lightrag_url"} == set(inspect.signature(build_args).parameters)
    given = [
        "--no-ocr",
        "--max-page-images",
        "7",
        "--page-zoom",
        "1.5",
        "--sidecars",
        "mnote",
        "--max-file-mb",
        "3",
        "--ocr-engine",
        "tesseract",
        "--ocr-fallback",
        "tesseract",
        "--allow-upload",
        "--mineru-url",
        "http://mineru.example",
        "--lightrag-url",
        "http://rag.example",
    ]
    served = (
        main.get_command(click.Context(main), "serve").make_context("serve", [str(tmp_path), *given]).params
    )
    wanted = {name: served[name] for name in shared | {"lightrag_url"}}
    built = (
        main.get_command(click.Context(main), "build")
        .make_context("build", [str(tmp_path), *build_args(**wanted)])
        .params
    )
    assert {name: built[name] for name in wanted} == wanted
