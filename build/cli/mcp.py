"""`mnote-evidence mcp`: the query functions as an MCP server for agents
(`functions/adapters/mcp_server.py`).
"""

from __future__ import annotations

from pathlib import Path

import click

from mnote_evidence.build.core.defaults import DEFAULT_OUT

INSTALL_HINT = "the MCP server needs the `mcp` package: pip install 'mnote-evidence[mcp]'"


@click.command("mcp")
@click.argument("site_dir", default=DEFAULT_OUT, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--http", "http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 (at /mcp) instead of stdio."
)
@click.option(
    "--port", "-p", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port for --http."
)
@click.option(
    "--site-url",
    help="The site's public URL (https://…/): citation and open links become absolute. "
    "Default: site-relative links.",
)
@click.option(
    "--lightrag-url",
    envvar="LIGHTRAG_URL",
    help="LightRAG server for knowledge_query / knowledge_status "
    "(default: LIGHTRAG_URL; key from LIGHTRAG_API_KEY).",
)
@click.option("--lightrag-timeout", type=click.FloatRange(1, 600), default=30.0, show_default=True)
def mcp_command(
    site_dir: Path,
    http: bool,
    port: int,
    site_url: str | None,
    lightrag_url: str | None,
    lightrag_timeout: float,
) -> None:
    """Serve SITE_DIR's evidence to an MCP client (an agent): tools evidence_search,
    evidence_read, evidence_open, verify_quote, knowledge_query, knowledge_status, and
    resources evidence://block/<id>. Every answer links to the exact place in the site.

    \b
      mnote-evidence mcp _site                                  # stdio (an MCP client starts it)
      mnote-evidence mcp _site --http --port 8765               # http://127.0.0.1:8765/mcp
      mnote-evidence mcp _site --site-url https://notes.example.org/
    """
    if not (site_dir / "evidence.sqlite").is_file():
        from mnote_evidence.build.cli.common import no_index

        raise click.ClickException(no_index(site_dir))
    try:
        from mnote_evidence.functions.adapters import mcp_server
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("mcp", "mcp_types"):
            raise click.ClickException(INSTALL_HINT) from None
        raise
    from mnote_evidence.functions.adapters.serve import ServeError

    try:
        ctx = mcp_server.context(site_dir, site_url, lightrag_url, lightrag_timeout)
        if http:
            mcp_server.serve_http(ctx, "127.0.0.1", port)
        else:
            mcp_server.serve_stdio(ctx)
    except (mcp_server.McpSetupError, ServeError) as exc:
        raise click.ClickException(str(exc)) from None
