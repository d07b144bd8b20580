"""The heavy libraries that read and draw PDFs, images and Word files, imported on first use (issue 17 point 2).

Every build imports every provider (the format registry reads their versions) and the site
renderer, yet a no-op build, a markdown-only workspace or `--no-site` never opens a PDF, an image
or a Word file: importing PyMuPDF (~120 ms), python-docx with lxml (~75 ms) and Pillow (~30 ms)
there was pure start-up. So the modules that use them (`providers/pdf.py`, `providers/image.py`,
`providers/docx*.py`, `ocr/run.py`, `render/page_images.py`) call these accessors where they first
open a file, and import the modules themselves only for type checking. Each accessor imports once
and applies the settings every use relies on:

- MuPDF's own error and warning lines off (a damaged file is a recorded error, not console noise);
- Pillow's decompression-bomb guard at `pixels.MAX_PIXELS` (Pillow raises only past twice it).

A provider's or OCR engine's version names its library's version, and a build reads every
provider's version (`versions.current`, the unchanged-file check) whether or not it parses a file
of that kind: `library_version` reads it from the package metadata, without importing the library.
`tests/test_startup.py` checks which commands load them.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType

from mnote_evidence.build.pixels import MAX_PIXELS


@cache
def library_version(distribution: str) -> str:
    """An installed library's version, from its package metadata (e.g. "pymupdf" -> "1.28.2")."""
    from importlib.metadata import version  # ~20 ms: builds only

    return version(distribution)


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
