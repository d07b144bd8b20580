"""The one provider interface (SPEC §3).

A provider turns the bytes of one file into a `ParsedResourceArtifact`. It never
writes the index or sidecars, and it raises `ProviderError(code, message)` for
a file it cannot read, so the pipeline can record it and go on. It is built as
`Provider(ocr)` with the build's `OcrSettings` (ignored by formats without OCR)
and registered for its suffixes in `build/core/formats.py`. A provider reads only
`item.full_path`: the workspace's file, or the shipped bytes of it (`shipped_input`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def shipped_input(path: str, source_hash: str, data: bytes) -> Iterator[ParseInput]:
    """A `ParseInput` of a file's bytes carried to a machine without the workspace: the bytes written at
    the same relative path under a private temporary folder (the only file there), removed after. An
    artifact names only the relative path, so it is the one a local parse of the same bytes gives."""
    with tempfile.TemporaryDirectory(prefix="mnote-parse-") as tmp:
        root = Path(tmp)
        full = (root / path).resolve()
        if not full.is_relative_to(root.resolve()):
            raise ValueError(f"a shipped path must stay inside its folder: {path!r}")
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(data)
        yield ParseInput(root, path, source_hash)


class Provider(Protocol):
    name: str
    kind: str

    def version(self) -> str:
        """Changes whenever output for the same bytes may change (invalidates caches)."""

    def parse(self, item: ParseInput) -> ParsedResourceArtifact: ...
