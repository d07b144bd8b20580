"""What the previous build recorded: the basis for incremental decisions.

An index of another schema version is not read (its rows may not fit this
code): the build sees no previous resources, only its `build_meta`, and
`incompatible_schema` says which version it was (`build/versions.py`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from mnote_evidence.build.index.schema import SCHEMA_VERSION
from mnote_evidence.build.index.writer import is_valid_db
from mnote_evidence.build.model import NoteLink, ResourceRow
from mnote_evidence.build.sqlite_ro import connect_ro


@dataclass
class PreviousBuild:
    resources: dict[str, ResourceRow]  # by root-relative path
    links: dict[str, list[NoteLink]]  # note resource_id -> its links (from evidence_link)
    meta: dict[str, str]
    knowledge: dict[str, dict]  # path -> knowledge_source row
    incompatible_schema: str | None = None  # the other schema version found ("unrecorded" if none)
    knowledge_texts: set[str] = field(default_factory=set)  # paths whose sent text is kept (knowledge_text)


def load_previous(db_path: Path) -> PreviousBuild:
    empty = PreviousBuild({}, {}, {}, {})
    if not db_path.exists() or not is_valid_db(db_path):
        return empty
    conn = connect_ro(db_path)
    try:
        try:
            meta = {r["key"]: r["value"] for r in conn.execute("SELECT key, value FROM build_meta")}
        except sqlite3.DatabaseError:
            meta = {}
        if meta.get("schema_version") != SCHEMA_VERSION:
            return PreviousBuild({}, {}, meta, {}, meta.get("schema_version") or "unrecorded")
        resources = {r["source_root_relative_path"]: ResourceRow.from_sql(r)
                     for r in conn.execute("SELECT * FROM evidence_resource")}
        links: dict[str, list[NoteLink]] = {}
        for r in conn.execute("SELECT resource_id, source_block_id, target, kind FROM evidence_link "
                              "ORDER BY rowid"):
            links.setdefault(r["resource_id"], []).append(NoteLink(r["source_block_id"], r["target"], r["kind"]))
        knowledge = {r["source_root_relative_path"]: dict(r) for r in conn.execute("SELECT * FROM knowledge_source")}
        try:
            texts = {p for (p,) in conn.execute("SELECT source_root_relative_path FROM knowledge_text")}
        except sqlite3.OperationalError:  # an index written before the table existed
            texts = set()
        return PreviousBuild(resources, links, meta, knowledge, knowledge_texts=texts)
    finally:
        conn.close()
