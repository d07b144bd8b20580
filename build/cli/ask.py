"""`mnote-evidence ask`: a LightRAG answer with citations that open the exact place."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mnote_evidence.build.cli.common import echo, echo_json, site_link
from mnote_evidence.build.core.defaults import DEFAULT_OUT


@click.command("ask")
@click.argument("question")
@click.option(
    "--site",
    "site_dir",
    default=DEFAULT_OUT,
    type=click.Path(file_okay=False, path_type=Path),
    show_default=True,
    help="The built site (its evidence.sqlite maps LightRAG's sources).",
)
@click.option("--lightrag-url", envvar="LIGHTRAG_URL", help="LightRAG server (default: LIGHTRAG_URL).")
@click.option(
    "--mode",
    type=click.Choice(["naive", "local", "global", "hybrid", "mix"]),
    default="mix",
    show_default=True,
)
@click.option("--top-k", type=click.IntRange(1, 50), default=10, show_default=True)
@click.option("--timeout", type=click.FloatRange(1, 600), default=30.0, show_default=True)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the whole answer as JSON (citations, and the matching passages when there is no answer).",
)
def ask_command(
    question: str,
    site_dir: Path,
    lightrag_url: str | None,
    mode: str,
    top_k: int,
    timeout: float,
    as_json: bool,
) -> None:
    """Ask LightRAG QUESTION and print the answer with citations you can click:
    each opens the exact page, box or paragraph in the built site."""
    from mnote_evidence.build.knowledge.lightrag import LightRagConfig
    from mnote_evidence.functions.core.contracts import Context
    from mnote_evidence.functions.core.db import EvidenceDB
    from mnote_evidence.functions.core.errors import call
    from mnote_evidence.functions.handlers.knowledge import ask

    if not (site_dir / "evidence.sqlite").is_file():
        raise click.ClickException(f"{site_dir}/evidence.sqlite not found: build the workspace first")
    ctx = Context(
        EvidenceDB(site_dir / "evidence.sqlite"), "", LightRagConfig.from_env(lightrag_url, timeout)
    )
    status, body = call(lambda r: ask(r, ctx), {"query": question, "mode": mode, "topK": top_k})
    # no answer: an error, LightRAG unreachable, or its answer failed after the retrieval worked
    failed = status != 200 or not body.get("ok") or body.get("answer") is None
    if as_json:
        echo_json(body)
    elif failed:
        code = body.get("error", {}).get("code") or body.get("degradedReason")
        message = body.get("error", {}).get("message") or body.get("message") or ""
        if status == 200:  # LightRAG could not answer: the passages of the notes that match the question
            echo(local_passages(body, question, site_dir))
        raise click.ClickException(f"no answer [{code}]: {message}")
    else:
        echo(ask_text(body, site_dir))
    if failed:
        sys.exit(1)


def local_passages(body: dict, question: str, site_dir: Path) -> str:
    """The answer's `passages` (evidence search over the question) as `search QUESTION` prints them."""
    from mnote_evidence.build.cli.search import search_text

    found = body.get("passages") or {}
    if not found.get("results"):
        return "No passage of the notes matches the question either."
    page = {**found, "query": question, "mode": "fts", "offset": 0}
    return "Passages of the notes that match the question:\n" + search_text(page, site_dir)


def ask_text(body: dict, site_dir: Path) -> str:
    """The answer with [id] badges, then one line per citation with a file:// link into the site."""
    answer = "".join(s.get("text") or f"[{s['citationId']}]" for s in body.get("segments", []))
    lines = [answer.strip() or "(no answer text)", ""]
    for c in body["citations"]:
        where = " · ".join(
            x
            for x in (c["sourcePath"], f"p.{c['page']}" if "page" in c else "", " > ".join(c["headingPath"]))
            if x
        )
        lines.append(f"[{c['citationId']}] {where} ({c['locatorPrecision']})")
        lines.append(f"    {c['displayQuote'][:160]}")
        lines.append(f"    {site_link(site_dir, c['citationUrl'])}")
    return "\n".join(lines)
