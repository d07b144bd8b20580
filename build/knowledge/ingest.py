"""Build-time LightRAG ingest (SPEC §9): keep LightRAG's documents equal to the index.

LightRAG keeps only a file's basename, so every resource is sent under a unique flat name,
`<resource id>-<file name>`, mapped back by `knowledge_source`. What is sent is the parsed or OCR text,
or the note itself, never a placeholder (an image with no OCR text is `skipped_no_text`). Every build:
a document whose file is gone, stale, failed or changed is deleted first (and awaited), so one file
never has two; a file with no processed document is inserted (a bounded poll). A LightRAG outage
records `status=error` rows (retried next build), never a failed build. The exact text sent is
returned (`IngestReport.texts`) for `knowledge_text` (SPEC §10).
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

from mnote_evidence.build.core.ids import resource_id
from mnote_evidence.build.core.model import KIND_IMAGE
from mnote_evidence.build.knowledge.lightrag import LightRag, LightRagConfig, LightRagError

DONE = ("processed", "duplicate", "skipped_no_text")
WAIT_SECONDS = 300.0
BATCH = 16


@dataclass
class Candidate:
    path: str
    kind: str
    source_hash: str
    from_ocr: bool
    text: Callable[[], str]  # loaded only if the file must be sent
    text_hash: str | None = None


@dataclass
class IngestReport:
    inserted: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0
    error: str | None = None
    rows: list[dict] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("rows", "texts")}


def source_name(path: str) -> str:
    return f"{resource_id(path)}-{posixpath.basename(path)}"


def doc_id(name: str) -> str:
    """LightRAG's id for a document inserted under `name` (lightrag-hku 1.5: md5 of the source name)."""
    return "doc-" + hashlib.md5(name.encode("utf-8")).hexdigest()


def _row(c: Candidate, status: str, doc_id: str | None, stamp: int) -> dict:
    return {
        "source_root_relative_path": c.path,
        "lightrag_doc_id": doc_id,
        "lightrag_file_path": source_name(c.path),
        "source_hash": c.source_hash,
        "status": status,
        "ocr_text_exposed": int(c.kind == KIND_IMAGE and status == "processed"),
        "updated_at_ms": stamp,
    }


def reconcile(
    config: LightRagConfig,
    candidates: list[Candidate],
    registry: dict[str, dict],
    stamp: int,
    have_text: set[str] | frozenset[str] = frozenset(),
    sent: dict[str, str] | None = None,
) -> IngestReport:
    """The new `knowledge_source` rows (report.rows) after bringing LightRAG up to date, and the texts sent
    (report.texts). A kept document whose text the index does not hold (`have_text`) gets it re-read from
    its unchanged source, so citations can locate its chunks without re-sending it. A re-parsed file
    whose text differs from the one sent (`sent`: path -> text hash) is re-sent: LightRAG's chunks must
    be substrings of the text kept for citations."""
    report = IngestReport()
    current = {c.path: c for c in candidates}
    sent = sent or {}
    keep, stale_docs, todo = [], [], []
    for path, row in registry.items():
        c = current.get(path)
        text_changed = (
            c is not None and c.text_hash is not None and sent.get(path, c.text_hash) != c.text_hash
        )
        if c and row["source_hash"] == c.source_hash and row["status"] in DONE and not text_changed:
            keep.append(row)
        elif row.get("lightrag_doc_id"):
            stale_docs.append(row["lightrag_doc_id"])
    kept = {r["source_root_relative_path"] for r in keep}
    todo = [c for c in candidates if c.path not in kept]
    report.unchanged = len(keep)
    report.rows = list(keep)
    for row in keep:
        c = current[row["source_root_relative_path"]]
        if c.path not in have_text and row["status"] == "processed":
            report.texts[c.path] = c.text()
    if not stale_docs and not todo:
        return report
    try:
        with LightRag(config) as client:
            client.delete_documents(stale_docs, WAIT_SECONDS)
            report.deleted = len(stale_docs)
            for start in range(0, len(todo), BATCH):
                report.rows.extend(_insert(client, todo[start : start + BATCH], stamp, report))
    except LightRagError as exc:
        report.error = f"{exc.reason}: {exc.message}"
        done = {r["source_root_relative_path"] for r in report.rows}
        report.rows.extend(_row(c, "error", None, stamp) for c in todo if c.path not in done)
        # entries whose document we could not delete keep their doc id, so the next build retries
        report.rows.extend(
            row
            for path, row in registry.items()
            if path not in done and path not in current and row.get("lightrag_doc_id")
        )
    return report


def _insert(client: LightRag, batch: list[Candidate], stamp: int, report: IngestReport) -> list[dict]:
    rows, send = [], []
    for c in batch:
        text = c.text()
        if text.strip():
            send.append((c, text))
            report.texts[c.path] = text
        else:
            rows.append(_row(c, "skipped_no_text", None, stamp))
    if not send:
        return rows
    track = client.insert_texts([t for _, t in send], [source_name(c.path) for c, _ in send])
    docs = client.wait_track(track, len(send), WAIT_SECONDS)
    by_name = {d.get("file_path"): d for d in docs}
    for c, _ in send:
        doc = by_name.get(source_name(c.path)) or {}
        doc_id = doc.get("id")
        status = str(doc.get("status", "failed")).lower()
        if doc_id and str(doc_id).startswith("dup-"):
            status, doc_id = "duplicate", None  # same text as another file: LightRAG keeps one copy
        if status == "processed":
            report.inserted += 1
        else:
            report.failed += 1
        rows.append(_row(c, status, doc_id, stamp))
    return rows
