"""What the plugin does differently on Datasette 0.65 and 1.0, in one place (SPEC §12 serve).

Datasette 0.65 takes metadata, canned queries and CSRF exemptions from plugin hooks
(`get_metadata`, `canned_queries`, `skip_csrf`); 1.0 removes those hooks: a plugin writes
metadata with `set_*_metadata` and stored queries with `add_query` from `startup`, and CSRF
is judged by the `Sec-Fetch-Site` and `Origin` headers. Invariant: `V1` alone decides which
mechanism is used, and everything here goes through Datasette's public API, except the
table configuration on 1.0 (see `publish`).
"""

from __future__ import annotations

import sqlite3

from datasette.version import __version__

V1 = int(__version__.split(".")[0]) >= 1
TABLE_CONFIG_KEYS = ("sort", "sort_desc", "fts_table", "fts_pk", "hidden")


def prepare(conn: sqlite3.Connection, datasette, database: str) -> None:
    """Set up a read connection of our own as Datasette sets up its own ones."""
    from datasette.plugins import pm  # importing it loads the plugins, this module among them

    conn.row_factory = sqlite3.Row
    conn.text_factory = lambda b: str(b, "utf-8", "replace")
    cache_kb = datasette.setting("cache_size_kb")
    if cache_kb:
        conn.execute(f"PRAGMA cache_size=-{int(cache_kb)}")
    pm.hook.prepare_connection(conn=conn, database=database, datasette=datasette)


def jinja_environment(datasette, request):
    """The Jinja environment Datasette renders `request` with (1.0 lets plugins vary it per request)."""
    if V1:
        return datasette.get_jinja_environment(request)
    return datasette.jinja_env


def metadata_v0(database: str, description: str, tables: dict) -> dict:
    """The `get_metadata` answer on 0.65: descriptions and table configuration together."""
    return {"databases": {database: {"description": description, "tables": tables}}}


async def publish(datasette, database: str, description: str, tables: dict, queries: dict) -> None:
    """On 1.0, at startup: descriptions, table configuration and stored queries, none of them
    replacing what the user configured.

    Datasette 1.0 reads table configuration (`fts_table` of a view, `hidden`, `sort`) from
    `datasette.config` at every request and has no method to add to it, so the defaults are
    merged there."""
    if not (await datasette.get_database_metadata(database)).get("description"):
        await datasette.set_database_metadata(database, "description", description)
    configured = datasette.config.setdefault("databases", {}).setdefault(database, {})
    for table, meta in tables.items():
        if "description" in meta and not (await datasette.get_resource_metadata(database, table)).get(
            "description"
        ):
            await datasette.set_resource_metadata(database, table, "description", meta["description"])
        table_config = configured.setdefault("tables", {}).setdefault(table, {})
        for key in TABLE_CONFIG_KEYS:
            if key in meta:
                table_config.setdefault(key, meta[key])
    for name, query in queries.items():
        if await datasette.get_query(database, name) is None:
            await datasette.add_query(
                database,
                name,
                query["sql"],
                title=query.get("title"),
                description=query.get("description"),
                is_trusted=True,  # as 0.65 runs canned queries: with view-query alone
            )
