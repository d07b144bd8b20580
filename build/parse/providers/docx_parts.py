"""The parts of a Word package beside the body text (SPEC §3): notes, comments, text boxes, raw XML.

Read straight from the zip with a safe lxml parser (no entities, no network), so they work whether
or not python-docx accepts the package:
- footnotes, endnotes and comments: found through `word/_rels/document.xml.rels` (standard part
  names when the relationships are unreadable), keyed by their `w:id`; each becomes a block attached
  to the body paragraph that references it;
- text boxes (`w:txbxContent`): their paragraphs are blocks of their own, anchored on the paragraph
  that holds the shape; the VML copy inside `mc:Fallback` is skipped (Word writes each box twice);
- `raw_document`: the body of `word/document.xml` (recovering what lxml can) when python-docx
  refuses the package, e.g. for a relationship that points at a missing image.
"""

from __future__ import annotations

import posixpath
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from mnote_evidence.build.parse.libraries import lxml_etree

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
NOTE_KINDS = {"footnote": "footnotes", "endnote": "endnotes", "comment": "comments"}
_DEFAULT_PART = {
    "footnotes": "word/footnotes.xml",
    "endnotes": "word/endnotes.xml",
    "comments": "word/comments.xml",
}
_REFERENCE = {
    f"{W}footnoteReference": "footnote",
    f"{W}endnoteReference": "endnote",
    f"{W}commentReference": "comment",
}
_SKIPPED = (f"{W}txbxContent", f"{MC}Fallback")

_TEXT_TAGS = (f"{W}t", f"{W}tab", f"{W}br", f"{W}cr", f"{W}noBreakHyphen")
_TEXT_OF = {f"{W}tab": "\t", f"{W}br": "\n", f"{W}cr": "\n", f"{W}noBreakHyphen": "-"}


def paragraph_text(p) -> str:
    """Visible text of a `w:p`: runs, hyperlinks, tabs, breaks; deleted text (`w:delText`), field codes
    (`w:instrText`) and text-box content (its own blocks) excluded. One C-level iteration, not
    python-docx's per-run XPath."""
    if next(p.iter(*_SKIPPED), None) is None:
        elements = p.iter(*_TEXT_TAGS)
    else:
        elements = (el for el in p.iter(*_TEXT_TAGS) if not _inside(el, p, _SKIPPED))
    return "".join(el.text or "" if el.tag == _TEXT_TAGS[0] else _TEXT_OF[el.tag] for el in elements)


def _inside(el, stop, tags) -> bool:
    for ancestor in el.iterancestors():
        if ancestor is stop:
            return False
        if ancestor.tag in tags:
            return True
    return False


def text_box_paragraphs(p) -> list:
    """The `w:p` elements of the text boxes anchored in body paragraph `p` (the mc:Choice copy only)."""
    out = []
    for box in p.iter(f"{W}txbxContent"):
        if not _inside(box, p, (f"{MC}Fallback", f"{W}txbxContent")):
            out.extend(box.iterchildren(f"{W}p"))
    return out


def references(p) -> list[tuple[str, str]]:
    """(block type, w:id) of the footnote, endnote and comment references in `p`, in order."""
    return [(_REFERENCE[el.tag], el.get(f"{W}id")) for el in p.iter(*_REFERENCE)]


@dataclass
class Note:
    text: str
    para_id: str | None
    author: str | None = None


@cache
def _parser():
    """A safe lxml parser (lxml loads with the first Word file read: build/parse/libraries.py)."""
    return lxml_etree().XMLParser(resolve_entities=False, no_network=True, recover=True, huge_tree=False)


def _xml(zf: zipfile.ZipFile, name: str):
    etree = lxml_etree()
    try:
        root = etree.fromstring(zf.read(name), _parser())
    except (KeyError, etree.XMLSyntaxError, ValueError, zipfile.BadZipFile, OSError):
        return None
    return root


def _note_parts(zf: zipfile.ZipFile) -> dict[str, str]:
    parts = dict(_DEFAULT_PART)
    rels = _xml(zf, "word/_rels/document.xml.rels")
    if rels is not None:
        for rel in rels.iter(_REL):
            kind = (rel.get("Type") or "").rsplit("/", 1)[-1]
            if kind in parts and rel.get("TargetMode") != "External":
                parts[kind] = posixpath.normpath(posixpath.join("word", rel.get("Target", "")))
    return parts


def notes(path: Path, w14_para_id: str) -> dict[str, dict[str, Note]]:
    """block type -> w:id -> Note, for the package's footnotes, endnotes and comments."""
    out: dict[str, dict[str, Note]] = {kind: {} for kind in NOTE_KINDS}
    with zipfile.ZipFile(path) as zf:
        parts = _note_parts(zf)
        for kind, rel_type in NOTE_KINDS.items():
            root = _xml(zf, parts[rel_type])
            if root is None:
                continue
            for el in root.iterchildren(f"{W}{kind}"):
                paras = list(el.iter(f"{W}p"))
                text = "\n".join(t for p in paras if (t := paragraph_text(p).strip()))
                if text:
                    out[kind][el.get(f"{W}id")] = Note(
                        text, paras[0].get(w14_para_id) if paras else None, el.get(f"{W}author") or None
                    )
    return out


def raw_document(path: Path):
    """(body element, styles root or None) read directly from the package; body None if unreadable."""
    with zipfile.ZipFile(path) as zf:
        root = _xml(zf, "word/document.xml")
        styles = _xml(zf, "word/styles.xml")
    body = root.find(f"{W}body") if root is not None else None
    return body, styles


A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
WP = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")  # what a browser shows (no EMF, SVG)
MAX_PICTURE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Picture:
    """A picture of the body: its paragraph (1-based, counted as `paragraphIndex`), its part in the
    package (`word/media/image1.png`) and its description (Word's alt text)."""

    paragraph: int
    part: str
    alt: str


def pictures(path: Path) -> list[Picture]:
    """The inline and floating pictures of the body's paragraphs, in order (not those in tables or
    text boxes); only parts a browser shows, stored inside the package, of at most
    `MAX_PICTURE_BYTES`. Nothing when the package cannot be read."""
    try:
        with zipfile.ZipFile(path) as zf:
            root = _xml(zf, "word/document.xml")
            rels = _xml(zf, "word/_rels/document.xml.rels")
            sizes = {i.filename: i.file_size for i in zf.infolist()}
    except (zipfile.BadZipFile, OSError):
        return []
    body = root.find(f"{W}body") if root is not None else None
    if body is None or rels is None:
        return []
    targets = {
        rel.get("Id"): posixpath.normpath(posixpath.join("word", rel.get("Target", "")))
        for rel in rels.iter(_REL)
        if rel.get("TargetMode") != "External"
    }
    out = []
    for n, p in enumerate(body.iterchildren(f"{W}p"), 1):
        for drawing in p.iter(f"{W}drawing"):
            if _inside(drawing, p, (f"{W}txbxContent",)):
                continue
            blip = next(drawing.iter(f"{A}blip"), None)
            part = targets.get(blip.get(f"{R}embed")) if blip is not None else None
            if (
                not part
                or not part.lower().endswith(PICTURE_SUFFIXES)
                or not 0 < sizes.get(part, 0) <= MAX_PICTURE_BYTES
            ):
                continue
            pr = next(drawing.iter(f"{WP}docPr"), None)
            alt = ((pr.get("descr") or pr.get("title") or "") if pr is not None else "").strip()
            out.append(Picture(n, part, alt))
    return out
