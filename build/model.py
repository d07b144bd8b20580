"""The data every stage passes along: one definition, matching `schemas/`.

Providers produce a `ParsedResourceArtifact`; the sidecar stage serialises it to
`source-map.json` (schema `mnote.resource_source_map.v1`); the indexer turns its
blocks into rows and `EvidenceLocator`s (schema `mnote.evidence_locator.v1`).
Nothing else invents these shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SOURCE_MAP_SCHEMA = "mnote.resource_source_map.v1"
LOCATOR_SCHEMA = "mnote.evidence_locator.v1"

# Resource kinds as they appear in locators (SPEC §7) and in evidence_resource.kind.
KIND_MARKDOWN = "markdown"
KIND_PDF = "pdf"
KIND_IMAGE = "image"
KIND_OFFICE = "office"
KIND_OTHER = "other"

# evidence_resource.status
STATUS_OK = "ok"
STATUS_STALE = "stale"
STATUS_ERROR = "error"
STATUS_UNSUPPORTED = "unsupported"


@dataclass
class Block:
    """One citeable unit: a paragraph, heading, list item, table row, code block..."""

    id: str
    type: str
    text: str
    page: int | None = None  # 1-based (PDF, image)
    bbox: list[float] | None = None  # [x0, y0, x1, y1], top-left origin
    char_range: list[int] | None = None  # [start, end) in the resource's text
    line_range: list[int] | None = None  # 1-based inclusive (Markdown)
    paragraph_index: int | None = None  # 1-based body paragraph ordinal (DOCX)
    para_id: str | None = None  # DOCX w14:paraId
    section_id: str | None = None
    confidence: float | None = None  # OCR lines: the engine's 0..1 confidence
    links: list[dict[str, str]] = field(default_factory=list)  # Markdown: [{"target", "kind"}]

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
        ):
            if value is not None:
                out[key] = value
        if self.links:
            out["links"] = self.links
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
            links=data.get("links", []),
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


@dataclass
class ParsedResourceArtifact:
    """What a provider returns: text + source map + blocks + sections (SPEC §3)."""

    kind: str
    provider: str
    provider_version: str
    source_path: str  # root-relative, '/'-separated
    source_hash: str  # "sha256:<hex>"
    text: str  # the parsed text (`*.parse.md` / `*.ocr.md`); "" for notes
    blocks: list[Block]
    sections: list[Section]
    pages: list[Page] = field(default_factory=list)
    warnings: list[Warning_] = field(default_factory=list)
    from_ocr: bool = False

    def section_by_id(self) -> dict[str, Section]:
        return {s.id: s for s in self.sections}


class ProviderError(Exception):
    """A per-resource failure with a stable code (recorded, never fatal to the build)."""

    def __init__(self, code: str, message: str):
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"
