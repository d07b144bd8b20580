"""Limits on the SQL a reader runs through Datasette over an evidence database (docs/security.md).

Every read connection of the plugin's `LiveDatabase` is set up by `limit`, so every route that runs a
reader's SQL (`?sql=`, `_where=`, `_search=`, canned queries, table views, facets, CSV) has them:
- one value holds at most `MAX_VALUE_BYTES` and a result row at most `MAX_COLUMNS` columns (SQLite's
  own limits: `randomblob(300000000)` is an error before anything is allocated);
- one statement's answer holds at most `MAX_ANSWER_BYTES` of values, counted row by row as Datasette
  fetches them; past that the query fails with a message (Datasette answers 400);
- time and rows: Datasette's `sql_time_limit_ms` and `max_returned_rows` (`DATASETTE_SETTINGS`, which
  `serve` passes);
- no server path: `pragma_database_list`'s `file` column reads as NULL (an authorizer).
"""

from __future__ import annotations

import sqlite3
import weakref

MAX_VALUE_BYTES = 2 << 20
MAX_COLUMNS = 64  # the widest table has 21 columns: a join of three fits
MAX_ANSWER_BYTES = 16 << 20
DATASETTE_SETTINGS = {"max_returned_rows": 1000, "sql_time_limit_ms": 1000}
HIDDEN_COLUMNS = frozenset({("pragma_database_list", "file")})  # the database's path on the server
TOO_LARGE = (
    f"the answer is too large (over {MAX_ANSWER_BYTES >> 20} MiB of values): select fewer rows or "
    "smaller values"
)


def limit(conn: sqlite3.Connection) -> sqlite3.Connection:
    """Set the limits on `conn` (its rows stay `sqlite3.Row`)."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
    conn.set_authorizer(_authorize)
    conn.row_factory = _counted_row
    return conn


def _authorize(action: int, arg1, arg2, _db, _source) -> int:
    if action == sqlite3.SQLITE_READ and (arg1, arg2) in HIDDEN_COLUMNS:
        return sqlite3.SQLITE_IGNORE  # read as NULL
    return sqlite3.SQLITE_OK


_USED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # cursor -> bytes fetched so far


def _counted_row(cursor: sqlite3.Cursor, row: tuple) -> sqlite3.Row:
    used = _USED.get(cursor, 0) + sum(len(v) if isinstance(v, str | bytes) else 8 for v in row)
    if used > MAX_ANSWER_BYTES:
        raise sqlite3.OperationalError(TOO_LARGE)
    _USED[cursor] = used
    return sqlite3.Row(cursor, row)
