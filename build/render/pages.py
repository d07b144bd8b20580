"""The site's page rules (SPEC §8): one function per page type, chosen through a dict.

Like markdown-it-py's renderer, `RULES` maps a rule name to a function; the format registry names the
rule for each format, and `render/site.py` looks it up, raising `UnknownKind` when there is none. A
rule gets the site, the resource row, the page context and the parsed artifact, and returns HTML.
Invariants: block ids come from the artifact; every URL is relative; a rule never writes files.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mnote_evidence.build.core.model import STATUS_STALE, ParsedResourceArtifact
from mnote_evidence.build.core.model import ResourceRow as Resource
from mnote_evidence.build.core.urls import relative_url
from mnote_evidence.build.markdown.comments import blank_comments
from mnote_evidence.build.markdown.encoding import decode_note
from mnote_evidence.build.markdown.limits import MAX_EMBEDDED_CHARS_PER_NOTE
from mnote_evidence.build.render import copies, page_images
from mnote_evidence.build.render.note_html import BlockMismatch, compile_note, run_program
from mnote_evidence.build.render.note_links import NoteLinks
from mnote_evidence.build.render.note_map import NoteMap
from mnote_evidence.build.render.note_programs import load_program
from mnote_evidence.build.workspace.links import LinkResolver

if TYPE_CHECKING:
    from jinja2 import Environment


class _Site(Protocol):
    """What a rule reads from the site being rendered (`render/site.py`, which imports this module)."""

    root: Path
    env: Environment
    resolver: LinkResolver
    note_links: NoteLinks
    programs: Path | None
    options: Any
    report: Any


PageRule = Callable[[_Site, Resource, dict[str, Any], ParsedResourceArtifact | NoteMap, str], str]


def note_body(
    site: _Site, res: Resource, artifact: NoteMap, page: str, aliases: dict[str, list[str]]
) -> str | None:
    """A note's HTML with its links relative to `page` (its own page, or the front page);
    None when the note does not match its indexed blocks (recorded as `note_changed`); embeds past the
    page's embed budget are recorded as `embeds_capped`. The blocks
    themselves are read only when the note is compiled here (`render/note_map.py`)."""
    try:
        text = blank_comments(decode_note((site.root / res.path).read_bytes())[0])  # as the provider reads it
        program = load_program(site.programs, text, artifact.shape) or compile_note(text, artifact.blocks)
        body, capped = run_program(program, res.path, aliases, site.note_links, page)
    except (OSError, BlockMismatch) as exc:  # changed or deleted after the index was written
        site.report.problems.append({"path": res.path, "code": "note_changed", "message": str(exc)})
        return None
    if capped:
        site.report.problems.append(
            {
                "path": res.path,
                "code": "embeds_capped",
                "message": f"{capped} embeds are shown as links: a page shows at most "
                f"{MAX_EMBEDDED_CHARS_PER_NOTE:,} characters of embedded text",
            }
        )
    return body


def note_title(res: Resource, artifact: NoteMap) -> str:
    """Front matter `title`, else the first heading (the provider's choice), else the file name."""
    return artifact.title or posixpath.splitext(posixpath.basename(res.path))[0]


def note(site: _Site, res: Resource, ctx: dict[str, Any], artifact: NoteMap, page: str) -> str:
    """A Markdown note: its own HTML with a block anchor on every block (its indexed blocks when it changed
    or was deleted since: the only page that shows `blocks`)."""
    # a deleted note (stale) is shown from its indexed blocks: its file is gone, nothing to compile
    body = None if res.status == STATUS_STALE else note_body(site, res, artifact, page, ctx["aliases"])
    ctx["title"] = note_title(res, artifact)
    ctx.update({"body": body, "blocks": artifact.blocks if body is None else []})
    return site.env.get_template("note.html").render(ctx)


def _paged(
    site: _Site, ctx: dict[str, Any], artifact: ParsedResourceArtifact, image: Callable[[int], str]
) -> str:
    by_page: dict[int, list] = {p.page: [] for p in artifact.pages}
    for block in artifact.blocks:
        by_page[block.page].append(block)
    ctx["pages"] = [
        {"n": p.page, "width": p.width, "height": p.height, "image": image(p.page), "blocks": by_page[p.page]}
        for p in artifact.pages
    ]
    return site.env.get_template("paged.html").render(ctx)


def pdf(site: _Site, res: Resource, ctx: dict[str, Any], artifact: ParsedResourceArtifact, page: str) -> str:
    """A PDF: one rendered image per page, block boxes over it; pages past the cap
    (`RenderOptions.max_page_images`) have no image ("" : the template shows a notice)."""
    settings, cap = site.options.images, site.options.max_page_images
    folder = page_images.image_folder(res.source_hash, settings)
    ctx["max_page_images"] = cap
    return _paged(
        site,
        ctx,
        artifact,
        lambda n: relative_url(page, f"{folder}/{page_images.image_name(n, settings)}") if n <= cap else "",
    )


def image(
    site: _Site, res: Resource, ctx: dict[str, Any], artifact: ParsedResourceArtifact, page: str
) -> str:
    """An image: the original file as the one page, OCR line boxes over it."""
    return _paged(site, ctx, artifact, lambda n: ctx["source_url"])


def document(
    site: _Site, res: Resource, ctx: dict[str, Any], artifact: ParsedResourceArtifact, page: str
) -> str:
    """A flowing document (DOCX): headings, paragraphs and tables, each block anchored."""
    levels = {s.id: s.level for s in artifact.sections}
    items: list[dict[str, Any]] = []
    for block in artifact.blocks:
        if block.type == "table_row":
            if not items or items[-1]["type"] != "table":
                items.append({"type": "table", "rows": []})
            items[-1]["rows"].append({"block": block, "cells": block.text.split(" | ")})
        else:
            level = min(levels.get(block.section_id, 1) + 1, 6) if block.type == "heading" else None
            items.append({"type": block.type, "block": block, "level": level})
    ctx["items"] = _with_pictures(site, res, items, page)
    return site.env.get_template("docx.html").render(ctx)


def _with_pictures(
    site: _Site, res: Resource, items: list[dict[str, Any]], page: str
) -> list[dict[str, Any]]:
    """`items` with the document's pictures at their place: after the text of their paragraph, else
    (a paragraph holding only pictures) before the first item of a later paragraph."""
    found = copies.document_pictures(site.root, res.path)
    if not found:
        return items
    paths = copies.picture_paths(res.source_hash or "", found)
    out: list[dict[str, Any]] = []
    pending = list(found)

    def place(before: int | None) -> None:  # the pictures of paragraphs before `before` (None: all)
        while pending and (before is None or pending[0].paragraph < before):
            pic = pending.pop(0)
            out.append({"type": "picture", "src": relative_url(page, paths[pic.part]), "alt": pic.alt})

    for item in items:
        block = item.get("block") or item["rows"][0]["block"]
        place(block.paragraph_index if item["type"] != "table" else block.paragraph_index + 1)
        out.append(item)
        if item["type"] in ("paragraph", "heading"):
            place(block.paragraph_index + 1)
    place(None)
    return out


RULES: dict[str, PageRule] = {"note": note, "pdf": pdf, "image": image, "document": document}
