"""What LightRAG should hold after a build (SPEC §9): the build's `ok` resources as ingest `Candidate`s.

A resource this build did not rewrite is read lazily from what the previous build left (its parsed
text, or the note itself, with its furniture blocks left out), so an unchanged workspace reads no file;
a rewritten one gives the text of the artifact just parsed. `registry_key` compares two versions of
the `knowledge_source` table by what the index keeps of each document. Used by `pipeline.build`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mnote_evidence.build.core.fsutil import read_inside
from mnote_evidence.build.core.model import KIND_MARKDOWN, STATUS_OK, ResourceRow
from mnote_evidence.build.index.knowledge_text import furniture_blocks, ingest_text, text_hash
from mnote_evidence.build.knowledge.ingest import Candidate
from mnote_evidence.build.markdown.comments import blank_comments
from mnote_evidence.build.markdown.encoding import decode_note
from mnote_evidence.build.parse.sidecars import MAX_SIDECAR_BYTES, read_source_map

if TYPE_CHECKING:
    from mnote_evidence.build.index.writer import IndexChanges


def candidates(root: Path, previous: Mapping[str, ResourceRow], changes: IndexChanges) -> list[Candidate]:
    """Every file LightRAG should hold now: `ok` resources, with a lazy loader of their text, by path."""
    updated = {u.row.path: u for u in changes.updates}
    gone = set(changes.stale) | set(changes.removed)
    out = []
    for path, prev in previous.items():
        if path in updated or prev.resource_id in gone or prev.status != STATUS_OK:
            continue
        out.append(
            Candidate(
                path,
                prev.kind,
                prev.source_hash or "",
                bool(prev.artifact_path and prev.artifact_path.endswith(".ocr.md")),
                _text_loader(root, path, prev),
            )
        )
    for path, u in updated.items():
        if u.artifact is not None and u.row.status == STATUS_OK:
            text = ingest_text(u.artifact.text, u.artifact.blocks)
            out.append(
                Candidate(
                    path,
                    u.artifact.kind,
                    u.row.source_hash,
                    u.artifact.from_ocr,
                    lambda text=text: text,
                    text_hash(text),
                )
            )
    return sorted(out, key=lambda c: c.path)


def _text_loader(root: Path, path: str, prev: ResourceRow) -> Callable[[], str]:
    """The text sent of an unchanged file: its sidecar text (or the note), read as the build reads
    sidecars (a regular file through real folders, capped), without furniture."""

    def load() -> str:
        data = read_inside(root, root / (prev.artifact_path or path), MAX_SIDECAR_BYTES)
        if data is None:
            return ""
        text = decode_note(data)[0]
        if prev.kind == KIND_MARKDOWN:  # the note as the provider read it: without its `%%comments%%`
            text = blank_comments(text)
        if not prev.source_map_path:
            return text
        return ingest_text(text, furniture_blocks(read_source_map(root, prev.source_map_path)))

    return load


def registry_key(rows: Iterable[Mapping]) -> list[tuple]:
    """`knowledge_source` rows as compared between builds (a change rewrites the table)."""
    return sorted(
        (r["source_root_relative_path"], r["lightrag_doc_id"], r["source_hash"], r["status"]) for r in rows
    )
