"""`mnote-evidence search`: the CLI adapter over the same pure handler as `/-/evidence/search`, on a real
build."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

from click.testing import CliRunner

from mnote_evidence.build.cli.main import main
from mnote_evidence.build.pipeline import DB_NAME
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context, search
from tests.conftest import SPEC_PDF

LINK = re.compile(r"^   (file://\S+)$", re.M)


def cli(out: Path, *args: str):
    return CliRunner().invoke(main, ["search", *args, "--site", str(out)])


def test_prints_hits_with_links_that_open_the_anchor(stale_site):
    _, out = stale_site
    result = cli(out, "线程作用域")
    assert result.exit_code == 0, result.output
    assert SPEC_PDF in result.output and "p.3" in result.output
    links = LINK.findall(result.output)
    handler = search({"query": "线程作用域"}, Context(EvidenceDB(out / DB_NAME)))
    assert len(links) == len(handler["results"]) > 0
    for link, hit in zip(links, handler["results"]):
        parts = urlsplit(link)
        page = Path(unquote(parts.path))
        assert page.is_file() and page.is_relative_to(out.resolve())  # opens the built site's page...
        assert parts.fragment == hit["evidenceId"]  # ...at the hit's anchor, which the page carries
        assert f'id="{parts.fragment}"' in page.read_text("utf-8")


def test_json_is_the_handlers_response(stale_site):
    _, out = stale_site
    result = cli(
        out,
        "retention period",
        "--json",
        "--mode",
        "hybrid",
        "--top",
        "4",
        "--kind",
        "pdf",
        "--kind",
        "markdown",
        "--path",
        "Projects/",
    )
    assert result.exit_code == 0, result.output
    expected = search(
        {
            "query": "retention period",
            "mode": "hybrid",
            "topK": 4,
            "resourceKinds": ["pdf", "markdown"],
            "pathPrefix": "Projects/",
        },
        Context(EvidenceDB(out / DB_NAME)),
    )
    assert json.loads(result.output) == expected
    assert 0 < len(expected["results"]) <= 4
    assert all(r["source"]["resourcePath"].startswith("Projects/") for r in expected["results"])


def test_filters_reach_the_handler(stale_site):
    _, out = stale_site
    only_docx = json.loads(cli(out, "吡咯烷", "--kind", "office", "--json").output)["results"]
    assert only_docx and {r["source"]["resourceKind"] for r in only_docx} == {"office"}
    one = json.loads(cli(out, "吡咯烷", "--top", "1", "--json").output)["results"]
    assert len(one) == 1
    graph = cli(out, "retention period seven years", "--mode", "graph")
    expected = search(
        {"query": "retention period seven years", "mode": "graph"}, Context(EvidenceDB(out / DB_NAME))
    )
    vias = [f"via {r['via']['edgeType']})" for r in expected["results"]]
    assert graph.exit_code == 0 and vias and all(v in graph.output for v in vias)
    assert graph.output.count(", via ") == len(vias)


def test_bad_query_is_a_clear_error_without_traceback(stale_site):
    _, out = stale_site
    for query in ("   ", "!!!"):
        proc = subprocess.run(
            [sys.executable, "-m", "mnote_evidence", "search", query, "--site", str(out)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 1 and proc.stdout == ""
        assert (
            proc.stderr.startswith("Error: ")
            and "[bad_request]" in proc.stderr
            and "Traceback" not in proc.stderr
        )
    bad_top = cli(out, "x", "--top", "99")
    assert bad_top.exit_code == 2 and "1<=x<=50" in bad_top.output


def test_missing_site_says_how_to_build(tmp_path):
    result = CliRunner().invoke(main, ["search", "anything", "--site", str(tmp_path / "nowhere")])
    assert result.exit_code == 1 and "mnote-evidence build" in result.output


def test_snippets_total_pages_and_groups(stale_site):
    _, out = stale_site
    db = Context(EvidenceDB(out / DB_NAME))
    first = cli(out, "the", "--top", "2")
    answer = search({"query": "the", "topK": 2}, db)
    assert first.exit_code == 0 and first.output.startswith(
        f"{answer['total']} matches for 'the' (fts): results 1-2"
    )
    assert first.output.count("«the»") + first.output.count("«The»") >= 2  # the terms, marked (no tty: «»)
    assert "\x1b[" not in first.output and f"next page: --offset {answer['nextOffset']}" in first.output
    second = cli(out, "the", "--top", "2", "--offset", "2")
    assert second.exit_code == 0 and "results 3-4" in second.output and "\n3. " in second.output
    assert LINK.findall(second.output)[0] not in LINK.findall(first.output)
    grouped = cli(out, "the", "--group", "--per-file", "1", "--top", "3")
    body = search({"query": "the", "groupBy": "document", "perDocument": 1, "topK": 3}, db)
    assert grouped.exit_code == 0 and "files 1-3" in grouped.output
    for g in body["groups"]:
        assert f"== {g['resourcePath']} ({g['resourceKind']})" in grouped.output
        if g["more"]:
            assert f"{g['more']} more in this file: --file " in grouped.output
    assert json.loads(cli(out, "the", "--group", "--json").output)["groups"]
