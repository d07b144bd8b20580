"""`LiveConnections`: a replaced file is read from the next lease on; leased connections are never
closed under a query; idle ones to the old file are closed, so no descriptor stays on a deleted file."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from mnote_evidence.build.core import text
from mnote_evidence.build.versions import SCHEMA_VERSION
from mnote_evidence.functions.core.db import EvidenceDB


def write_db(path: Path, generation: int) -> None:
    """A complete new file renamed over `path`, as a build does."""
    tmp = path.with_suffix(".tmp")
    conn = sqlite3.connect(tmp)
    conn.execute("CREATE TABLE g (n INTEGER)")
    conn.execute("INSERT INTO g VALUES (?)", [generation])
    conn.execute("CREATE TABLE build_meta (key TEXT PRIMARY KEY, value TEXT)")  # readable by this code
    conn.executemany(
        "INSERT INTO build_meta VALUES (?, ?)",
        [("schema_version", SCHEMA_VERSION), ("segmentation_version", text.SEGMENTATION_VERSION)],
    )
    conn.commit()
    conn.close()
    os.replace(tmp, path)


def deleted_fds(path: Path) -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)) and target.endswith("(deleted)"):
            out.append(target)
    return out


def in_thread(fn):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("v", fn()))
    t.start()
    t.join()
    return box["v"]


def test_leases_follow_replacement_and_close_old_connections(tmp_path):
    path = tmp_path / "evidence.sqlite"
    write_db(path, 1)
    db = EvidenceDB(path)
    read = lambda conn: conn.execute("SELECT n FROM g").fetchone()[0]  # noqa: E731

    def request() -> int:
        with db.session() as conn:
            return read(conn)

    assert in_thread(request) == 1  # leaves an idle connection on another thread
    with db.session() as held:  # a request in flight on this thread
        assert read(held) == 1
        write_db(path, 2)
        assert in_thread(request) == 2  # the next request, on any thread, reads the new file
        assert read(held) == 1  # the query in flight keeps its complete old file
        assert db.connect() is held  # one connection, one build, for the whole request
    with pytest.raises(sqlite3.ProgrammingError):
        read(held)  # released after the replacement: closed
    db.live.check()
    assert deleted_fds(path) == []
    with db.session() as conn:
        assert read(conn) == 2


def test_generations_never_go_backwards_across_threads(tmp_path):
    path = tmp_path / "evidence.sqlite"
    write_db(path, 0)
    db = EvidenceDB(path)
    seen: list[tuple[int, int]] = []  # (generation on disk before the lease, generation read)
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            floor = getattr(write_db, "last", 0)  # renamed into place before this request starts
            with db.session() as conn:
                seen.append((floor, conn.execute("SELECT n FROM g").fetchone()[0]))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for n in range(1, 30):
        write_db(path, n)
        write_db.last = n  # set after the rename: any lease that starts later must read >= n
    stop.set()
    for t in threads:
        t.join()
    assert seen and all(got >= floor for floor, got in seen)
    db.live.close_all()
    assert deleted_fds(path) == []


def test_a_request_reads_one_state_while_a_build_commits_in_place(tmp_path):
    """A request runs many statements; an in-place commit waits for it instead of landing between two."""
    path = tmp_path / "evidence.sqlite"
    write_db(path, 1)
    db = EvidenceDB(path)
    read = "SELECT n FROM g"
    writer = sqlite3.connect(path, isolation_level=None, timeout=0.2)  # as the build's in-place write
    with db.session() as conn:
        assert conn.execute(read).fetchone()[0] == 1
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE g SET n = 2")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            writer.execute("COMMIT")  # the request holds its state
        assert conn.execute(read).fetchone()[0] == 1
    writer.execute("COMMIT")  # the request ended: the commit lands
    writer.close()
    with db.session() as conn:
        assert conn.execute(read).fetchone()[0] == 2
    db.live.close_all()
