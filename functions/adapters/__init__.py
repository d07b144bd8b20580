"""Thin adapters over the handlers: Datasette, ASGI, Lambda, MCP, serve."""
