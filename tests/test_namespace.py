"""One import namespace: nothing of ours installs as a top-level `build` or `functions`.

PyPA's `build` is installed with the test extras, so every test run has it beside us. (Inside a
checkout the folder `build/` shadows it for a process started there, as any folder would.)"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import mnote_evidence
from mnote_evidence.build import pipeline

REPO = Path(__file__).resolve().parent.parent


def test_pypa_build_and_ours_coexist():
    code = "import build, mnote_evidence.build.pipeline as p; print(build.__file__); print(p.__file__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    pypa, ours = (Path(line).resolve() for line in out.stdout.split())
    assert pypa.parent != (REPO / "build").resolve()  # `import build` is PyPA's
    assert ours.parent == (REPO / "build").resolve() == Path(pipeline.__file__).resolve().parent


def test_cli_reports_our_version_beside_pypa_build():
    ours = importlib.metadata.version("mnote-evidence")
    assert mnote_evidence.__version__ == ours
    for cmd in (["mnote-evidence", "--version"], [sys.executable, "-m", "mnote_evidence", "--version"]):
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd="/").stdout
        assert out.strip() == f"mnote-evidence, version {ours}"


def test_datasette_finds_the_plugin_under_our_namespace():
    eps = [ep for ep in importlib.metadata.entry_points(group="datasette") if ep.name == "mnote_evidence"]
    assert [ep.value for ep in eps] == ["mnote_evidence.functions.adapters.datasette_plugin"]
    assert eps[0].load().__name__ == "mnote_evidence.functions.adapters.datasette_plugin"
