"""The JSON Schemas of our contracts (`schemas/`), published with the package (SPEC §5).

They reference each other by file name (`locator.schema.json#/$defs/...`), so a
validator needs all of them: `schema_names()` lists every one.
"""

from __future__ import annotations

import json
from functools import cache

from mnote_evidence.build.core.assets import asset_dir


def schema_names() -> list[str]:
    """Every schema file, e.g. ['locator.schema.json', 'search_response.schema.json', ...]."""
    return sorted(p.name for p in asset_dir("schemas").glob("*.schema.json"))


@cache
def load_schema(name: str) -> dict:
    """`name` is a file in schemas/, e.g. 'locator.schema.json'."""
    return json.loads((asset_dir("schemas") / name).read_text("utf-8"))
