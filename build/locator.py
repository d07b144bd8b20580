"""`EvidenceLocator` (schema `mnote.evidence_locator.v1`, SPEC §7): built here and only here."""

from __future__ import annotations

from mnote_evidence.build.model import KIND_MARKDOWN, KIND_OFFICE, LOCATOR_SCHEMA, Block, EvidenceLocator
from mnote_evidence.build.urls import page_url

OPEN_ACTION = "mnote.open_resource_locator"


def precision(kind: str, block: Block | None) -> str:
    if block is None:
        return "file"
    if block.bbox is not None and block.page is not None:
        return "page" if block.box_holds_text is False else "bbox"  # a box without the words is no box
    if kind == KIND_OFFICE or block.paragraph_index is not None:
        return "paragraph"
    if block.line_range is not None:
        return "line"
    return "file"


def locator(*, resource_path: str, kind: str, owner_path: str | None, source_map_path: str,
            block: Block | None, section_path: list[str]) -> EvidenceLocator:
    """The locator of `block` (or of the whole file when `block` is None). Absent stays absent."""
    out: EvidenceLocator = {  # type: ignore[typeddict-item]  # the rest follow, in schema order
        "schema": LOCATOR_SCHEMA,
        "ownerDocumentPath": owner_path if owner_path is not None else (
            resource_path if kind == KIND_MARKDOWN else None),
        "resourcePath": resource_path,
        "resourceKind": kind,
    }
    if block is not None:
        out["blockId"] = block.id
        bbox = None if block.box_holds_text is False else block.bbox
        for key, value in (("page", block.page), ("bbox", bbox), ("lineRange", block.line_range),
                           ("charRange", block.char_range), ("paragraphIndex", block.paragraph_index)):
            if value is not None:
                out[key] = value
    out["sectionPath"] = section_path
    out["sourceMapPath"] = source_map_path
    out["precision"] = precision(kind, block)
    out["openAction"] = {"type": OPEN_ACTION, "url": page_url(resource_path, block.id if block else None)}
    return out
