"""One import namespace: nothing of ours is a top-level `build` or `functions` (issue 9).

PyPA's `build` is installed with the test extras, so every test run has it beside us."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
from pathlib import Path

import mnote_evidence
from mnote_evidence.build import pipeline

REPO = Path(__file__).resolve().parent.parent


def test_pypa_build_and_ours_coexist():
    spec = importlib.util.find_spec("build")
    assert spec is not None and spec.origin, "PyPA build should be installed by the test extras"
    assert Path(spec.origin).resolve().parent != (REPO / "build").resolve()  # `import build` is PyPA's
    assert Path(pipeline.__file__).resolve().parent == (REPO / "build").resolve()


def test_cli_reports_our_version_beside_pypa_build():
    ours = importlib.metadata.version("mnote-evidence")
    assert mnote_evidence.__version__ == ours
    for cmd in (["mnote-evidence", "--version"], [sys.executable, "-m", "mnote_evidence", "--version"]):
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd="/").stdout
        assert out.strip() == f"mnote-evidence, version {ours}"


def test_datasette_finds_the_plugin_under_our_namespace():
    eps = [ep for ep in importlib.metadata.entry_points(group="datasette") if ep.name == "mnote_evidence"]
    assert [ep.value for ep in eps] == ["mnote_evidence.functions.datasette_plugin"]
    assert eps[0].load().__name__ == "mnote_evidence.functions.datasette_plugin"
