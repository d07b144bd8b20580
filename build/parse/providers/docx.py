"""Word `.docx` via python-docx (SPEC §3): paragraph precision, never a fake page.

Blocks: headings, paragraphs and table rows (cells joined by ` | `) in body order, each with its
heading path, its 1-based body-paragraph ordinal (`paragraphIndex`, empty paragraphs counted) and
Word's `w14:paraId` when present; a row takes the `paragraphIndex` of the paragraph before its table.
Footnotes, endnotes and comments follow the paragraph that references them, text boxes the paragraph
holding the shape (`docx_parts.py`). A package python-docx refuses is read from `word/document.xml`
directly (`docx_repaired`); `docx_corrupt` only without a readable body. Heading levels come from one
map built from `styles.xml` (with `basedOn`). Safety: a zip whose entries declare or really inflate
past `MAX_UNCOMPRESSED` is refused as a zip bomb (`zipbudget.py`, in constant memory).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from mnote_evidence.build.core.formats import format_named
from mnote_evidence.build.core.ids import BlockIdAllocator
from mnote_evidence.build.core.model import (
    KIND_OFFICE,
    Block,
    ParsedResourceArtifact,
    ProviderError,
    Warning_,
)
from mnote_evidence.build.parse.libraries import python_docx
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.providers import provider_version
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.docx_parts import (
    W,
    notes,
    paragraph_text,
    raw_document,
    references,
    text_box_paragraphs,
)
from mnote_evidence.build.parse.sections import SectionTree
from mnote_evidence.build.parse.zipbudget import OverBudget, check_inflated_size

MAX_UNCOMPRESSED = 512 * 1024 * 1024

W14_PARA_ID = "{http://schemas.microsoft.com/office/word/2010/wordml}paraId"
_HEADING_NAME = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)


def check_zip(path: Path) -> None:
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ProviderError("docx_corrupt", f"not a valid .docx (zip) file: {exc}") from exc
    names = {i.filename for i in infos}
    if "word/document.xml" not in names:
        raise ProviderError("docx_corrupt", "zip file has no word/document.xml; not a Word document")
    total = sum(i.file_size for i in infos)
    try:
        if total <= MAX_UNCOMPRESSED:
            check_inflated_size(path, infos, MAX_UNCOMPRESSED)
    except OverBudget as exc:
        total = exc.inflated
    except (zipfile.BadZipFile, OSError) as exc:
        raise ProviderError("docx_corrupt", f"damaged .docx (zip) file: {exc}") from exc
    if total > MAX_UNCOMPRESSED:
        raise ProviderError(
            "docx_zip_bomb",
            f"refusing to inflate {total / 2**20:.0f} MiB "
            f"(limit {MAX_UNCOMPRESSED / 2**20:.0f} MiB); the file is a zip bomb "
            "or far larger than any real document",
        )


def heading_levels(styles_root) -> dict[str, int]:
    """styleId -> heading level (1-based) for every paragraph style that is a heading."""
    styles = {}
    if styles_root is None:
        return {}
    for el in styles_root.iter(f"{W}style"):
        sid = el.get(f"{W}styleId")
        name_el = el.find(f"{W}name")
        based = el.find(f"{W}basedOn")
        outline = el.find(f"{W}pPr/{W}outlineLvl")
        styles[sid] = (
            name_el.get(f"{W}val") if name_el is not None else "",
            based.get(f"{W}val") if based is not None else None,
            int(outline.get(f"{W}val")) + 1 if outline is not None else None,
        )

    def level(sid: str, depth: int = 0) -> int | None:
        if sid not in styles or depth > 10:
            return None
        name, based, outline = styles[sid]
        m = _HEADING_NAME.match(name or "")
        if m:
            return int(m.group(1))
        if name and name.lower() == "title":
            return 1
        if outline is not None and outline <= 9:
            return outline
        return level(based, depth + 1) if based else None

    return {sid: lvl for sid in styles if (lvl := level(sid)) is not None}


def _paragraph_level(p, levels: dict[str, int]) -> int | None:
    ppr = p.find(f"{W}pPr")
    if ppr is None:
        return None
    outline = ppr.find(f"{W}outlineLvl")
    if outline is not None and int(outline.get(f"{W}val")) < 9:
        return int(outline.get(f"{W}val")) + 1
    style = ppr.find(f"{W}pStyle")
    return levels.get(style.get(f"{W}val")) if style is not None else None


def _row_text(tr) -> str:
    cells = []
    for tc in tr.iterchildren(f"{W}tc"):
        texts = (paragraph_text(p).strip() for p in tc.iter(f"{W}p"))
        cells.append(" ".join(t for t in texts if t))
    return " | ".join(cells)


class DocxProvider:
    name = "python-docx"
    kind = KIND_OFFICE

    def __init__(self, ocr: OcrSettings | None = None):
        pass

    def version(self) -> str:
        return provider_version(format_named("docx"))

    def _open(self, path: Path) -> tuple[object, object, list[Warning_]]:
        """(body element, styles root, warnings): python-docx first, the raw XML when it refuses."""
        try:
            document = python_docx().Document(str(path))
            return document.element.body, document.styles.element, []
        except Exception as exc:  # PackageNotFoundError, KeyError (missing part), malformed XML...
            refusal = f"{type(exc).__name__}: {exc}"
        body, styles = raw_document(path)
        if body is None:
            raise ProviderError(
                "docx_corrupt",
                f"python-docx cannot open it ({refusal}) and word/document.xml has no readable body",
            )
        return (
            body,
            styles,
            [
                Warning_(
                    "docx_repaired",
                    f"python-docx refused the package ({refusal[:200]}); "
                    "the text was read from word/document.xml directly",
                )
            ],
        )

    def parse(self, item: ParseInput) -> ParsedResourceArtifact:
        check_zip(item.full_path)
        body, styles, warnings = self._open(item.full_path)
        levels = heading_levels(styles)
        attached = notes(item.full_path, W14_PARA_ID)
        numbers = {kind: 0 for kind in attached}
        new_id = BlockIdAllocator(item.path)
        tree = SectionTree(item.path)
        blocks: list[Block] = []
        parts: list[str] = []
        length = 0
        paragraph_index = 0

        def add(kind: str, text: str, para_id: str | None, prefix: str = "", note: str | None = None) -> None:
            nonlocal length
            start = length + len(prefix)
            parts.append(prefix + text + "\n\n")
            length += len(prefix) + len(text) + 2
            blocks.append(
                tree.add(
                    Block(
                        new_id(kind, text),
                        kind,
                        text,
                        paragraph_index=max(paragraph_index, 1),
                        para_id=para_id,
                        char_range=[start, start + len(text)],
                        note=note,
                    )
                )
            )

        def add_attached(el) -> None:
            """Text boxes anchored in body paragraph `el`, then the notes and comments it references."""
            where = f"paragraph {max(paragraph_index, 1)}"
            for p in text_box_paragraphs(el):
                if text := paragraph_text(p).strip():
                    add("text_box", text, p.get(W14_PARA_ID), "[text box] ", f"text box in {where}")
            for kind, ref_id in references(el):
                found = attached[kind].get(ref_id)
                if found is None:
                    continue
                numbers[kind] += 1
                n = numbers[kind]
                if kind == "comment":
                    by = f" by {found.author}" if found.author else ""
                    add(kind, found.text, found.para_id, f"[comment{by}] ", f"comment{by} on {where}")
                else:
                    add(kind, found.text, found.para_id, f"[^{kind[0]}{n}]: ", f"{kind} {n} to {where}")

        for el in body.iterchildren():
            if el.tag == f"{W}p":
                paragraph_index += 1
                text = paragraph_text(el).strip()
                if text:
                    level = _paragraph_level(el, levels)
                    if level is not None:
                        tree.open(level, text)
                        add("heading", text, el.get(W14_PARA_ID), "#" * min(level, 6) + " ")
                    else:
                        add("paragraph", text, el.get(W14_PARA_ID))
                add_attached(el)
            elif el.tag == f"{W}tbl":
                for tr in el.iterchildren(f"{W}tr"):
                    text = _row_text(tr)
                    if text.replace("|", "").strip():
                        first = tr.find(f".//{W}p")
                        add("table_row", text, first.get(W14_PARA_ID) if first is not None else None)
                    for p in tr.iter(f"{W}p"):
                        add_attached(p)
        if not blocks:
            raise ProviderError("docx_no_text", "Word document has no text to index")
        return ParsedResourceArtifact(
            kind=KIND_OFFICE,
            provider=self.name,
            provider_version=self.version(),
            source_path=item.path,
            source_hash=item.source_hash,
            text="".join(parts),
            blocks=blocks,
            sections=tree.sections,
            warnings=warnings + tree.warnings,
        )
