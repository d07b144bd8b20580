"""The static site's URL scheme (SPEC §8), defined once for the renderer and the functions."""

from __future__ import annotations

import posixpath
from urllib.parse import quote

from mnote_evidence.build.scan import kind_for
from mnote_evidence.build.model import KIND_MARKDOWN


def page_path(source_path: str) -> str:
    """Site file for a source: `docs/Page.md` -> `docs/Page.html`, `x/spec.pdf` -> `x/spec.pdf.html`."""
    if kind_for(source_path) == KIND_MARKDOWN:
        return posixpath.splitext(source_path)[0] + ".html"
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
