"""Providers: one module per format, each implementing `base.Provider` (SPEC §3).

Which provider reads which suffix is the registry's (`build/core/formats.py`); here an entry
becomes a provider, imported on first use, and a version read from package metadata without
importing the provider (every build asks every provider's version: the unchanged-file check).
"""

from __future__ import annotations

import importlib
from functools import cache

from mnote_evidence.build.core import formats
from mnote_evidence.build.core.formats import Format
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.providers.base import ParseInput, Provider

__all__ = ["ParseInput", "Provider", "provider_for", "provider_version", "provider_versions"]


@cache
def provider_class(spec: str) -> type:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(f"mnote_evidence.build.parse.providers.{module}"), name)


def provider_for(path: str, ocr: OcrSettings | None = None) -> Provider | None:
    """A provider for `path`'s format, set up with the build's OCR settings; None if unsupported."""
    fmt = formats.format_for(path)
    return provider_class(fmt.provider)(ocr or OcrSettings()) if fmt else None


def provider_version(fmt: Format, ocr: OcrSettings | None = None) -> str:
    """The version of `fmt`'s provider: from the registry (library version `+m` revision, `+ocr:` the
    engine's) without importing the provider, unless the registry names no library."""
    ocr = ocr or OcrSettings()
    if fmt.library is None:
        return provider_class(fmt.provider)(ocr).version()
    from mnote_evidence.build.parse.libraries import library_version
    from mnote_evidence.build.parse.ocr.run import versioned

    base = f"{library_version(fmt.library)}+m{fmt.revision}"
    return versioned(base, ocr) if fmt.ocr else base


def provider_versions(ocr: OcrSettings | None = None) -> dict[str, str]:
    """Every provider's version by the resource kind it produces (`build_meta.provider_versions`);
    formats that share a kind are joined with '|' in registry order."""
    out: dict[str, str] = {}
    for fmt in formats.FORMATS:  # read when asked: the registry may be extended at run time
        version = provider_version(fmt, ocr)
        out[fmt.kind] = f"{out[fmt.kind]}|{version}" if fmt.kind in out else version
    return out
