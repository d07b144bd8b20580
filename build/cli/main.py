"""`mnote-evidence`: the command group. Each command lives in its own module (`build/cli/<name>.py`),
imported only when that command runs (or its own `--help` is asked for): `--help` lists the commands
from the registry's one-line summaries (tests/test_cli.py checks them against each command).

The command modules are thin shells over the library: they take every default from it, turn its
typed errors into messages that say what to do (`cli/common.py`), and draw progress from its
`ProgressEvent`s. Only `build/cli/` knows click; each command imports its heavy parts inside itself.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click

from mnote_evidence import __version__


class Entry(NamedTuple):
    target: str
    summary: str  # its help's first sentence (what click would list), so `--help` imports no command


COMMANDS = {
    "build": Entry(
        "mnote_evidence.build.cli.build:build_command",
        "Parse WORKSPACE (a folder of notes) into sidecars, OUT/evidence.sqlite and a static site in OUT "
        "(open OUT/index.html, or serve OUT from any static host).",
    ),
    "serve": Entry(
        "mnote_evidence.build.cli.serve:serve_command",
        "Serve SITE_DIR (the output of `build`): the static site, Datasette over its evidence.sqlite, "
        "and the /-/evidence/search|read|open endpoints, on one URL.",
    ),
    "search": Entry(
        "mnote_evidence.build.cli.search:search_command",
        "Search the evidence index for QUERY (Chinese substrings and English words) and print each hit "
        "with a link that opens its exact place in the site: the same function as the HTTP route "
        "/-/evidence/search.",
    ),
    "ask": Entry(
        "mnote_evidence.build.cli.ask:ask_command",
        "Ask LightRAG QUESTION and print the answer with citations you can click: each opens the exact "
        "page, box or paragraph in the built site.",
    ),
    "verify": Entry(
        "mnote_evidence.build.cli.verify:verify_command",
        "Check that QUOTE is at the place a citation opens (--block or --url), or anywhere in the "
        "index; when it is not, print the block most like it, with a link.",
    ),
    "mcp": Entry(
        "mnote_evidence.build.cli.mcp:mcp_command",
        "Serve SITE_DIR's evidence to an MCP client (an agent): tools evidence_search, evidence_read, "
        "evidence_open, verify_quote, knowledge_query, knowledge_status, and resources "
        "evidence://block/<id>.",
    ),
}


class _Commands(click.Group):
    """Commands loaded on use; every command's disk-full / permission error is one clear line, not a
    traceback, and every error message is written with its control characters shown (`printable`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].target.split(":")
        return getattr(importlib.import_module(module), attribute)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """click's, with the command a mistyped name is closest to (`bulid`: "Did you mean 'build'?")."""
        name = args[0] if args else ""
        if name in COMMANDS or name.startswith("-"):
            return super().resolve_command(ctx, args)
        import difflib

        close = difflib.get_close_matches(name, list(COMMANDS), n=1)
        ctx.fail(f"No such command '{name}'." + (f" Did you mean '{close[0]}'?" if close else ""))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of `--help`, as click writes it, from the summaries (no command imported)."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [
            (name, click.utils.make_default_short_help(entry.summary, limit))
            for name, entry in COMMANDS.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:  # its message may quote a file name or a server's words
            from mnote_evidence.build.core.terminal import printable

            exc.message = printable(exc.message)
            raise
        except Exception as exc:  # OSError, sqlite3.OperationalError (sqlite3 is not imported for `--help`)
            from mnote_evidence.build.core.fsutil import storage_error_message

            message = storage_error_message(exc)
            if message is None:
                raise
            raise click.ClickException(message) from None


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mnote-evidence")
def main() -> None:
    """Trace every fact in a folder of Markdown notes and attachments to the exact
    place it came from: PDF page and box, Word paragraph, Markdown lines.

    \b
    Typical use:
      mnote-evidence build ~/notes            # parse + index into ./_site/
      mnote-evidence build ~/notes --json     # machine-readable summary
      mnote-evidence search "invoice total"   # hits with links that open the exact place
    """


if __name__ == "__main__":
    main()
