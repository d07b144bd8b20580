"""The one registry of file formats the build reads (SPEC §3): suffix -> kind, provider, page renderer.

Adding a format is one provider module under `build/parse/providers/` plus one `Format(...)` line in
`FORMATS` (docs/architecture.md). Invariants: a suffix belongs to at most one format (checked at
import); a file whose suffix is not registered is kind `other` and recorded `unsupported`, never sent
to a provider of another format. Data only: the query side reads kinds and suffixes without loading a
parser, and `build/parse/providers/` gets a provider's version without importing its module.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnote_evidence.build.core.model import NOTE_SUFFIXES, Kind, suffix_of


@dataclass(frozen=True)
class Format:
    name: str
    suffixes: tuple[str, ...]  # lower case, with the dot
    kind: Kind
    provider: str  # "<module under build/parse/providers>:<class>", imported on first use
    page: str
    # `provider_version` is made of the library's version, this code's revision (bumped when the same bytes
    # would parse differently) and the OCR engine's; kept here: every build asks every version
    library: str | None = None
    revision: str = ""
    ocr: bool = False


FORMATS: tuple[Format, ...] = (
    Format("markdown", NOTE_SUFFIXES, Kind.MARKDOWN, "markdown:MarkdownProvider", page="note"),
    Format(
        "pdf", (".pdf",), Kind.PDF, "pdf:PdfProvider", page="pdf", library="pymupdf", revision="9", ocr=True
    ),
    Format(
        "docx",
        (".docx",),
        Kind.OFFICE,
        "docx:DocxProvider",
        page="document",
        library="python-docx",
        revision="3",
    ),
    Format(
        "image",
        (".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".bmp"),
        Kind.IMAGE,
        "image:ImageProvider",
        page="image",
        library="pillow",
        revision="3",
        ocr=True,
    ),
)


def _by_suffix(formats: tuple[Format, ...]) -> dict[str, Format]:
    table: dict[str, Format] = {}
    for fmt in formats:
        for suffix in fmt.suffixes:
            if suffix != suffix.lower() or not suffix.startswith("."):
                raise ValueError(
                    f"format {fmt.name}: suffix {suffix!r} must be lower case and start with '.'"
                )
            if suffix in table:
                raise ValueError(f"suffix {suffix} is registered twice ({table[suffix].name}, {fmt.name})")
            table[suffix] = fmt
    if sum(fmt.kind == Kind.MARKDOWN for fmt in formats) != 1:  # the build gives all notes one version
        raise ValueError("exactly one format must read notes (kind markdown)")
    return table


BY_SUFFIX = _by_suffix(FORMATS)


def format_for(path: str) -> Format | None:
    """The format that reads `path` (root-relative or any path), by its suffix; None if none does."""
    return BY_SUFFIX.get(suffix_of(path).lower())


def kind_for(path: str) -> Kind:
    fmt = BY_SUFFIX.get(suffix_of(path).lower())
    return fmt.kind if fmt else Kind.OTHER


def suffixes(kind: Kind) -> tuple[str, ...]:
    """Every suffix read as `kind` (e.g. the image suffixes an embed may show inline)."""
    return tuple(s for fmt in FORMATS if fmt.kind == kind for s in fmt.suffixes)


def indexed_kinds() -> tuple[Kind, ...]:
    """Kinds some format produces, in `Kind` order: what a search may filter on."""
    kinds = {fmt.kind for fmt in FORMATS}
    return tuple(k for k in Kind if k in kinds)


def format_named(name: str) -> Format:
    """The registered format called `name` (looked up in `FORMATS` when asked)."""
    return next(fmt for fmt in FORMATS if fmt.name == name)
