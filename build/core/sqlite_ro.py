"""Opening `evidence.sqlite` for reading, and telling when a build changed it (SPEC §6, §9).

Every reader opens the file the same way: read-only by URI (it can never write or create it), rows
addressable by column name, SQLite's locking on (never `immutable=1` for a file a build may update in
place: a shared lock reads the state before or after a commit, never a mix). "Did a build change
it?" is "did its inode or mtime change?" (`file_identity`). A killed build's hot `-journal` makes
every `mode=ro` read fail (SQLITE_READONLY_ROLLBACK), so `recover_hot_journal` (from `connect_ro` and
every lease of `functions/core/db.py`) opens the file read-write once, which rolls it back; where the
file cannot be written the read fails and handlers answer 503 `index_unavailable`, never a 500.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

SQLITE_READONLY_ROLLBACK = 776  # SQLITE_READONLY | (3 << 8): a hot journal a read-only connection cannot undo


def connect_ro(path: Path | str, *, immutable: bool = False, shared: bool = False) -> sqlite3.Connection:
    """A read-only connection with `sqlite3.Row` rows (a killed build's hot journal rolled back first).

    `immutable`: only for a file nothing will ever write (SQLite skips locking and
    change detection). `shared`: the connection may be used from threads other
    than the one that opened it."""
    if not immutable:
        recover_hot_journal(path)
    uri = f"file:{quote(str(path))}?mode=ro" + ("&immutable=1" if immutable else "")
    conn = sqlite3.connect(uri, uri=True, check_same_thread=not shared)
    conn.row_factory = sqlite3.Row
    return conn


def recover_hot_journal(path: Path | str) -> None:
    """If a `-journal` sits beside the file, open it read-write once: SQLite rolls back a hot journal
    (one whose writer died) and leaves a live writer's alone (it holds the RESERVED lock). One `stat`
    when there is no journal. Errors are left to the reader's own query (see `unavailable`)."""
    if not os.path.exists(f"{path}-journal"):
        return
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=rw", uri=True, timeout=0.5)
        try:
            conn.execute("PRAGMA schema_version").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        pass  # not writable here, or a build is committing: the read itself waits or fails cleanly


def unavailable(exc: BaseException) -> bool:
    """An error that means "the index is mid-write or awaits recovery", not a bug: busy, locked, or a
    hot journal this reader may not roll back. Handlers answer it with a 503."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        code == SQLITE_READONLY_ROLLBACK
        or (code is not None and code & 0xFF in (5, 6))
        or "database is locked" in str(exc)
    )


def file_identity(path: Path | str) -> tuple[int, int] | None:
    """(inode, mtime) of the file: it changes when a build renames a new database into place.
    None when the file is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns
