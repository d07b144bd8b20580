"""The data every stage passes along: one definition, matching `schemas/`.

Providers produce a `ParsedResourceArtifact`; the sidecar stage serialises it to `source-map.json`;
the indexer turns its blocks into rows and `EvidenceLocator`s. The rows the build writes and reads back
are typed here too: `ResourceRow` (`evidence_resource`), `NoteLink` (a link as a note's parse found it),
`LinkRow` (`evidence_link`) and `EdgeRow` (`evidence_edge`); the link's block is `source_block_id`
everywhere, as in the tables (SPEC §6). Nothing else invents these shapes.
"""

# No `from __future__ import annotations` here: TypedDict must see `NotRequired[...]` evaluated.

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar, NotRequired, TypedDict

SOURCE_MAP_SCHEMA = "mnote.resource_source_map.v1"
LOCATOR_SCHEMA = "mnote.evidence_locator.v1"


class Kind(StrEnum):
    """Resource kinds as they appear in locators (SPEC §7) and in evidence_resource.kind.

    A kind says what a locator looks like (lines, page + box, paragraph), not which file
    format it came from: `build/core/formats.py` maps formats (suffixes) to kinds."""

    MARKDOWN = "markdown"
    PDF = "pdf"
    IMAGE = "image"
    OFFICE = "office"
    OTHER = "other"


KIND_MARKDOWN = Kind.MARKDOWN
KIND_PDF = Kind.PDF
KIND_IMAGE = Kind.IMAGE
KIND_OFFICE = Kind.OFFICE
KIND_OTHER = Kind.OTHER

# Files that are notes (kind markdown): the URL scheme (SPEC §8) and the format registry use these.
NOTE_SUFFIXES = (".md", ".markdown")


def suffix_of(path: str) -> str:
    """`posixpath.splitext(path)[1]` (leading dots of the name are not a suffix), cheaper: a build asks
    it several times for every file of the workspace."""
    name = path.rpartition("/")[2].lstrip(".")
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


# evidence_block.role: furniture is shown but left out of default ranking, LightRAG and citations (SPEC §6)
ROLE_BODY = "body"
ROLE_FURNITURE = "furniture"

STATUS_OK = "ok"
STATUS_STALE = "stale"
STATUS_ERROR = "error"
STATUS_UNSUPPORTED = "unsupported"
UNPUBLISHED = "unpublished"  # a provider's code for a note its front matter keeps out of the output


@dataclass
class Block:
    """One citeable unit: a paragraph, heading, list item, table row, code block..."""

    id: str
    type: str
    text: str
    page: int | None = None  # 1-based (PDF, image)
    bbox: list[float] | None = None  # [x0, y0, x1, y1], top-left origin
    char_range: list[int] | None = None  # [start, end) in the resource's text
    line_range: list[int] | None = None
    paragraph_index: int | None = None
    para_id: str | None = None
    section_id: str | None = None
    confidence: float | None = None
    note: str | None = None  # DOCX footnote/endnote/comment/text box: what it is attached to
    links: list[dict[str, str]] = field(default_factory=list)
    role: str = ROLE_BODY
    box_holds_text: bool | None = (
        None  # PDF text block: PyMuPDF's words inside bbox hold its words (None: unchecked)
    )
    anchor: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "type": self.type, "text": self.text}
        for key, value in (
            ("bbox", self.bbox),
            ("charRange", self.char_range),
            ("lineRange", self.line_range),
            ("paragraphIndex", self.paragraph_index),
            ("paraId", self.para_id),
            ("sectionId", self.section_id),
            ("confidence", self.confidence),
            ("note", self.note),
            ("anchor", self.anchor),
        ):
            if value is not None:
                out[key] = value
        if self.links:
            out["links"] = self.links
        if self.role != ROLE_BODY:
            out["role"] = self.role
        if self.box_holds_text is not None:
            out["boxHoldsText"] = self.box_holds_text
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], page: int | None = None) -> "Block":
        return cls(
            id=data["id"],
            type=data["type"],
            text=data["text"],
            page=page,
            bbox=data.get("bbox"),
            char_range=data.get("charRange"),
            line_range=data.get("lineRange"),
            paragraph_index=data.get("paragraphIndex"),
            para_id=data.get("paraId"),
            section_id=data.get("sectionId"),
            confidence=data.get("confidence"),
            note=data.get("note"),
            links=data.get("links", []),
            role=data.get("role", ROLE_BODY),
            box_holds_text=data.get("boxHoldsText"),
            anchor=data.get("anchor"),
        )


@dataclass
class Section:
    id: str
    title: str
    path: list[str]
    parent_id: str | None
    level: int
    page_start: int | None = None
    page_end: int | None = None
    block_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "level": self.level,
            "parentId": self.parent_id,
        }
        if self.page_start is not None:
            out["pageStart"] = self.page_start
            out["pageEnd"] = self.page_end
        out["blockIds"] = self.block_ids
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Section":
        return cls(
            id=data["id"],
            title=data["title"],
            path=data["path"],
            parent_id=data.get("parentId"),
            level=data.get("level", len(data["path"])),
            page_start=data.get("pageStart"),
            page_end=data.get("pageEnd"),
            block_ids=data.get("blockIds", []),
        )


@dataclass
class Page:
    page: int
    width: float
    height: float
    source: str | None = None  # "native" | "ocr:<engine>"; None for the default

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"page": self.page, "width": self.width, "height": self.height}
        if self.source:
            out["source"] = self.source
        return out


@dataclass
class Warning_:
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


MAX_LISTED_WARNINGS = 20  # of one code for one file: the rest are counted in one more warning


def summarised(warnings: list[dict[str, str]]) -> list[dict[str, str]]:
    """`warnings` (dicts with `code`, `message` and maybe `path`), at most `MAX_LISTED_WARNINGS` of one
    code for one path, in order; past it, one more warning after the last one listed counts the rest,
    so a file's warnings cost what its kinds of problem are, not how often one repeats."""

    def key(w: dict[str, str]) -> tuple[str | None, str]:
        return w.get("path"), w["code"]

    seen: dict[tuple[str | None, str], int] = {}
    kept = []
    for w in warnings:
        seen[key(w)] = seen.get(key(w), 0) + 1
        if seen[key(w)] <= MAX_LISTED_WARNINGS:
            kept.append(w)
    last = {key(w): i for i, w in enumerate(kept)}
    out = []
    for i, w in enumerate(kept):
        out.append(w)
        (path, code), n = key(w), seen[key(w)]
        if n > MAX_LISTED_WARNINGS and last[key(w)] == i:
            more = {"code": code, "message": f"{n - MAX_LISTED_WARNINGS:,} more {code} warnings not listed"}
            out.append(more if path is None else {"path": path, **more})
    return out


@dataclass
class ParsedResourceArtifact:
    """What a provider returns: text + source map + blocks + sections (SPEC §3)."""

    kind: str
    provider: str
    provider_version: str
    source_path: str
    source_hash: str
    text: str  # the parsed text (`*.parse.md` / `*.ocr.md`); "" for notes
    blocks: list[Block]
    sections: list[Section]
    pages: list[Page] = field(default_factory=list)
    warnings: list[Warning_] = field(default_factory=list)
    from_ocr: bool = False
    title: str | None = None

    def section_by_id(self) -> dict[str, Section]:
        return {s.id: s for s in self.sections}


class OpenAction(TypedDict):
    type: str
    url: str  # site-relative (SPEC §8); handlers prefix the site's base


class EvidenceLocator(TypedDict):
    """Where a block lives (SPEC §7, `schemas/locator.schema.json`); absent things are absent."""

    schema: str
    rootUri: NotRequired[str]
    ownerDocumentPath: str | None
    resourcePath: str
    resourceKind: str
    blockId: NotRequired[str]
    page: NotRequired[int]
    bbox: NotRequired[list[float]]
    lineRange: NotRequired[list[int]]
    charRange: NotRequired[list[int]]
    paragraphIndex: NotRequired[int]
    sectionPath: list[str]
    sourceMapPath: str
    precision: str
    openAction: OpenAction


@dataclass(slots=True)
class ResourceRow:
    """One `evidence_resource` row: what the build records per file, and what later stages read.
    Slotted: a build reads every previous row, and a slotted instance is built faster."""

    resource_id: str
    path: str
    owner: str | None
    kind: str
    status: str
    provider: str | None = None
    provider_version: str | None = None
    source_hash: str | None = None
    artifact_path: str | None = None
    source_map_path: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    page_count: int | None = None
    block_count: int = 0
    warnings: list[dict[str, str]] = field(default_factory=list)
    updated_at_ms: int = 0
    title: str | None = None
    source_size: int | None = (
        None  # the file's size and st_mtime_ns when hashed (build/workspace/scan.py change
    )
    source_mtime_ns: int | None = None  # detection); None: not recorded (refused, or too recent to trust)
    links_hash: str | None = None

    def to_sql(self) -> dict[str, Any]:
        """The row as `evidence_resource` columns (a shallow copy: `asdict`'s deep copy is slow)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["source_root_relative_path"] = out.pop("path")
        out["owner_document_path"] = out.pop("owner")
        out["warnings_json"] = json.dumps(out.pop("warnings"), ensure_ascii=False)
        return out

    # evidence_resource columns in field order: `from_values` reads `SELECT <SQL_COLUMNS>` rows by position
    SQL_COLUMNS: ClassVar[str] = (
        "resource_id, source_root_relative_path, owner_document_path, kind, status, provider, "
        "provider_version, "
        "source_hash, artifact_path, source_map_path, error_code, error_message, page_count, block_count, "
        "warnings_json, updated_at_ms, title, source_size, source_mtime_ns, links_hash"
    )

    @classmethod
    def select(
        cls, conn: sqlite3.Connection, ids: Iterable[str] | None = None, by_path: bool = False
    ) -> Iterator[tuple]:
        """The `evidence_resource` rows as `SQL_COLUMNS` value tuples (for `from_values`): every row, or
        those with these resource ids; in path order if `by_path` (SQLite's BINARY order of UTF-8)."""
        cursor = conn.cursor()
        cursor.row_factory = None
        sql = f"SELECT {cls.SQL_COLUMNS} FROM evidence_resource"
        if ids is not None:
            sql += " WHERE resource_id IN (SELECT value FROM json_each(?))"
        if by_path:
            sql += " ORDER BY source_root_relative_path"
        return cursor.execute(sql, [] if ids is None else [json.dumps(sorted(ids))])

    @classmethod
    def from_values(cls, v: Sequence[Any]) -> "ResourceRow":
        """A row selected as `SQL_COLUMNS` (a tuple or an `sqlite3.Row`)."""
        return cls(*v[:14], json.loads(v[14]) if v[14] != "[]" else [], *v[15:])

    @classmethod
    def from_sql(cls, row: sqlite3.Row) -> "ResourceRow":
        return cls(
            resource_id=row["resource_id"],
            path=row["source_root_relative_path"],
            owner=row["owner_document_path"],
            kind=row["kind"],
            status=row["status"],
            provider=row["provider"],
            provider_version=row["provider_version"],
            source_hash=row["source_hash"],
            artifact_path=row["artifact_path"],
            source_map_path=row["source_map_path"],
            error_code=row["error_code"],
            error_message=row["error_message"],
            page_count=row["page_count"],
            block_count=row["block_count"],
            warnings=json.loads(row["warnings_json"]) if row["warnings_json"] != "[]" else [],
            updated_at_ms=row["updated_at_ms"],
            title=row["title"],
            source_size=row["source_size"],
            source_mtime_ns=row["source_mtime_ns"],
            links_hash=row["links_hash"],
        )


@dataclass(frozen=True)
class NoteLink:
    """A link as written in a note (Markdown provider's `Block.links`), with the block it sits in."""

    source_block_id: str
    target: str
    kind: str  # link | image | wikilink | embed | tag | alias
    label: str | None = None


class LinkRow(TypedDict):
    """One `evidence_link` row: a note's link and how it resolved."""

    resource_id: str
    source_block_id: str
    target: str
    kind: str
    target_path: str | None  # resolved root-relative path; None if unresolved or external
    problem: str | None
    label: str | None


class EdgeRow(TypedDict):
    """One `evidence_edge` row; every edge comes from a locatable block (SPEC §6)."""

    edge_id: str
    from_id: str
    to_id: str
    edge_type: str
    source_block_id: str
    confidence: float
    created_by: str
    resource_id: str  # whose artifact produced it (replaced with it)


class ProviderError(Exception):
    """A per-resource failure with a stable code (recorded, never fatal to the build)."""

    def __init__(self, code: str, message: str):
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"
