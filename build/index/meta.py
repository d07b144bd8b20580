"""Reading an index's `build_meta`, and whether this code can query it (SPEC §6).

Invariants: a reader accepts an index only if its schema and segmentation are this code's; an
index that records no segmentation used segmentation "1". Readers import this module: it loads
no parser.
"""

from __future__ import annotations

import sqlite3

from mnote_evidence.build.core import text
from mnote_evidence.build.index.schema import SCHEMA_VERSION

LEGACY_SEGMENTATION = "1"  # what indexes written before `segmentation_version` existed used
REBUILD_HINT = "rebuild it with `mnote-evidence build WORKSPACE --out SITE_FOLDER`"


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    """`build_meta` as a dict; empty if the table is missing (not an index of ours)."""
    try:
        return {k: v for k, v in conn.execute("SELECT key, value FROM build_meta")}
    except sqlite3.DatabaseError:
        return {}


def reader_problem(meta: dict[str, str]) -> str | None:
    """Why this code cannot query an index with this `build_meta` (None: it can)."""
    schema = meta.get("schema_version")
    if schema != SCHEMA_VERSION:
        return _mismatch("schema", schema, SCHEMA_VERSION)
    segmentation = meta.get("segmentation_version", LEGACY_SEGMENTATION)
    if segmentation != text.SEGMENTATION_VERSION:
        return _mismatch("text segmentation", segmentation, text.SEGMENTATION_VERSION)
    return None


def _mismatch(what: str, found: str | None, wanted: str) -> str:
    if found is None:
        return f"evidence.sqlite records no {what} version; this mnote-evidence reads {what} version {wanted}"
    age = ""
    if found.isdigit() and wanted.isdigit():
        age = " (older)" if int(found) < int(wanted) else " (newer)"
    return (
        f"evidence.sqlite was written with {what} version {found}{age}; "
        f"this mnote-evidence reads {what} version {wanted}"
    )
