"""OCR settings for a build, and the cache that makes OCR run once per distinct input.

An entry is reused only if this installation sealed it (`build/core/trust.py`, bound to its engine
version and key) and it is a regular file reached through real folders (`fsutil.read_inside`); it is
written only through real folders below the workspace (or the cache folder the user named): an entry
that cannot be written is skipped, the OCR result is still used. A parse run on a machine without the
workspace (`build/parse/executors/`) reads and writes a `ShippedCache` instead: the entries the build
process read and checked for its file, and the new ones, which the build process seals and stores.
"""

from __future__ import annotations

import hashlib
import json
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from mnote_evidence.build.core.fsutil import atomic_write_text, path_problem, read_inside
from mnote_evidence.build.core.trust import is_sealed, seal
from mnote_evidence.build.parse.ocr.normalize import OcrLine
from mnote_evidence.build.parse.sidecars import dumps

CACHE_DIR = ".mnote/ocr-cache"
MAX_ENTRY_BYTES = 64 << 20  # an entry past this is not read back: the image is read again


@dataclass(frozen=True)
class OcrSettings:
    engine: str = "rapidocr"  # rapidocr | tesseract | mineru | none
    pdf_dpi: int = 200
    mineru_url: str | None = None
    allow_upload: bool = False  # MinerU sends files to a remote service: only when the user says so
    fallback: str | None = None
    cache_dir: str | None = None  # default: <workspace>/.mnote/ocr-cache

    @property
    def enabled(self) -> bool:
        return self.engine != "none"


@dataclass
class ShippedCache:
    """OCR cache entries carried with a shipped parse: (engine version, key) -> lines as JSON objects."""

    entries: dict[tuple[str, str], list[dict]] = field(default_factory=dict)
    new: dict[tuple[str, str], list[dict]] = field(default_factory=dict)


SHIPPED: ContextVar[ShippedCache | None] = ContextVar("mnote_shipped_ocr_cache", default=None)


def _base(root: Path, settings: OcrSettings) -> Path:
    """The folder below which the cache is read and written: the user's cache folder, else the root."""
    return Path(settings.cache_dir) if settings.cache_dir else root


def cache_path(root: Path, settings: OcrSettings, engine_version: str, key: str) -> Path:
    base = Path(settings.cache_dir) if settings.cache_dir else root / CACHE_DIR
    return base / hashlib.sha256(engine_version.encode()).hexdigest()[:12] / f"{key}.json"


def _context(engine_version: str, key: str) -> str:
    return f"ocr-cache|{engine_version}|{key}"


def cached_lines(root: Path, settings: OcrSettings, engine_version: str, key: str) -> list[OcrLine] | None:
    shipped = SHIPPED.get()
    if shipped is not None:
        found = shipped.entries.get((engine_version, key))
        return None if found is None else [OcrLine(**line) for line in found]
    raw = read_inside(_base(root, settings), cache_path(root, settings, engine_version, key), MAX_ENTRY_BYTES)
    if raw is None or not is_sealed(raw, _context(engine_version, key)):
        return None
    try:
        return [OcrLine(**line) for line in json.loads(raw)["lines"]]
    except (ValueError, KeyError, TypeError):
        return None


def store_lines(
    root: Path, settings: OcrSettings, engine_version: str, key: str, lines: list[OcrLine]
) -> None:
    shipped = SHIPPED.get()
    if shipped is not None:
        shipped.new[(engine_version, key)] = [line.__dict__ for line in lines]
        return
    doc = {"engine": engine_version, "lines": [line.__dict__ for line in lines]}
    try:
        atomic_write_text(
            cache_path(root, settings, engine_version, key),
            seal(dumps(doc), _context(engine_version, key)),
            _base(root, settings),
        )
    except OSError as exc:
        if path_problem(exc) is None:
            raise
