"""`mnote-evidence verify`: the verify_quote function (`functions/handlers/verify.py`) on the command line.

Exit status: 0 when the cited place (or, without one, the index) holds the quote, 3 when it does
not (the best-matching block is printed), 1 for a bad request or a missing index.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mnote_evidence.build.cli.common import echo, echo_json, no_index, site_link
from mnote_evidence.build.core.defaults import DEFAULT_OUT

NOT_FOUND_EXIT = 3


@click.command("verify")
@click.argument("quote")
@click.option("--block", "block_id", help="The block id a citation names (its blockId or evidenceId).")
@click.option(
    "--url", "citation_url", help="A citation URL (…/file.pdf.html#blockId, #page-N or ?page=N&bbox=…)."
)
@click.option(
    "--site",
    "site_dir",
    default=DEFAULT_OUT,
    type=click.Path(file_okay=False, path_type=Path),
    show_default=True,
    help="The built site whose evidence.sqlite is checked.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verify_quote function's response as JSON.")
def verify_command(
    quote: str, block_id: str | None, citation_url: str | None, site_dir: Path, as_json: bool
) -> None:
    """Check that QUOTE is at the place a citation opens (--block or --url), or anywhere in the index;
    when it is not, print the block most like it, with a link. The same function as the HTTP route
    /-/evidence/verify.

    \b
      mnote-evidence verify "payment is due within 30 days" --url "Contracts/lease.pdf.html#b-abc…"
      mnote-evidence verify "会议纪要由秘书整理"
    """
    from mnote_evidence.functions.core.contracts import Context
    from mnote_evidence.functions.core.db import EvidenceDB
    from mnote_evidence.functions.core.errors import call
    from mnote_evidence.functions.handlers.verify import verify_quote

    if not (site_dir / "evidence.sqlite").is_file():
        raise click.ClickException(no_index(site_dir))
    request: dict = {"quote": quote}
    if block_id is not None:
        request["blockId"] = block_id
    if citation_url is not None:
        request["citationUrl"] = citation_url
    status, body = call(lambda r: verify_quote(r, Context(EvidenceDB(site_dir / "evidence.sqlite"))), request)
    if status != 200:
        raise click.ClickException(f"{body['error']['message']} [{body['error']['code']}]")
    if as_json:
        echo_json(body)
    else:
        echo(verify_text(body, site_dir))
    if not body["found"]:
        sys.exit(NOT_FOUND_EXIT)


def verify_text(body: dict, site_dir: Path) -> str:
    target = body["target"]
    path, block = target.get("resourcePath"), target.get("blockId")
    if path or block:
        where = f"in {path} (block {block})" if path and block else f"in {path or f'block {block}'}"
        head = {
            "found": f"found {where}",
            "found_elsewhere": f"not {where}, but found elsewhere",
            "not_found": f"not found {where}",
        }[body["verdict"]]
    else:  # no citation given: the whole index was searched
        head = "found in the index" if body["verdict"] != "not_found" else "not found anywhere in the index"
    lines = [head]
    match = body.get("match")
    if match:
        loc = match["source"]
        label = "there" if match["similarity"] == 1.0 else f"closest ({match['similarity']:.0%} of its words)"
        page = f" p.{loc['page']}" if "page" in loc else ""
        verified = (
            "" if match["quoteVerified"] else f" — not verified: {match.get('reason', 'quote_not_in_block')}"
        )
        lines += [
            f"{label}: {loc['resourcePath']}{page} ({match['precision']}){verified}",
            f"   {match['quote']}",
            f"   {site_link(site_dir, loc['openAction']['url'])}",
        ]
    return "\n".join(lines)
