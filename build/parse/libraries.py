"""The heavy libraries that read and draw PDFs, images and Word files, imported on first use.

The modules that use PyMuPDF, python-docx/lxml and Pillow call these accessors where they first open
a file (and import the modules themselves only for type checking), so a build that opens no such
file never pays for the import. Each accessor imports once and applies the settings every use relies
on: MuPDF's own error and warning lines off (a damaged file is a recorded error, not console noise);
Pillow's decompression-bomb guard at `pixels.MAX_PIXELS`. `library_version` reads a library's
version from its package metadata without importing it (every build asks every provider's version).
`tests/test_startup.py` checks which commands load them.
"""

from __future__ import annotations

import os
import re
import sys
from functools import cache
from types import ModuleType

from mnote_evidence.build.parse.pixels import MAX_PIXELS


@cache
def library_version(distribution: str) -> str:
    """An installed library's version, from its package metadata (e.g. "pymupdf" -> "1.28.2"): what
    `importlib.metadata.version` answers, which it is asked only when `_dist_info_version` cannot say."""
    found = _dist_info_version(distribution)
    if found is not None:
        return found
    from importlib.metadata import version  # slow to import: only where no dist-info folder answers

    return version(distribution)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _dist_info_version(distribution: str) -> str | None:
    """The `Version:` of `distribution`'s metadata folder in the first `sys.path` folder holding one,
    searched in order as `importlib.metadata` searches; None (ask it) when that is not exactly one
    `*.dist-info` folder with a `METADATA` file (an `.egg-info`, two versions, ...) or none is found."""
    want = _normal(distribution)
    for entry, found in _metadata_folders(tuple(sys.path)):
        if found is None:  # not a folder (a zip, a path hook's name): importlib.metadata may know better
            return None
        names = found.get(want)
        if not names:
            continue
        if len(names) > 1 or not names[0].lower().endswith(".dist-info"):
            return None
        return _metadata_version(os.path.join(entry or ".", names[0], "METADATA"))
    return None


@cache
def _metadata_folders(path: tuple[str, ...]) -> list[tuple[str, dict[str, list[str]] | None]]:
    """Per `sys.path` entry, its metadata folders by normalised distribution name (None: an entry that
    exists but is no folder; entries that do not exist are left out). Listed once per process."""
    out: list[tuple[str, dict[str, list[str]] | None]] = []
    for entry in path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            if entry and os.path.exists(entry):
                out.append((entry, None))
            continue
        found: dict[str, list[str]] = {}
        for n in names:
            if n.lower().endswith((".dist-info", ".egg-info")):
                found.setdefault(_normal(n.lower().rpartition(".")[0].partition("-")[0]), []).append(n)
        out.append((entry, found))
    return out


def _metadata_version(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    return None
                if line.startswith("Version:"):
                    return line[len("Version:") :].strip()
    except OSError:
        pass
    return None


@cache
def mupdf() -> ModuleType:
    """PyMuPDF (`pymupdf`, also known as fitz), set up for the build."""
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    return pymupdf


@cache
def pillow() -> ModuleType:
    """Pillow's `PIL.Image`, with the pixel guard set."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    return Image


@cache
def image_ops() -> ModuleType:
    """Pillow's `PIL.ImageOps` (EXIF rotation), the guard set as for `pillow`."""
    pillow()
    from PIL import ImageOps

    return ImageOps


@cache
def python_docx() -> ModuleType:
    """python-docx (`docx`)."""
    import docx

    return docx


@cache
def lxml_etree() -> ModuleType:
    """lxml's `etree`."""
    from lxml import etree

    return etree
