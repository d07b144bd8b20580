"""Folders that ship beside the code: the repo's own in a checkout, `build/_<name>` in a wheel."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def asset_dir(name: str) -> Path:
    """`schemas` or `site_templates`."""
    for candidate in (_HERE.parent / name, _HERE / f"_{name}"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"{name}/ not found next to the build package (reinstall mnote-evidence)")
