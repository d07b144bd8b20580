"""The suite's own rules (tests/conftest.py): fixtures come from tracked files only; a missing system
tool skips with an install hint, except under CI=true where it fails."""

from __future__ import annotations

import subprocess

import pytest

import tests.conftest as conftest
from tests.conftest import FIXTURES, copy_workspace, require_tool, tracked_fixture_files


def test_copy_is_exactly_the_tracked_sample(tmp_path):
    tracked = subprocess.run(["git", "-C", str(FIXTURES), "ls-files", "-z", "--", "."], capture_output=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout: the fallback is tested below")
    expected = sorted(p for p in tracked.stdout.decode("utf-8").split("\0") if p)
    assert sorted(tracked_fixture_files()) == expected
    dest = copy_workspace(tmp_path / "ws")
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == expected


def test_without_git_the_generated_folders_are_left_out(tmp_path, monkeypatch):
    """A tree git does not know (an sdist, a copy) with a build's leftovers in it."""
    fake = tmp_path / "fixtures"
    for rel in (
        "Note.md",
        "Note.assets/a.pdf",
        "Note.ocr/a.pdf.parse.md",
        ".mnote/sidecars/Note.md.source-map.json",
        ".mnote/ocr-cache/ab/cd.json",
        "deep/Other.ocr/x.png.ocr.md",
        "deep/Other.md",
    ):
        (fake / rel).parent.mkdir(parents=True, exist_ok=True)
        (fake / rel).write_text(rel, "utf-8")
    monkeypatch.setattr(conftest, "FIXTURES", fake)
    assert sorted(tracked_fixture_files()) == ["Note.assets/a.pdf", "Note.md", "deep/Other.md"]
    dest = copy_workspace(tmp_path / "ws")
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "Note.assets/a.pdf",
        "Note.md",
        "deep/Other.md",
    ]


def test_a_present_tool_is_found():
    assert require_tool("sh", "apt-get install dash").endswith("/sh")


def test_a_missing_tool_skips_with_its_install_hint(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install no-such-tool"):
        require_tool(
            "no-such-tool-mnote", "apt-get install no-such-tool", path="/nonexistent/no-such-tool-mnote"
        )


def test_a_missing_tool_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required when CI=true"):
        require_tool("no-such-tool-mnote", "apt-get install no-such-tool")
