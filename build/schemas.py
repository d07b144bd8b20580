"""The JSON Schemas of our contracts (`schemas/`)."""

from __future__ import annotations

import json
from functools import lru_cache

from mnote_evidence.build.assets import asset_dir


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """`name` is a file in schemas/, e.g. 'locator.schema.json'."""
    return json.loads((asset_dir("schemas") / name).read_text("utf-8"))
