"""The resource rows cached beside the index are the index's rows, or are not used (build/index/row_cache.py)."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from mnote_evidence.build.core.model import ResourceRow
from mnote_evidence.build.index import row_cache
from mnote_evidence.build.index.previous import load_previous
from mnote_evidence.build.pipeline import DB_NAME
from tests.conftest import run_build

DAY_AGO = time.time() - 86400


def _from_index(db: Path) -> dict[str, ResourceRow]:
    conn = sqlite3.connect(db)
    try:
        return {
            r[1]: ResourceRow.from_values(r)
            for r in conn.execute(f"SELECT {ResourceRow.SQL_COLUMNS} FROM evidence_resource")
        }
    finally:
        conn.close()


def _notes(workspace: Path) -> list[Path]:
    return sorted(p for p in workspace.rglob("*.md") if not any(part.startswith(".") for part in p.parts))


def _check(out: Path, cached: bool = True) -> None:
    """The rows a build would read next are the index's, from the cache when `cached`."""
    previous = load_previous(out / DB_NAME)
    assert (previous.cached is not None) == cached
    assert previous.resources == _from_index(out / DB_NAME)


def test_the_cached_rows_are_the_index_rows_after_every_kind_of_change(workspace, tmp_path):
    out = tmp_path / "out"
    for path in workspace.rglob("*"):
        if path.is_file():
            os.utime(path, (DAY_AGO, DAY_AGO))  # stamps a build trusts
    run_build(workspace, out)
    _check(out)  # a full build writes a base
    notes = _notes(workspace)
    with open(notes[0], "a", encoding="utf-8") as f:
        f.write("\nAppended paragraph.\n")
    run_build(workspace, out)
    _check(out)  # an edit: its rows in the delta
    (workspace / "New note.md").write_text("# New\n\nA new note.\n", encoding="utf-8")
    notes[1].unlink()  # a note gone: its row stale
    run_build(workspace, out)
    _check(out)
    run_build(workspace, out)  # the stale row deleted
    _check(out)
    os.utime(notes[2], (DAY_AGO + 60, DAY_AGO + 60))  # touched, same bytes: only its stamp is written
    report = run_build(workspace, out)
    assert not report.changed and report.hashed >= 1
    _check(out)
    run_build(workspace, out)  # a no-op writes nothing: the cache stays the index's
    _check(out)


def test_a_cache_that_is_not_the_index_s_is_not_used(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    db = out / DB_NAME
    # a write by anything else (an older mnote-evidence keeps the token): the file changed since
    conn = sqlite3.connect(db)
    conn.execute("UPDATE evidence_resource SET title = 'changed elsewhere' WHERE rowid = 1")
    conn.commit()
    conn.close()
    _check(out, cached=False)
    run_build(workspace, out)  # nothing to write: no cache either (a build writes one with the index)
    _check(out, cached=False)
    with open(_notes(workspace)[0], "a", encoding="utf-8") as f:
        f.write("\nAppended paragraph.\n")
    run_build(workspace, out)  # the next write: a new base
    _check(out)
    # a torn delta, a foreign base: the checksum refuses them
    delta = out / row_cache.ROWS_DELTA
    delta.write_bytes(delta.read_bytes()[:-3])
    _check(out, cached=False)
    with open(_notes(workspace)[0], "a", encoding="utf-8") as f:
        f.write("\nOne more paragraph.\n")
    run_build(workspace, out)
    _check(out)
    base = out / row_cache.ROWS_BASE
    data = bytearray(base.read_bytes())
    data[-5] ^= 0xFF
    base.write_bytes(bytes(data))
    _check(out, cached=False)


def test_a_killed_build_between_its_commit_and_its_cache_leaves_the_cache_unused(workspace, tmp_path):
    out = tmp_path / "out"
    run_build(workspace, out)
    old = (out / row_cache.ROWS_DELTA).read_bytes()
    note = _notes(workspace)[0]
    with open(note, "a", encoding="utf-8") as f:
        f.write("\nAnother paragraph.\n")
    run_build(workspace, out)
    (out / row_cache.ROWS_DELTA).write_bytes(old)  # the delta the killed build did not replace
    _check(out, cached=False)
