"""Datasette's own views over an `evidence.sqlite` that builds replace or update (SPEC §12 serve).

Datasette 0.65 caches one read connection per worker thread *by database name*
(`datasette.database.connections`), so re-registering a fresh `Database` under the
same name changes nothing: table views, `?sql=`, `?_search=`, facets and canned
queries would keep reading the old file. `LiveDatabase` replaces that cache with
`LiveConnections` (`functions/core/db.py`): every query leases its thread's connection after one
`stat` of the file, so a query that starts after a rebuild finished reads the new
build, on every thread, and idle connections to the replaced file are closed.
Datasette's per-database caches (hash, size, immutable table counts) are
forgotten on a replacement. URLs, names and routes stay as they are.

Invariant: `make_live` swaps the object in `datasette.databases` keeping its name,
route and position, and closes the connections the old object had opened (only
called before requests are served: from `asgi_wrapper` and `startup`).
"""

from __future__ import annotations

import asyncio
import collections

from datasette.database import Database

from mnote_evidence.build.core.sqlite_ro import connect_ro
from mnote_evidence.functions.core.db import LiveConnections


class LiveDatabase(Database):
    def __init__(self, ds, path: str, is_mutable: bool = False):
        super().__init__(ds, path=path, is_mutable=is_mutable)
        self.live = LiveConnections(path, self._open_read, on_replaced=self._forget)

    def _open_read(self):
        # read-only with locking, even for a file Datasette was told is immutable (`serve`): an incremental
        # build updates it in place, and immutable=1 would read pages of two states (build/core/sqlite_ro.py)
        conn = connect_ro(self.path, shared=True)
        conn.row_factory = None  # Datasette's own rows are tuples
        self.ds._prepare_connection(conn, self.name)  # plugins' prepare_connection (our escape_fts)
        return conn

    def _forget(self) -> None:
        self.cached_hash = self.cached_size = self._cached_table_counts = None

    async def execute_fn(self, fn):
        def in_thread():
            with self.live.lease() as conn:
                return fn(conn)

        if self.ds.executor is None:  # num_sql_threads=0
            return in_thread()
        return await asyncio.get_event_loop().run_in_executor(self.ds.executor, in_thread)

    async def table_counts(self, limit=10):
        generation = self.live.check()
        counts = await super().table_counts(limit)
        if self.live.check() != generation:  # counted across a replacement: do not keep them
            self._cached_table_counts = None
        return counts

    @property
    def cached_table_counts(self):
        self.live.check()
        return Database.cached_table_counts.fget(self)

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
    """Replace database `name` by a LiveDatabase on the same file, name, route and position."""
    old = datasette.databases[name]
    if isinstance(old, LiveDatabase):
        return old
    live = LiveDatabase(datasette, old.path, is_mutable=old.is_mutable)
    live.name, live.route = old.name, old.route
    datasette.databases = collections.OrderedDict(
        (key, live if key == name else db) for key, db in datasette.databases.items()
    )
    old.close()
    return live
