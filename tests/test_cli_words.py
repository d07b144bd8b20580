"""The command line speaks the user's words: help examples of its own (none of the sample workspace's
text), "did you mean" for a mistyped command, the kinds of files by the names the site shows them
under, and `verify`'s verdicts in plain English. Through click's runner (the real commands)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from click.testing import CliRunner

from mnote_evidence.build.cli.main import COMMANDS, main
from mnote_evidence.build.cli.verify import verify_text
from tests.conftest import FIXTURES, REPO

CJK_RUN = re.compile(r"[\u3400-\u9fff]{2,}")
QUOTED = re.compile(r'"([^"]{4,})"')


def fixture_text() -> str:
    """Everything the sample workspace says: its tracked files (names and bytes), the generator that
    writes its PDFs and Word files, and the facts the tests check."""
    names = subprocess.run(
        ["git", "-C", str(FIXTURES), "ls-files", "-z", "--", "."], capture_output=True, check=True
    ).stdout.decode("utf-8")
    parts = [names]
    for rel in filter(None, names.split("\0")):
        parts.append((FIXTURES / rel).read_bytes().decode("utf-8", "ignore"))
    for extra in ("tests/make_fixtures.py", "tests/fixture_facts.json"):
        parts.append((REPO / extra).read_text("utf-8"))
    return "\n".join(parts).lower()


def helps() -> dict[str, str]:
    runner = CliRunner()
    out = {"": runner.invoke(main, ["--help"]).output}
    for name in COMMANDS:
        out[name] = runner.invoke(main, [name, "--help"]).output
    return out


def test_help_examples_use_no_sample_workspace_text():
    corpus = fixture_text()
    leaks = {
        name: sorted({w for w in CJK_RUN.findall(text) + QUOTED.findall(text) if w.lower() in corpus})
        for name, text in helps().items()
    }
    assert not any(leaks.values()), leaks


def test_a_mistyped_command_gets_a_suggestion():
    result = CliRunner().invoke(main, ["bulid", "notes"])
    assert result.exit_code == 2
    assert "No such command 'bulid'" in result.output and "Did you mean 'build'?" in result.output
    far = CliRunner().invoke(main, ["xyzzy"])
    assert far.exit_code == 2 and "Did you mean" not in far.output


@pytest.mark.parametrize("word", ["word", "docx", "Word", "office"])
def test_the_kind_of_word_files_has_the_site_s_names(built, word):
    _, out, _ = built
    result = CliRunner().invoke(main, ["search", "溶剂", "--site", str(out), "--kind", word, "--json"])
    assert result.exit_code == 0, result.output
    kinds = [r["source"]["resourceKind"] for r in json.loads(result.stdout)["results"]]
    assert kinds and set(kinds) == {"office"}, kinds


def test_kind_help_lists_the_site_s_names():
    text = CliRunner().invoke(main, ["search", "--help"]).output
    assert "word" in text and "docx" in text and "notes" in text


def test_verify_says_where_in_plain_english():
    anywhere = {"verdict": "found", "target": {}, "found": True}
    assert verify_text(anywhere, REPO).splitlines()[0] == "found in the index"
    missing = {"verdict": "not_found", "target": {}, "found": False}
    assert verify_text(missing, REPO).splitlines()[0] == "not found anywhere in the index"
    cited = {"verdict": "found_elsewhere", "target": {"resourcePath": "a.pdf", "blockId": "b-1"}}
    assert verify_text(cited, REPO).splitlines()[0] == "not in a.pdf (block b-1), but found elsewhere"
    assert not any("at the index" in verify_text(b, REPO) for b in (anywhere, missing, cited))
