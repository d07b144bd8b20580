"""The build report's status counts, errors and warnings, read back from `evidence.sqlite` (SPEC §11).

They are what the index records for every file, not just this run's: a file that failed in an earlier
build and is unchanged is still reported; one file's warnings of one code are listed up to
`MAX_LISTED_WARNINGS`, then counted (`model.summarised`). Every query reads a partial index of just its rows
(index/schema.py), so an edit's summary costs what it reports; the `ok` count is the table's row count
less the others. Used by `pipeline.build`.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from mnote_evidence.build.core.model import summarised
from mnote_evidence.build.core.sqlite_ro import connect_ro
from mnote_evidence.build.index.link_targets import LinkTargets
from mnote_evidence.build.index.schema import NOT_OK, WARNED


def recorded(db_path: Path) -> tuple[dict[str, int], list[dict[str, str]], list[dict[str, str]]]:
    """Status counts, errors and warnings as the database records them (all files, not just this run's)."""
    conn = connect_ro(db_path)
    try:
        counts = _counts(conn)
        errors = [
            {"path": p, "code": c, "message": m}
            for p, c, m in conn.execute(
                "SELECT source_root_relative_path, error_code, error_message FROM evidence_resource "
                f"WHERE {NOT_OK.format(l='')} AND status = 'error' ORDER BY 1"
            )
        ]
        warnings = [
            {"path": p, **w}
            for p, ws in conn.execute(
                "SELECT source_root_relative_path, warnings_json FROM evidence_resource "
                f"WHERE {WARNED.format(l='')} ORDER BY 1"
            )
            for w in json.loads(ws)
        ]
        targets = LinkTargets(conn)
        links = targets.report_links()
        warnings += [
            {
                "path": p,
                "code": "link_outside_root",
                "message": f"link '{t}' leaves the workspace; it was not followed",
            }
            for p, t, _, _, problem in links
            if problem == "outside_root"
        ]
        warnings += targets.broken(links)
        return counts, errors, summarised(warnings)
    finally:
        conn.close()


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Resources by status, in status order, statuses with none left out (as `GROUP BY status` gives)."""
    counts = dict(
        conn.execute(
            f"SELECT status, count(*) FROM evidence_resource WHERE {NOT_OK.format(l='')} GROUP BY status"
        )
    )
    ok = conn.execute("SELECT count(*) FROM evidence_resource").fetchone()[0] - sum(counts.values())
    return dict(sorted((counts | {"ok": ok} if ok else counts).items()))
