"""What a citation URL points at (SPEC §8, §10): the inverse of `build/core/urls.py` for `verify_quote`.

A citation URL is a site page URL, site-relative or under any base (`/-/evidence/site/…`,
`https://host/docs/…`), in one of the forms the functions emit:
- `<page>#<blockId>` or `<page>?hl=<id>,<id>#<blockId>`: a block (block ids are unique in an index,
  so the fragment alone decides);
- `<page>#page-<n>`: a page of a PDF or image;
- `<page>?page=<n>&bbox=<x0>,<y0>,<x1>,<y1>`: a box on a page (`evidence.open` of a bare locator);
- `<page>`: the whole file.
The page's source is found by trying the URL path's suffixes, longest first, against the pages the
index records (`evidence_resource.page_url`, the site's placement: `resource_for`): the base is
whatever prefix is left over. Nothing here touches the disk.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, unquote, urlsplit

from mnote_evidence.functions.core.errors import BadRequest

BLOCK_ID = re.compile(r"^b-[a-z2-7]{12}(-[0-9]+)?$")
_PAGE_FRAGMENT = re.compile(r"^page-([0-9]{1,6})$")
_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


@dataclass
class CitedPlace:
    """What a citation URL names; `pages` are the site pages it may name, longest suffix first."""

    pages: list[str] = field(default_factory=list)
    block_id: str | None = None
    page: int | None = None
    bbox: list[float] | None = None


def parse(url: str) -> CitedPlace:
    """Split a citation URL into what it names; BadRequest when it names nothing we can check."""
    parts = urlsplit(url.strip())
    place = CitedPlace()
    fragment = unquote(parts.fragment)
    if BLOCK_ID.match(fragment):
        place.block_id = fragment
    elif m := _PAGE_FRAGMENT.match(fragment):
        place.page = int(m.group(1))
    query = parse_qs(parts.query)
    if place.block_id is None and "page" in query:
        if not query["page"][0].isdigit() or not 1 <= int(query["page"][0]) <= 999_999:
            raise BadRequest("citationUrl: 'page' must be a page number")
        place.page = int(query["page"][0])
        if "bbox" in query:
            values = query["bbox"][0].split(",")
            if len(values) != 4 or not all(_NUMBER.match(v) for v in values):
                raise BadRequest("citationUrl: 'bbox' must be x0,y0,x1,y1")
            place.bbox = [float(v) for v in values]
    segments = [s for s in unquote(parts.path).split("/") if s]
    place.pages = [p for p in ("/".join(segments[i:]) for i in range(len(segments))) if p.endswith(".html")]
    if place.block_id is None and not place.pages:
        raise BadRequest(
            "citationUrl is not a page of this site (expected …/<file>.html with #blockId, "
            "#page-N or ?page=N&bbox=…)"
        )
    return place


def resource_for(conn: sqlite3.Connection, place: CitedPlace) -> tuple[str, str, int | None] | None:
    """(resource id, source path, page count) of the file whose recorded page is the longest of
    `place.pages` (a file of this index, status ok)."""
    for page in place.pages:
        row = conn.execute(
            "SELECT resource_id, source_root_relative_path, page_count FROM evidence_resource "
            "WHERE status = 'ok' AND page_url = ?",
            [quote(page, safe="/")],
        ).fetchone()
        if row is not None:
            return row[0], row[1], row[2]
    return None
