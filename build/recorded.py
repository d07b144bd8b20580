"""The build report's status counts, errors and warnings, read back from `evidence.sqlite` (SPEC §11).

They are what the index now records for every file, not just this run's: a file that failed in an
earlier build and is unchanged is still reported. Link warnings (`link_outside_root`, broken links)
come from one scan of `evidence_link` (`LinkTargets.report_links`). Used by `pipeline.build`.
"""

from __future__ import annotations

import json
from pathlib import Path

from mnote_evidence.build.link_targets import LinkTargets
from mnote_evidence.build.sqlite_ro import connect_ro


def recorded(db_path: Path) -> tuple[dict[str, int], list[dict[str, str]], list[dict[str, str]]]:
    """Status counts, errors and warnings as the database now records them (all files, not just this run's)."""
    conn = connect_ro(db_path)
    try:
        counts = dict(conn.execute("SELECT status, count(*) FROM evidence_resource GROUP BY status ORDER BY 1"))
        errors = [{"path": p, "code": c, "message": m} for p, c, m in conn.execute(
            "SELECT source_root_relative_path, error_code, error_message FROM evidence_resource "
            "WHERE status = 'error' ORDER BY 1")]
        warnings = [{"path": p, **w} for p, ws in conn.execute(
            "SELECT source_root_relative_path, warnings_json FROM evidence_resource "
            "WHERE warnings_json != '[]' ORDER BY 1") for w in json.loads(ws)]
        targets = LinkTargets(conn)
        links = targets.report_links()  # one scan of evidence_link for both lists (130,000 rows at 10,000 notes)
        warnings += [{"path": p, "code": "link_outside_root",
                      "message": f"link '{t}' leaves the workspace; it was not followed"}
                     for p, t, _, _, problem in links if problem == "outside_root"]
        warnings += targets.broken(links)
        return counts, errors, warnings
    finally:
        conn.close()
