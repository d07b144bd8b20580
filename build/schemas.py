"""Where the JSON Schemas of our contracts live (repo checkout or installed wheel)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

_CANDIDATES = (Path(__file__).resolve().parent.parent / "schemas", Path(__file__).resolve().parent / "_schemas")


def schema_dir() -> Path:
    for candidate in _CANDIDATES:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("schemas/ folder not found next to the build package")


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """`name` is a file in schemas/, e.g. 'locator.schema.json'."""
    return json.loads((schema_dir() / name).read_text("utf-8"))
