"""The static site's URL scheme (SPEC §8), defined once for the renderer and the functions.

Depends on the contracts only (`build.model`), never on a pipeline stage: a
page's URL follows from the source path alone (notes, by `NOTE_SUFFIXES`,
drop their suffix; every other file keeps its name and gains `.html`).
"""

from __future__ import annotations

import posixpath
from urllib.parse import quote

from mnote_evidence.build.model import NOTE_SUFFIXES


def page_path(source_path: str) -> str:
    """Site file for a source: `docs/Page.md` -> `docs/Page.html`, `x/spec.pdf` -> `x/spec.pdf.html`."""
    stem, suffix = posixpath.splitext(source_path)
    if suffix.lower() in NOTE_SUFFIXES:
        return stem + ".html"
    return source_path + ".html"


def page_url(source_path: str, block_id: str | None = None) -> str:
    """Site-relative URL (percent-encoded) of a source's page, optionally at a block anchor."""
    url = quote(page_path(source_path), safe="/")
    return f"{url}#{block_id}" if block_id else url


def relative_url(from_page: str, to_path: str, fragment: str | None = None) -> str:
    """Percent-encoded URL of site file `to_path` as seen from site page `from_page` (both
    root-relative): relative, so the site works under any base path and from file://."""
    rel = posixpath.relpath(to_path, posixpath.dirname(from_page) or ".")
    url = quote(rel, safe="/")
    return f"{url}#{fragment}" if fragment else url
