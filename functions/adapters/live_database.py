"""Datasette's own views over an `evidence.sqlite` that builds replace or update (SPEC §12 serve).

Datasette keeps one read connection per worker thread open for the life of its
`Database`, so after a build renames a new `evidence.sqlite` into place its table views,
`?sql=`, `?_search=`, facets and canned queries would keep reading the old file.
`LiveDatabase` routes every read through `LiveConnections` (`functions/core/db.py`): each
query leases its thread's connection after one `stat` of the file, so a query that starts
after a rebuild finished reads the new build, on every thread, and idle connections to the
replaced file are closed. Its hash, size and immutable table counts are forgotten on a
replacement. Name and route stay as they are. Each connection carries the limits on a reader's SQL
(`functions/adapters/sql_limits.py`).

Every read passes `execute_fn` on Datasette 0.65 and `_execute_fn` on 1.0 (where `execute`
no longer calls `execute_fn`); that one method is overridden, chosen by version.
Invariant: `make_live` replaces the database through `remove_database` and `add_database`
(it moves to the end of `datasette.databases`) and closes the connections the old object
had opened; it runs before requests are served (from `asgi_wrapper` and `startup`).
"""

from __future__ import annotations

import asyncio

from datasette.database import Database

from mnote_evidence.build.core.sqlite_ro import connect_ro
from mnote_evidence.functions.adapters.datasette_compat import V1, prepare
from mnote_evidence.functions.adapters.sql_limits import limit
from mnote_evidence.functions.core.db import LiveConnections


class LiveDatabase(Database):
    def __init__(self, ds, path: str, is_mutable: bool = False):
        super().__init__(ds, path=path, is_mutable=is_mutable)
        self.live = LiveConnections(path, self._open_read, on_replaced=self._forget)
        self._live_counts: tuple[int, dict] | None = None  # (generation, table counts)

    def _open_read(self):
        # read-only with locking, even for a file Datasette was told is immutable (`serve`): an incremental
        # build updates it in place, and immutable=1 would read pages of two states (build/core/sqlite_ro.py)
        conn = connect_ro(self.path, shared=True)
        prepare(conn, self.ds, self.name)  # plugins' prepare_connection (our escape_fts)
        return limit(conn)  # a reader's SQL runs here: bounded bytes, no server path

    def _forget(self) -> None:
        self.cached_hash = self.cached_size = None
        self._live_counts = None

    async def _leased(self, fn):
        def in_thread():
            with self.live.lease() as conn:
                return fn(conn)

        if self.ds.executor is None:  # num_sql_threads=0
            return in_thread()
        return await asyncio.get_running_loop().run_in_executor(self.ds.executor, in_thread)

    if V1:
        _execute_fn = _leased
    else:
        execute_fn = _leased

    async def table_counts(self, limit=10):
        generation = self.live.check()
        counts = await super().table_counts(limit)
        if not self.is_mutable and self.live.check() == generation:  # not counted across a replacement
            self._live_counts = (generation, counts)
        return counts

    @property
    def cached_table_counts(self):
        generation = self.live.check()
        if self._live_counts is not None and self._live_counts[0] == generation:
            return self._live_counts[1]
        return None

    @property
    def hash(self):
        self.live.check()
        return Database.hash.fget(self)

    @property
    def size(self):
        self.live.check()
        return Database.size.fget(self)

    def close(self):
        self.live.close_all()
        super().close()


def make_live(datasette, name: str) -> LiveDatabase:
    """Replace database `name` by a LiveDatabase on the same file, name and route."""
    old = datasette.databases[name]
    if isinstance(old, LiveDatabase):
        return old
    live = LiveDatabase(datasette, old.path, is_mutable=old.is_mutable)
    route = old.route
    datasette.remove_database(name)
    old.close()
    return datasette.add_database(live, name=name, route=route)
