"""Provider registry: one module per format; the pipeline asks `provider_for`."""

from __future__ import annotations

from build.model import KIND_IMAGE, KIND_MARKDOWN, KIND_OFFICE, KIND_PDF
from build.providers.base import ParseInput, Provider
from build.providers.docx import DocxProvider
from build.providers.image import ImageProvider
from build.providers.markdown import MarkdownProvider
from build.providers.pdf import PdfProvider

_REGISTRY: dict[str, Provider] = {
    KIND_MARKDOWN: MarkdownProvider(),
    KIND_PDF: PdfProvider(),
    KIND_OFFICE: DocxProvider(),
    KIND_IMAGE: ImageProvider(),
}


def provider_for(kind: str) -> Provider | None:
    return _REGISTRY.get(kind)


__all__ = ["ParseInput", "Provider", "provider_for"]
