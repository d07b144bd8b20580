"""`mnote-evidence search`: the search function (`functions/handlers/evidence.py`) with links into the site.

Each hit shows its snippet with the query's terms marked: bold (ANSI) on a terminal, «…» otherwise
(a pipe, a file, `NO_COLOR`); the total; the page's range and how to get the next one; grouped by
file with `--group`. `--json` prints the handler's response unchanged (as JSON with no control
character raw). Control characters in notes and file names are shown, never obeyed.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click

from mnote_evidence.build.cli.common import echo_json, no_index, site_link
from mnote_evidence.build.core.defaults import DEFAULT_OUT
from mnote_evidence.build.core.terminal import printable
from mnote_evidence.functions.handlers.evidence import (
    DEFAULT_PER_DOCUMENT,
    DEFAULT_TOP_K,
    KINDS,
    MAX_PER_DOCUMENT,
    MAX_TOP_K,
    MODES,
)
from mnote_evidence.functions.search.results import MAX_DEPTH, SOME_WORDS, across, where
from mnote_evidence.functions.search.snippet import marked

# the kinds of files by every name they go by: the index's (KINDS) and the site's (its kind menu)
KIND_NAMES = {
    **{kind: kind for kind in KINDS},
    "notes": "markdown",
    "images": "image",
    "word": "office",
    "docx": "office",
}


@click.command("search")
@click.argument("query")
@click.option(
    "--site",
    "site_dir",
    default=DEFAULT_OUT,
    type=click.Path(file_okay=False, path_type=Path),
    show_default=True,
    help="The built site whose evidence.sqlite is searched.",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(list(KIND_NAMES), case_sensitive=False),
    callback=lambda _ctx, _param, names: tuple(dict.fromkeys(KIND_NAMES[n.lower()] for n in names)),
    help="Only these kinds of files, by the site's names too: notes (markdown), pdf, images (image), "
    "word or docx (office). Repeat the option for several.",
)
@click.option(
    "--path", "path_prefix", help="Only files whose workspace path starts with this (e.g. Projects/)."
)
@click.option(
    "--folder", help="Only files in this folder or below (Projects matches Projects/…, never Projects2/…)."
)
@click.option("--file", "resource_path", help="Only this file (workspace path): all its matches.")
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="fts",
    show_default=True,
    help="fts: full-text; graph: follow links from the hits; hybrid: both.",
)
@click.option(
    "--top",
    "top_k",
    type=click.IntRange(1, MAX_TOP_K),
    default=DEFAULT_TOP_K,
    show_default=True,
    help="Results per page (files per page with --group).",
)
@click.option(
    "--offset",
    type=click.IntRange(0, MAX_DEPTH - 1),
    default=0,
    show_default=True,
    help="Skip this many results (files with --group): the next page's offset is printed.",
)
@click.option(
    "--group", is_flag=True, help="Group by file: each file's best blocks, and how many more it has."
)
@click.option(
    "--per-file",
    "per_document",
    type=click.IntRange(1, MAX_PER_DOCUMENT),
    default=DEFAULT_PER_DOCUMENT,
    show_default=True,
    help="Blocks shown per file with --group.",
)
@click.option(
    "--include-furniture",
    is_flag=True,
    help="Also rank PDF page furniture (running headers, footers, page numbers).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the search function's response as JSON.")
def search_command(
    query: str,
    site_dir: Path,
    kinds: tuple[str, ...],
    path_prefix: str | None,
    folder: str | None,
    resource_path: str | None,
    mode: str,
    top_k: int,
    offset: int,
    group: bool,
    per_document: int,
    include_furniture: bool,
    as_json: bool,
) -> None:
    """Search the evidence index for QUERY (Chinese substrings and English words) and print
    each hit with a link that opens its exact place in the site: the same function as the
    HTTP route /-/evidence/search.

    \b
      mnote-evidence search 会议纪要
      mnote-evidence search "invoice total" --kind pdf --top 3
      mnote-evidence search 报销 --group --folder Projects
      mnote-evidence search 报销 --offset 10
    """
    from mnote_evidence.functions.core.db import EvidenceDB
    from mnote_evidence.functions.core.errors import call
    from mnote_evidence.functions.handlers.evidence import Context, search

    if not (site_dir / "evidence.sqlite").is_file():
        raise click.ClickException(no_index(site_dir))
    request: dict = {"query": query, "mode": mode, "topK": top_k}
    if kinds:
        request["resourceKinds"] = list(kinds)
    optional = {
        "pathPrefix": path_prefix,
        "folder": folder,
        "resourcePath": resource_path,
        "offset": offset or None,
    }
    request.update({k: v for k, v in optional.items() if v})
    if group:
        request.update(groupBy="document", perDocument=per_document)
    if include_furniture:
        request["includeFurniture"] = True
    status, body = call(lambda r: search(r, Context(EvidenceDB(site_dir / "evidence.sqlite"))), request)
    if status != 200:
        raise click.ClickException(f"{body['error']['message']} [{body['error']['code']}]")
    if as_json:
        echo_json(body)
    else:
        click.echo(search_text(body, site_dir, color=_use_color()))


def _use_color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def search_text(body: dict, site_dir: Path, color: bool = False) -> str:
    """The total and page, then one entry per result: where (path, page / lines / paragraph, section),
    the snippet with the terms marked, the link; grouped by file when the answer has groups. Printable:
    control characters from the index are shown, never obeyed (`printable`)."""
    results = body["results"]
    lines = [_heading(body)]
    groups = body.get("groups") or [{"first": 0, "count": len(results)}]
    for g in groups:
        if "resourcePath" in g:
            lines += ["", f"== {g['resourcePath']} ({g['resourceKind']})"]
        for n in range(g["first"], g["first"] + g["count"]):
            lines += [""] + _entry(
                results[n], site_dir, color, n + 1 + (0 if "groups" in body else body["offset"])
            )
        if g.get("more"):
            more = f"{g['more']}{'+' if g['moreIsLowerBound'] else ''}"
            lines += [f"   … {more} more in this file: --file {shlex.quote(g['expand']['resourcePath'])}"]
    if "nextOffset" in body:
        lines += ["", f"next page: --offset {body['nextOffset']}"]
    return "\n".join(line if isinstance(line, _Shown) else printable(line) for line in lines)


class _Shown(str):
    """A line already printable: its snippet's text was escaped piece by piece, so the highlight codes
    around the pieces are the only control characters in it."""


def _heading(body: dict) -> str:
    total = f"{body['total']}{'+' if body['totalIsLowerBound'] else ''}"
    unit = "match" if body["total"] == 1 and not body["totalIsLowerBound"] else "matches"
    shown, first = len(body["results"]), body["offset"] + 1
    if "groups" in body:
        files = len(body["groups"])
        page = f"files {first}-{first + files - 1}" if files else "no files"
    else:
        page = f"results {first}-{first + shown - 1}" if shown else "no results"
    some = f"\n({SOME_WORDS})" if body.get("matchMode") == "any" and shown else ""
    return f"{total} {unit} for {body['query']!r} ({body['mode']}): {page}{some}"


def _entry(r: dict, site_dir: Path, color: bool, n: int) -> list[str]:
    loc = r["source"]
    via = f", via {r['via']['edgeType']}" if "via" in r else ""
    marks = ("\x1b[1m", "\x1b[22m") if color else ("«", "»")
    spread = across(r)
    return [
        f"{n}. {where(loc)} ({loc['precision']}{via})",
        *([f"   ({spread})"] if spread else []),
        _Shown(f"   {marked(r['snippet'], *marks, escape=printable)}"),
        f"   {site_link(site_dir, loc['openAction']['url'])}",
    ]
