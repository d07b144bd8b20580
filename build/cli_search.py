"""`mnote-evidence search`: the search function (`functions/evidence.py`) with links into the site."""

from __future__ import annotations

import json
from pathlib import Path

import click

from mnote_evidence.build.cli_common import site_link
from mnote_evidence.build.defaults import DEFAULT_OUT
from mnote_evidence.functions.evidence import DEFAULT_TOP_K, KINDS, MAX_TOP_K, MODES


@click.command("search")
@click.argument("query")
@click.option("--site", "site_dir", default=DEFAULT_OUT, type=click.Path(file_okay=False, path_type=Path),
              show_default=True, help="The built site whose evidence.sqlite is searched.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS),
              help="Only these kinds of files (repeat the option for several).")
@click.option("--path", "path_prefix", help="Only files whose workspace path starts with this (e.g. 研究/).")
@click.option("--mode", type=click.Choice(MODES), default="fts", show_default=True,
              help="fts: full-text; graph: follow links from the hits; hybrid: both.")
@click.option("--top", "top_k", type=click.IntRange(1, MAX_TOP_K), default=DEFAULT_TOP_K, show_default=True)
@click.option("--include-furniture", is_flag=True,
              help="Also rank PDF page furniture (running headers, footers, page numbers).")
@click.option("--json", "as_json", is_flag=True, help="Print the search function's response as JSON.")
def search_command(query: str, site_dir: Path, kinds: tuple[str, ...], path_prefix: str | None, mode: str,
                   top_k: int, include_furniture: bool, as_json: bool) -> None:
    """Search the evidence index for QUERY (Chinese substrings and English words) and print
    each hit with a link that opens its exact place in the site: the same function as the
    HTTP route /-/evidence/search.

    \b
      mnote-evidence search 线程作用域
      mnote-evidence search "retention period" --kind pdf --top 3
    """
    from mnote_evidence.functions.db import EvidenceDB
    from mnote_evidence.functions.errors import call
    from mnote_evidence.functions.evidence import Context, search

    if not (site_dir / "evidence.sqlite").is_file():
        raise click.ClickException(f"{site_dir}/evidence.sqlite not found: run `mnote-evidence build WORKSPACE "
                                   f"--out {site_dir}` first, or point --site at a built site")
    request: dict = {"query": query, "mode": mode, "topK": top_k}
    if kinds:
        request["resourceKinds"] = list(kinds)
    if path_prefix:
        request["pathPrefix"] = path_prefix
    if include_furniture:
        request["includeFurniture"] = True
    status, body = call(lambda r: search(r, Context(EvidenceDB(site_dir / "evidence.sqlite"))), request)
    if status != 200:
        raise click.ClickException(f"{body['error']['message']} [{body['error']['code']}]")
    click.echo(json.dumps(body, ensure_ascii=False, indent=2) if as_json else search_text(body, site_dir))


def search_text(body: dict, site_dir: Path) -> str:
    """One entry per result: where (path, page / lines / paragraph, section), the quote, the link."""
    results = body["results"]
    lines = [f"{len(results)} result{'s' if len(results) != 1 else ''} for {body['query']!r} ({body['mode']})"]
    for n, r in enumerate(results, 1):
        loc = r["source"]
        first, last = loc.get("lineRange", (0, 0))
        place = (f"p.{loc['page']}" if "page" in loc else
                 (f"line {first}" if first == last else f"lines {first}-{last}") if "lineRange" in loc else
                 f"¶{loc['paragraphIndex']}" if "paragraphIndex" in loc else "")
        where = " · ".join(x for x in (loc["resourcePath"], place, " > ".join(loc.get("sectionPath", []))) if x)
        via = f", via {r['via']['edgeType']}" if "via" in r else ""
        lines += ["", f"{n}. {where} ({loc['precision']}{via})", f"   {r['quote']}",
                  f"   {site_link(site_dir, loc['openAction']['url'])}"]
    return "\n".join(lines)
