"""Opening `evidence.sqlite` for reading, and telling when a build replaced it (SPEC §6, §9).

Every reader (previous-build loader, renderer, build summary, handlers, the
Datasette plugin) opens the file the same way: read-only by URI, so a reader can
never write or create it, with rows addressable by column name. A build
replaces the file by rename, never in place, so "was it replaced?" is "did its
inode or mtime change?" (`file_identity`), asked in one place.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote


def connect_ro(path: Path | str, *, immutable: bool = False, shared: bool = False) -> sqlite3.Connection:
    """A read-only connection with `sqlite3.Row` rows.

    `immutable`: the file will not change under this connection (true of a
    renamed-into-place build), so SQLite skips locking. `shared`: the
    connection may be used from threads other than the one that opened it."""
    uri = f"file:{quote(str(path))}?mode=ro" + ("&immutable=1" if immutable else "")
    conn = sqlite3.connect(uri, uri=True, check_same_thread=not shared)
    conn.row_factory = sqlite3.Row
    return conn


def file_identity(path: Path | str) -> tuple[int, int] | None:
    """(inode, mtime) of the file: it changes when a build renames a new database into place.
    None when the file is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns
