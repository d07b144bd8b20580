"""The wheel holds every package of the code and nothing else of the checkout.

`pyproject.toml` lists the packages (setuptools maps build/ and functions/ into one namespace); the
list must be every folder that holds code, so a new stage folder cannot be left out of the wheel
while it works in a checkout.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODE = {
    "mnote_evidence": "mnote_evidence",
    "build": "mnote_evidence.build",
    "functions": "mnote_evidence.functions",
}
DATA = {"mnote_evidence.schemas", "mnote_evidence.site_templates"}


def code_packages() -> set[str]:
    """Every folder of code in the checkout, as the package it installs as."""
    out = set()
    for folder, package in CODE.items():
        for init in (REPO / folder).rglob("*.py"):
            parts = init.parent.relative_to(REPO / folder).parts
            if "__pycache__" not in parts:
                out.add(".".join([package, *parts]))
    return out


def listed_packages() -> set[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    return set(config["tool"]["setuptools"]["packages"])


def test_every_folder_of_code_is_listed_for_the_wheel():
    assert listed_packages() - DATA == code_packages()


def test_every_folder_of_code_has_an_init():
    assert [p for p in code_packages() if not (REPO / _folder(p) / "__init__.py").is_file()] == []


def _folder(package: str) -> Path:
    parts = package.split(".")
    if parts[:2] in (["mnote_evidence", "build"], ["mnote_evidence", "functions"]):
        return Path(*parts[1:])
    return Path(*parts)


def test_the_wheel_holds_the_code_and_nothing_of_the_checkout(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True,
        cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("mnote_evidence-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packages = {n.rpartition("/")[0].replace("/", ".") for n in names if n.endswith(".py")}
    assert packages == code_packages()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"mnote_evidence"}
    assert any(n.startswith("mnote_evidence/schemas/") and n.endswith(".json") for n in names)
    assert any(n.startswith("mnote_evidence/site_templates/") and n.endswith(".html") for n in names)
    assert not [
        n for n in names if any(part in n.split("/") for part in ("tests", "bench", "content_fixtures"))
    ]
