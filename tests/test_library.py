"""The build as a library a program can drive: typed errors, progress events, no click outside the CLI."""

from __future__ import annotations

import ast
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from mnote_evidence.build.cli.main import main
from mnote_evidence.build.core.errors import BuildLocked, MnoteError, NotAWorkspace
from mnote_evidence.build.core.progress import Stage
from mnote_evidence.build.pipeline import BuildOptions, build
from tests.conftest import REPO, connect, copy_workspace, run_build

HOLD_LOCK = """
import sys
from pathlib import Path
from mnote_evidence.build.pipeline import _build_lock
with _build_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def lock_holder(tmp_path):
    """A second process holding the build lock on `tmp_path/out` (through the library's own lock)."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        yield out
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_build_raises_typed_errors(tmp_path, lock_holder):
    note = tmp_path / "note.md"
    note.write_text("# A note\n", "utf-8")
    with pytest.raises(NotAWorkspace) as exc:
        build(note, BuildOptions(out=tmp_path / "x", site=False))
    assert exc.value.path == note.resolve() and "is not a folder" in str(exc.value)
    with pytest.raises(NotAWorkspace, match="does not exist"):
        build(tmp_path / "missing", BuildOptions(out=tmp_path / "x", site=False))
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(BuildLocked) as locked:
        build(ws, BuildOptions(out=lock_holder, site=False))
    assert isinstance(locked.value, MnoteError) and locked.value.out == lock_holder
    assert not (lock_holder / "evidence.sqlite").exists()  # refused before touching anything


def test_cli_turns_library_errors_into_messages_that_say_what_to_do(tmp_path, lock_holder):
    runner = CliRunner()
    note = tmp_path / "note.md"
    note.write_text("# A note\n", "utf-8")
    result = runner.invoke(main, ["build", str(note), "--out", str(tmp_path / "x")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "is a file, not a folder" in result.output and str(tmp_path) in result.output
    ws = tmp_path / "ws"
    ws.mkdir()
    result = runner.invoke(main, ["build", str(ws), "--out", str(lock_holder)])
    assert result.exit_code == 1 and "another build is writing" in result.output and "--out" in result.output


def test_cli_with_a_file_exits_with_a_clear_error_in_a_real_process(tmp_path):
    note = tmp_path / "note.md"
    note.write_text("# A note\n", "utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "mnote_evidence", "build", str(note), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert (
        "Traceback" not in proc.stderr and "Error: WORKSPACE" in proc.stderr and "not a folder" in proc.stderr
    )


def _by_stage(events):
    stages: dict[Stage, list] = {}
    for e in events:
        stages.setdefault(e.stage, []).append(e)
    return stages


def test_progress_reports_every_stage_in_order(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    out = tmp_path / "out"
    events = []
    report = run_build(root, out, site=True, jobs=2, on_progress=events.append)
    order = list(dict.fromkeys(e.stage for e in events))
    assert order == [Stage.SCAN, Stage.NOTES, Stage.PARSE, Stage.INDEX, Stage.RENDER, Stage.PAGE_IMAGES]
    stages = _by_stage(events)
    assert sum(len(v) for v in stages.values()) == len(events)  # each stage's events are contiguous
    for stage, evs in stages.items():
        assert evs[0].done == 0 and evs[-1].done == evs[-1].total and evs[-1].finished, stage
        assert len({e.total for e in evs}) == 1, stage
        assert all(a.done <= b.done for a, b in zip(evs, evs[1:])), stage
    conn = connect(out)
    files = conn.execute("SELECT count(*) FROM evidence_resource").fetchone()[0]
    notes = conn.execute("SELECT count(*) FROM evidence_resource WHERE kind = 'markdown'").fetchone()[0]
    assert stages[Stage.SCAN][-1].total == files
    assert stages[Stage.NOTES][-1].total == notes
    assert 0 < stages[Stage.PARSE][-1].total <= report.parsed
    assert len(stages[Stage.PARSE]) == stages[Stage.PARSE][-1].total + 1  # one event per parsed file
    assert stages[Stage.RENDER][-1].total == report.site.pages_written + report.site.pages_unchanged
    assert stages[Stage.PAGE_IMAGES][-1].total == report.site.page_images > 0
    summary = report.to_json()["site"]  # the typed site report serialises as an object
    assert summary["pages_written"] == report.site.pages_written and summary["problems"] == []

    again = []
    run_build(root, out, site=True, jobs=2, on_progress=again.append)  # no-op: every stage still reports
    stages = _by_stage(again)
    assert list(stages) == [
        Stage.SCAN,
        Stage.NOTES,
        Stage.PARSE,
        Stage.INDEX,
        Stage.RENDER,
        Stage.PAGE_IMAGES,
    ]
    assert stages[Stage.PARSE] and stages[Stage.PARSE][-1].total == 0
    assert stages[Stage.PAGE_IMAGES][-1].total == 0


# Only the CLI (build/cli/: main.py and its command modules) knows click; functions/adapters/serve.py
# is held to the same rule, and nothing else is exempt.
CLICK_ALLOWED = {p.relative_to(REPO).as_posix() for p in (REPO / "build" / "cli").glob("*.py")}


def test_no_library_module_imports_click():
    offenders = []
    for folder in ("build", "functions", "mnote_evidence"):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel in CLICK_ALLOWED:
                continue
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                offenders += [f"{rel}:{node.lineno}" for n in names if n.split(".")[0] == "click"]
    assert offenders == []
    assert (
        "functions/adapters/serve.py" not in CLICK_ALLOWED
        and (REPO / "functions/adapters/serve.py").is_file()
    )


def test_cli_defaults_are_the_library_defaults():
    defaults = BuildOptions()
    command = main.get_command(click.Context(main), "build")
    ctx = click.Context(command)
    shown = {p.name: p.get_default(ctx) for p in command.params}  # callables (the page zoom) resolved
    assert shown["out"] == defaults.out
    assert shown["jobs"] == defaults.jobs
    assert shown["max_file_mb"] == defaults.max_file_mb
    assert shown["page_zoom"] == defaults.page_zoom
    assert shown["ocr_engine"] == defaults.ocr.engine
    assert shown["site"] is defaults.site
