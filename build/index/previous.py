"""What the previous build recorded: the basis for incremental decisions.

Its resource rows (with each file's size/mtime stamp and each note's `links_hash`), its
meta and its LightRAG registry; the links themselves are read only where needed, by
targeted queries (`build/index/linkgraph.py`).

An index of another schema version is not read (its rows may not fit this
code): the build sees no previous resources, only its `build_meta`, and
`incompatible_schema` says which version it was (`build/versions.py`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from mnote_evidence.build.core.model import ResourceRow
from mnote_evidence.build.core.sqlite_ro import connect_ro
from mnote_evidence.build.index.schema import SCHEMA_VERSION
from mnote_evidence.build.index.writer import is_valid_db


@dataclass
class PreviousBuild:
    resources: dict[str, ResourceRow]
    meta: dict[str, str]
    knowledge: dict[str, dict]
    incompatible_schema: str | None = None  # the other schema version found ("unrecorded" if none)
    # `writer.is_valid_db` of the file, asked once per build: `starts_empty` and `write_index` take it
    valid: bool = False
    knowledge_texts: set[str] = field(default_factory=set)
    sent_hashes: dict[str, str] = field(default_factory=dict)


def load_previous(db_path: Path) -> PreviousBuild:
    empty = PreviousBuild({}, {}, {})
    if not db_path.exists():
        return empty
    try:
        conn = connect_ro(db_path)
    except sqlite3.DatabaseError:
        return empty
    try:
        if not is_valid_db(db_path, conn=conn):
            return empty
        try:
            meta = {r["key"]: r["value"] for r in conn.execute("SELECT key, value FROM build_meta")}
        except sqlite3.DatabaseError:
            meta = {}
        if meta.get("schema_version") != SCHEMA_VERSION:
            # the index is rebuilt, but LightRAG still holds what was sent: keep its registry (SPEC §9)
            knowledge, hashes = _knowledge(conn)
            return PreviousBuild(
                {},
                meta,
                knowledge,
                meta.get("schema_version") or "unrecorded",
                sent_hashes=hashes,
                valid=True,
            )
        resources = {r[1]: ResourceRow.from_values(r) for r in ResourceRow.select(conn)}
        knowledge, hashes = _knowledge(conn)
        return PreviousBuild(
            resources,
            meta,
            knowledge,
            knowledge_texts=set(hashes),
            sent_hashes=hashes,
            valid=True,
        )
    finally:
        conn.close()


def _knowledge(conn: sqlite3.Connection) -> tuple[dict[str, dict], dict[str, str]]:
    """The LightRAG registry (path -> knowledge_source row) and the hash of each text sent."""
    try:
        knowledge = {
            r["source_root_relative_path"]: dict(r) for r in conn.execute("SELECT * FROM knowledge_source")
        }
    except sqlite3.OperationalError:
        return {}, {}
    try:
        hashes = dict(
            conn.execute("SELECT source_root_relative_path, text_hash FROM knowledge_text").fetchall()
        )
    except sqlite3.OperationalError:  # an index written before the table existed
        hashes = {}
    return knowledge, hashes
