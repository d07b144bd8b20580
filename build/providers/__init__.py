"""Provider registry: one module per format; the pipeline asks `provider_for`."""

from __future__ import annotations

from mnote_evidence.build.model import KIND_IMAGE, KIND_MARKDOWN, KIND_OFFICE, KIND_PDF
from mnote_evidence.build.ocr.settings import OcrSettings
from mnote_evidence.build.providers.base import ParseInput, Provider
from mnote_evidence.build.providers.docx import DocxProvider
from mnote_evidence.build.providers.image import ImageProvider
from mnote_evidence.build.providers.markdown import MarkdownProvider
from mnote_evidence.build.providers.pdf import PdfProvider

_FACTORIES = {
    KIND_MARKDOWN: lambda ocr: MarkdownProvider(),
    KIND_PDF: PdfProvider,
    KIND_OFFICE: lambda ocr: DocxProvider(),
    KIND_IMAGE: ImageProvider,
}


def provider_for(kind: str, ocr: OcrSettings | None = None) -> Provider | None:
    factory = _FACTORIES.get(kind)
    return factory(ocr or OcrSettings()) if factory else None


def providers_by_kind(ocr: OcrSettings | None = None) -> dict[str, Provider]:
    """Every registered provider, by the resource kind it parses."""
    return {kind: factory(ocr or OcrSettings()) for kind, factory in _FACTORIES.items()}


__all__ = ["ParseInput", "Provider", "provider_for", "providers_by_kind"]
