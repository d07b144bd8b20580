"""The product speaks of itself in the present: history lives in CHANGELOG.md and git, nowhere else.

Scanned: README.md, docs/ (except SPEC.md, the contract), and every source file of build/,
functions/, tests/, bench/, site_templates/, mnote_evidence/. Two kinds of narration fail:
work rounds and ticket numbers (the word "session" or "issue" and a number), and commit ids of this
repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROUNDS = re.compile(r"\b(session|issue)s? #?[0-9]+", re.I)
HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
SOURCES = ("build", "functions", "tests", "bench", "site_templates", "mnote_evidence")
SUFFIXES = {".py", ".md", ".html", ".js", ".css", ".json", ".toml", ""}
SKIP = {REPO / "docs/SPEC.md", REPO / "CHANGELOG.md", Path(__file__).resolve()}


def scanned() -> list[Path]:
    """The files of the checkout (tracked, or new and not ignored: never a bench's work copy)."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
    )
    if listed.returncode == 0:
        files = [REPO / line for line in listed.stdout.splitlines()]
    else:
        files = [p for p in REPO.rglob("*") if ".git" not in p.parts]
    keep = []
    for p in files:
        rel = p.relative_to(REPO)
        top = rel.parts[0]
        doc = rel.as_posix() == "README.md" or (top == "docs" and p.suffix == ".md")
        code = (
            top in SOURCES
            and p.suffix in SUFFIXES
            and "real_documents" not in rel.parts
            and rel.parts[:2] != ("bench", "results")
            and "__pycache__" not in rel.parts
        )
        if (doc or code) and p.is_file() and p.resolve() not in SKIP:
            keep.append(p)
    return keep


def commit_prefixes() -> set[str]:
    """The 7-character prefixes of every commit id in this clone's history."""
    out = subprocess.run(
        ["git", "-C", str(REPO), "log", "--all", "--format=%H"], capture_output=True, text=True
    )
    if out.returncode != 0:
        pytest.skip("not a git clone: no commit ids to look for")
    return {line[:7] for line in out.stdout.split()}


def narration(text: str, commits: set[str]) -> list[str]:
    found = [m[0] for m in ROUNDS.finditer(text)]
    found += [m[0] for m in HEX.finditer(text) if m[0][:7] in commits]
    return found


def test_the_check_finds_narration():
    commits = {"54804f5"}
    rounds, ticket = "session" + " 9", "issue" + " #17"  # spelled apart: this file is scanned too
    assert narration(f"measured in {rounds} ({ticket}) against 54804f5c", commits) == [
        rounds,
        ticket,
        "54804f5c",
    ]
    assert narration("page 9 of issue.pdf; sha 0123abc", commits) == []


def test_nothing_narrates_its_history():
    commits = commit_prefixes()
    offenders = {}
    for path in scanned():
        text = path.read_text("utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            if hits := narration(line, commits):
                offenders[f"{path.relative_to(REPO)}:{lineno}"] = hits
    assert not offenders, f"{len(offenders)} lines narrate history (move it to CHANGELOG.md): {offenders}"
