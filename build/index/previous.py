"""What the previous build recorded: the basis for incremental decisions.

An index of another schema version is not read (its rows may not fit this
code): the build sees no previous resources, only its `build_meta`, and
`incompatible_schema` says which version it was (`build/versions.py`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from mnote_evidence.build.index.schema import SCHEMA_VERSION
from mnote_evidence.build.index.writer import is_valid_db


@dataclass(frozen=True)
class PreviousResource:
    resource_id: str
    path: str
    owner: str | None
    kind: str
    provider_version: str | None
    source_hash: str | None
    status: str
    error_code: str | None
    error_message: str | None
    artifact_path: str | None
    source_map_path: str | None


@dataclass
class PreviousBuild:
    resources: dict[str, PreviousResource]  # by root-relative path
    links: dict[str, list[dict]]  # note resource_id -> its evidence_link rows
    meta: dict[str, str]
    knowledge: dict[str, dict]  # path -> knowledge_source row
    incompatible_schema: str | None = None  # the other schema version found ("unrecorded" if none)


def load_previous(db_path: Path) -> PreviousBuild:
    empty = PreviousBuild({}, {}, {}, {})
    if not db_path.exists() or not is_valid_db(db_path):
        return empty
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        try:
            meta = {r["key"]: r["value"] for r in conn.execute("SELECT key, value FROM build_meta")}
        except sqlite3.DatabaseError:
            meta = {}
        if meta.get("schema_version") != SCHEMA_VERSION:
            return PreviousBuild({}, {}, meta, {}, meta.get("schema_version") or "unrecorded")
        resources = {
            r["source_root_relative_path"]: PreviousResource(
                r["resource_id"], r["source_root_relative_path"], r["owner_document_path"], r["kind"],
                r["provider_version"], r["source_hash"], r["status"], r["error_code"],
                r["error_message"], r["artifact_path"], r["source_map_path"])
            for r in conn.execute("SELECT * FROM evidence_resource")
        }
        links: dict[str, list[dict]] = {}
        for r in conn.execute("SELECT resource_id, source_block_id, target, kind FROM evidence_link "
                              "ORDER BY rowid"):
            links.setdefault(r["resource_id"], []).append(dict(r))
        knowledge = {r["source_root_relative_path"]: dict(r) for r in conn.execute("SELECT * FROM knowledge_source")}
        return PreviousBuild(resources, links, meta, knowledge)
    finally:
        conn.close()
