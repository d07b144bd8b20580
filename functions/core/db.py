"""Read-only connections to `evidence.sqlite` that follow atomic replacement (SPEC §8, §12 serve).

A build replaces the file by rename, or (an incremental build) updates it in place
inside one transaction. Connections are never `immutable=1`: SQLite's shared lock
makes each query read the state before or after a commit, and `EvidenceDB.session` makes a whole
request one read transaction, so it reads one state. `LiveConnections` keeps one
connection per thread and checks the file's identity (inode and mtime,
`build/core/sqlite_ro.py` `file_identity`: one `stat`) every time a connection is leased,
and rolls back a killed build's hot journal first (`recover_hot_journal`: one more `stat`).
Invariants:
- a lease taken after a rename completed reads the new file, on every thread;
- a connection is never closed while leased (an in-flight query keeps reading the
  complete old file it opened); it is closed when released, once replaced;
- after a replacement every idle connection to the old file is closed by the first
  lease that notices it (or by `check()`), so no descriptor stays on a deleted file;
- identity checks happen under one lock, so two threads can never disagree about
  which file is current (no flip-flop between generations).
`EvidenceDB` (the handlers' view) and the Datasette plugin's `LiveDatabase` both
use it. No request can observe a half-written database.

A database from a build of another schema or segmentation version is refused
when the handlers' connection opens (`IndexIncompatible`, answered as a 503 that
says to rebuild), never read into a wrong answer or a traceback (`build/versions.py`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from mnote_evidence.build.core.sqlite_ro import connect_ro, file_identity, recover_hot_journal, unavailable
from mnote_evidence.build.index.meta import REBUILD_HINT, read_meta, reader_problem
from mnote_evidence.functions.core.errors import UNAVAILABLE_HINT, IndexIncompatible, IndexUnavailable


class LiveConnections:
    """Per-thread connections opened by `opener`, re-opened when the file at `path` is replaced."""

    def __init__(
        self,
        path: Path | str,
        opener: Callable[[], sqlite3.Connection],
        on_replaced: Callable[[], None] | None = None,
    ):
        self.path = Path(path)
        self._open = opener
        self._on_replaced = on_replaced
        self._lock = threading.Lock()
        self._local = threading.local()
        self._current: dict[sqlite3.Connection, int] = {}  # connections to the current file -> pins
        self._retired: dict[sqlite3.Connection, int] = {}  # to a replaced file, still leased -> pins
        self._ident: tuple[int, int] | None = None
        self.generation = 0  # bumped on every replacement seen

    def _sync(self) -> None:
        """(lock held) Stat the file; on a replacement close idle connections and retire leased ones."""
        recover_hot_journal(self.path)  # a build killed mid-transaction: its journal is rolled back first
        ident = file_identity(self.path)
        if ident is None or ident == self._ident:  # missing: keep reading what we have
            return
        if self._ident is not None:
            self.generation += 1
            if self._on_replaced:
                self._on_replaced()
        self._ident = ident
        for conn, pins in self._current.items():
            if pins:
                self._retired[conn] = pins
            else:
                conn.close()
        self._current = {}

    def check(self) -> int:
        """Notice a replacement now (closing idle old connections); returns the generation."""
        with self._lock:
            self._sync()
            return self.generation

    def acquire(self) -> sqlite3.Connection:
        """This thread's connection to the current file, pinned until `release`."""
        with self._lock:
            self._sync()
            conn = getattr(self._local, "conn", None)
            if conn is None or conn not in self._current:
                conn = self._open()  # under the lock: registered as current only for the file just seen
                self._current[conn] = 0
                self._local.conn = conn
            self._current[conn] += 1
            return conn

    def release(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            if conn in self._current:
                self._current[conn] -= 1
            elif conn in self._retired:
                self._retired[conn] -= 1
                if not self._retired[conn]:
                    del self._retired[conn]
                    conn.close()

    @contextmanager
    def lease(self) -> Iterator[sqlite3.Connection]:
        conn = self.acquire()
        try:
            yield conn
        finally:
            self.release(conn)

    def close_all(self) -> None:
        """Close every connection (shutdown, tests); later leases open new ones."""
        with self._lock:
            for conn in [*self._current, *self._retired]:
                conn.close()
            self._current, self._retired, self._ident = {}, {}, None


class EvidenceDB:
    """`evidence.sqlite` for the pure handlers: `connect()` anywhere, `session()` around a request."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.live = LiveConnections(self.path, self._open)
        self._held = threading.local()

    def _open(self) -> sqlite3.Connection:
        conn = connect_ro(self.path, shared=True)  # never immutable: a build may update the file in place
        try:
            problem = reader_problem(read_meta(conn))
        except sqlite3.OperationalError as exc:
            conn.close()
            if unavailable(exc):
                raise IndexUnavailable(UNAVAILABLE_HINT) from None
            raise
        if problem:
            conn.close()
            raise IndexIncompatible(f"{problem}: {REBUILD_HINT}")
        return conn

    @contextmanager
    def session(self) -> Iterator[sqlite3.Connection]:
        """Pin this thread's connection for one request: every `connect()` inside returns it,
        and once the request ends a replaced file's connection can be closed.

        The outermost session is one read transaction: a request runs many statements (match,
        rank, rows, texts), and an incremental build commits in place, so without it a commit
        could land between two of them and one answer would mix two states. The shared lock it
        holds makes the build's commit wait for the request (the writer's busy timeout)."""
        with self.live.lease() as conn:
            outer = getattr(self._held, "scoped", None)
            begin = outer is None and not conn.in_transaction
            if begin:
                conn.execute("BEGIN")
            self._held.scoped = conn
            try:
                yield conn
            finally:
                self._held.scoped = outer
                if begin:
                    conn.rollback()  # a read transaction: nothing to keep, the shared lock released

    def connect(self) -> sqlite3.Connection:
        scoped = getattr(self._held, "scoped", None)
        if scoped is not None:
            return scoped
        # Outside a session (CLI, library use) the connection stays pinned until this
        # thread's next connect(), which re-checks the file.
        conn = self.live.acquire()
        previous = getattr(self._held, "conn", None)
        if previous is not None:
            self.live.release(previous)
        self._held.conn = conn
        return conn
