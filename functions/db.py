"""Read-only connections to `evidence.sqlite` that follow atomic replacement.

A build replaces the file by rename. An open connection keeps reading the
inode it opened (complete, old data), so in-flight queries never fail; the
next query on that thread sees the new inode and reconnects. No request can
observe a half-written database.

A database from a build of another schema or segmentation version is refused
when the connection opens (`IndexIncompatible`, answered as a 503 that says to
rebuild), never read into a wrong answer or a traceback (`build/versions.py`).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from mnote_evidence.build.sqlite_ro import connect_ro, file_identity
from mnote_evidence.build.versions import REBUILD_HINT, read_meta, reader_problem
from mnote_evidence.functions.errors import IndexIncompatible


class EvidenceDB:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._local = threading.local()

    def connect(self) -> sqlite3.Connection:
        ident = file_identity(self.path)
        cached = getattr(self._local, "conn", None)
        if cached is not None and self._local.ident == ident:
            return cached
        if cached is not None:
            cached.close()
        conn = connect_ro(self.path, immutable=True, shared=True)
        problem = reader_problem(read_meta(conn))
        if problem:
            conn.close()
            raise IndexIncompatible(f"{problem}: {REBUILD_HINT}")
        self._local.conn, self._local.ident = conn, ident
        return conn
