"""Folders that ship beside the code: `schemas/` and `site_templates/`, siblings of `build/` in a
checkout and of `mnote_evidence/build/` in a wheel (pyproject maps them to the same place)."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def asset_dir(name: str) -> Path:
    """`schemas` or `site_templates`."""
    candidate = _HERE.parent.parent / name  # build/core/ -> beside build/
    if candidate.is_dir():
        return candidate
    raise FileNotFoundError(f"{name}/ not found next to the build package (reinstall mnote-evidence)")
