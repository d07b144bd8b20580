"""The one provider interface (SPEC §3).

A provider turns the bytes of one file into a `ParsedResourceArtifact`. It never
writes the index or sidecars, and it raises `ProviderError(code, message)` for
a file it cannot read, so the pipeline can record it and go on. It is built as
`Provider(ocr)` with the build's `OcrSettings` (ignored by formats without OCR)
and registered for its suffixes in `build/core/formats.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mnote_evidence.build.core.model import ParsedResourceArtifact


@dataclass(frozen=True)
class ParseInput:
    root: Path
    path: str
    source_hash: str

    @property
    def full_path(self) -> Path:
        return self.root / self.path


class Provider(Protocol):
    name: str
    kind: str

    def version(self) -> str:
        """Changes whenever output for the same bytes may change (invalidates caches)."""

    def parse(self, item: ParseInput) -> ParsedResourceArtifact: ...
