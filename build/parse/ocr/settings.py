"""OCR settings for a build, and the cache that makes OCR run once per distinct input."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from mnote_evidence.build.core.fsutil import atomic_write_text
from mnote_evidence.build.parse.ocr.normalize import OcrLine

CACHE_DIR = ".mnote/ocr-cache"


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


def cache_path(root: Path, settings: OcrSettings, engine_version: str, key: str) -> Path:
    base = Path(settings.cache_dir) if settings.cache_dir else root / CACHE_DIR
    return base / hashlib.sha256(engine_version.encode()).hexdigest()[:12] / f"{key}.json"


def cached_lines(root: Path, settings: OcrSettings, engine_version: str, key: str) -> list[OcrLine] | None:
    try:
        doc = json.loads(cache_path(root, settings, engine_version, key).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return [OcrLine(**line) for line in doc["lines"]]


def store_lines(
    root: Path, settings: OcrSettings, engine_version: str, key: str, lines: list[OcrLine]
) -> None:
    doc = {"engine": engine_version, "lines": [line.__dict__ for line in lines]}
    atomic_write_text(
        cache_path(root, settings, engine_version, key), json.dumps(doc, ensure_ascii=False) + "\n"
    )
