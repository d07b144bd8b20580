"""`mnote-evidence`: the command group. Each command lives in its own module (`build/cli_<name>.py`),
imported only when that command runs or `--help` lists it, so start-up pays for click alone.

The command modules are thin shells over the library (flags in, library call, report out): they take
every default from the library, turn its typed errors (`build/errors.py`) into messages that say what
to do (`build/cli_common.py`), and draw progress from its `ProgressEvent`s. Only `build/cli*.py` know
click. Each command imports its heavy parts inside the command, so `ask --json` pays for neither the
build's parsers nor Datasette (tests/test_cli.py checks what `ask` imports).
"""

from __future__ import annotations

import importlib
import sqlite3

import click

from mnote_evidence import __version__

# name -> "module:attribute" of the click command (one registry for the commands; add a line to add one)
COMMANDS = {
    "build": "mnote_evidence.build.cli_build:build_command",
    "serve": "mnote_evidence.build.cli_serve:serve_command",
    "search": "mnote_evidence.build.cli_search:search_command",
    "ask": "mnote_evidence.build.cli_ask:ask_command",
    "verify": "mnote_evidence.build.cli_verify:verify_command",
    "mcp": "mnote_evidence.build.cli_mcp:mcp_command",
}


class _Commands(click.Group):
    """Commands loaded on use; every command's disk-full / permission error is one clear line, not a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        return getattr(importlib.import_module(module), attribute)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (OSError, sqlite3.OperationalError) as exc:
            from mnote_evidence.build.fsutil import storage_error_message

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
      mnote-evidence search 线程作用域          # hits with links that open the exact place
    """


if __name__ == "__main__":
    main()
