"""The benchmark harness itself: the scale bench's notes are the same bytes every time, `bench/run`
lists every bench the README quotes, and its summaries say "?" rather than fail on a missing key."""

from __future__ import annotations

import argparse
import hashlib
import importlib.machinery
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from bench.scale import make_notes, note_path
from bench.summaries import g, scale

REPO = Path(__file__).resolve().parent.parent


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def test_generated_notes_are_deterministic_and_linked(tmp_path):
    a, b = make_notes(tmp_path / "a", 120), make_notes(tmp_path / "b", 120)
    assert a == b and digest(tmp_path / "a") == digest(tmp_path / "b")
    assert a["notes"] == 120 and 4_000 < a["bytes"] / 120 < 7_000  # ~5 KB per note
    text = (tmp_path / "a" / note_path(101)).read_text("utf-8")
    assert text.startswith("---\ntags: [t") and "## Part 7" in text
    assert re.search(r"[\u4e00-\u9fff]", text) and re.search(r"[a-z]{3}", text)
    targets = re.findall(
        r"\[\[(note-\d{6})\]\]", "".join(p.read_text("utf-8") for p in (tmp_path / "a").rglob("*.md"))
    )
    assert len(targets) == a["wikilinks"] > 0
    assert all((tmp_path / "a" / note_path(int(t[5:]))).exists() for t in targets)  # every link resolves
    make_notes(tmp_path / "c", 120, seed=12)
    assert digest(tmp_path / "a") != digest(tmp_path / "c")  # the seed is what varies it


def test_run_lists_every_bench_the_readme_quotes():
    done = subprocess.run(
        [sys.executable, str(REPO / "bench/run"), "--list"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
    readme = (REPO / "README.md").read_text("utf-8")
    quoted = set(re.findall(r"bench/(\w+)\.py", readme)) - {"real_workspace", "_util", "summaries"}
    assert quoted and quoted <= listed, quoted - listed
    assert {"scale", "pdf_provider", "site_render", "startup"} <= listed


def test_run_refuses_an_unknown_bench():
    done = subprocess.run(
        [sys.executable, str(REPO / "bench/run"), "--only", "nope"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 2 and "unknown bench" in done.stderr


def test_summaries_show_a_missing_figure_as_a_question_mark():
    assert g({"a": {"b": [1, 2]}}, "a.b.1") == 2 and g({"a": {}}, "a.b.1") == "?"
    row = {"notes": 100, "ref": "current", "commit": "abc", "full": {}, "edit": {}, "noop": {}}
    lines = scale({"results": [row]})
    assert any(line.startswith("| 100 | current abc | ?") for line in lines)


def test_summary_says_which_bench_failed_or_was_skipped():
    loader = importlib.machinery.SourceFileLoader("bench_run", str(REPO / "bench/run"))
    spec = importlib.util.spec_from_loader("bench_run", loader)
    run = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = run  # dataclasses look their module up there
    try:
        loader.exec_module(run)
    finally:
        del sys.modules["bench_run"]
    args = argparse.Namespace(quick=False, baseline_ref="abc123", summary_only=False)
    failed = {
        "command": "python bench/pdf_provider.py",
        "seconds": 1.0,
        "commit": "c0ffee",
        "started": "now",
        "machine_start": {"loadavg": [3.5, 1, 1]},
        "machine_end": {"loadavg": [4.5, 1, 1]},
        "exit": 1,
        "error": "liteparse missing",
    }
    text = run.summary(
        {"pdf_provider": failed, "startup": {"skipped": "bench/startup.py does not exist"}},
        args,
        90.0,
        "c0ffee",
    )
    assert "baseline ref abc123" in text and "total 1.5 min" in text
    assert "**Failed**" in text and "liteparse missing" in text and "load 3.5 → 4.5" in text
    assert "Skipped: bench/startup.py does not exist." in text
