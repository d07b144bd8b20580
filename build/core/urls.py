"""The static site's URL scheme (SPEC §8), defined once for the renderer and the functions.

Depends on the contracts only (`build.model`), never on a pipeline stage: a
page's URL follows from the source path (notes, by `NOTE_SUFFIXES`, drop their
suffix; every other file keeps its name and gains `.html`), and from the other
paths only where two pages would be one file (`Pages`).

Inputs can never overwrite outputs: the names the build generates itself
(`RESERVED_NAMES` at the site root, everything under `RESERVED_DIRS`) are never
a source's page or copy. A source whose page or copy would land on one is
placed under `_page/` (pages, `<source path>.html`) or `_file/` (copies,
`<source path>`) instead, both reserved themselves, so every placement is
injective and disjoint from generated output; every other URL is unchanged. Of two
sources whose pages would be one file, one moves under `_page/` too (`Pages`).
Copies of every attachment not served inline (`INLINE_TYPES`, an allowlist of
inert types) go under `_file/` too, where the site's headers make them sandboxed
downloads (`core/headers.py`).
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Iterable
from functools import cache
from urllib.parse import quote

from mnote_evidence.build.core.model import NOTE_SUFFIXES, suffix_of

DB_NAME = "evidence.sqlite"
# bumped when a source's page or copy moves: a site rendered by another scheme is rendered again whole
URL_SCHEME = "2"
RESERVED_NAMES = frozenset(
    {
        DB_NAME,
        f"{DB_NAME}-wal",
        f"{DB_NAME}-shm",
        f"{DB_NAME}-journal",
        "index.html",
        "ask.html",
        "_headers",
        ".mnote-state.sqlite",
        ".mnote-state.sqlite-journal",
        ".build.lock",
    }
)
STATIC_DIR, PAGES_DIR, MOVED_PAGES_DIR, MOVED_FILES_DIR = "_static", "_pages", "_page", "_file"
TAGS_DIR = "_tags"
RESERVED_DIRS = (STATIC_DIR, PAGES_DIR, MOVED_PAGES_DIR, MOVED_FILES_DIR, TAGS_DIR)


def is_reserved(site_path: str) -> bool:
    """True when `site_path` (root-relative) is a name the build itself writes."""
    first = site_path.split("/", 1)[0]
    if "/" not in site_path:
        return site_path.lower() in RESERVED_NAMES
    return first.lower() in RESERVED_DIRS


@cache
def page_path(source_path: str) -> str:
    """Site file for a source: `docs/Page.md` -> `docs/Page.html`, `x/spec.pdf` -> `x/spec.pdf.html`;
    a page that would land on a reserved name goes to `_page/<source path>.html` (`index.md`)."""
    suffix = suffix_of(source_path)
    page = source_path[: -len(suffix)] + ".html" if suffix.lower() in NOTE_SUFFIXES else source_path + ".html"
    return f"{MOVED_PAGES_DIR}/{source_path}.html" if is_reserved(page) else page


def same_file_key(site_path: str) -> str:
    """What two site paths share when they are one file on some file system or static host: Unicode
    normalisation (NFC) and case (macOS, Windows and many hosts ignore both)."""
    if site_path.isascii():  # nearly every path: ASCII is NFC, and its casefold is its lower case
        return site_path.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", site_path).casefold())


class Pages:
    """Every source's page in one site: `page_path`, except where two sources' pages would be one file
    (`same_file_key`: `a.md` and `a.markdown`, `spec.pdf` and `spec.pdf.md`, `B.md` and `b.md`). Of those,
    the path first in code point order keeps the page; each other one moves to
    `_page/<source path>.html` (`.<n>.html` when that is taken too), recorded as `page_collision`. So
    placement is injective over the set, and the index (`page_url`) and the site, both built over the
    same paths, agree on it. `moved` is empty for nearly every workspace."""

    def __init__(self, paths: Iterable[str]):
        taken: dict[str, str] = {}  # same_file_key of a page -> the source placed there
        self.moved: dict[str, str] = {}  # source -> its page, for the sources not on their page_path
        self.kept_by: dict[str, str] = {}  # each of those -> the source on its page_path
        for path in sorted(paths):
            holder = taken.setdefault(same_file_key(page_path(path)), path)
            if holder != path:
                self.kept_by[path] = holder
        for path in self.kept_by:
            page, n = f"{MOVED_PAGES_DIR}/{path}.html", 1
            while same_file_key(page) in taken:
                n += 1
                page = f"{MOVED_PAGES_DIR}/{path}.{n}.html"
            taken[same_file_key(page)] = path
            self.moved[path] = page

    def __call__(self, source_path: str) -> str:
        return self.moved.get(source_path) or page_path(source_path)

    def url(self, source_path: str, block_id: str | None = None) -> str:
        """`page_url` of the source's page in this site."""
        url = quote(self(source_path), safe="/")
        return f"{url}#{block_id}" if block_id else url


# The attachments served inline, by the type named here (an allowlist: PDF, raster images, audio, video
# and plain text, which browsers show without running anything in our origin). Every other attachment,
# whatever its suffix or case (`.xhtm`, `.es`, `.svg`, `name.pdf.xhtm`, none), is served as a download.
INLINE_TYPES = {
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".bmp": "image/bmp",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".wav": "audio/wav",
    ".ogg": "audio/ogg",
    ".opus": "audio/ogg",
    ".flac": "audio/flac",
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".webm": "video/webm",
    ".mov": "video/quicktime",
    ".txt": "text/plain; charset=utf-8",
    **{suffix: "text/plain; charset=utf-8" for suffix in NOTE_SUFFIXES},
}


def inline_type(source_path: str) -> str | None:
    """The type an attachment is served inline as, or None: it is served as a download."""
    return INLINE_TYPES.get(suffix_of(source_path).lower())


@cache
def copy_path(source_path: str) -> str:
    """Site file holding the copy of a source's bytes: its own path, or `_file/<path>` when its name
    is reserved or it is not served inline (`_file/` is served as a sandboxed download)."""
    if is_reserved(source_path) or inline_type(source_path) is None:
        return f"{MOVED_FILES_DIR}/{source_path}"
    return source_path


def page_url(source_path: str, block_id: str | None = None) -> str:
    """Site-relative URL (percent-encoded) of a source's page, optionally at a block anchor."""
    url = quote(page_path(source_path), safe="/")
    return f"{url}#{block_id}" if block_id else url


def _relpath(to_path: str, base: str) -> str:
    """`posixpath.relpath(to_path, base or ".")` for root-relative paths, without its two `os.getcwd()`
    calls (a site's pages call this for every link: index.html once per file)."""
    to = [p for p in to_path.split("/") if p not in ("", ".")]
    frm = [p for p in base.split("/") if p not in ("", ".")]
    if ".." in to or ".." in frm or to_path.startswith("/") or base.startswith("/"):
        return posixpath.relpath(to_path, base or ".")
    common = 0
    while common < min(len(to), len(frm)) and to[common] == frm[common]:
        common += 1
    return "/".join([".."] * (len(frm) - common) + to[common:]) or "."


def relative_url(from_page: str, to_path: str, fragment: str | None = None) -> str:
    """Percent-encoded URL of site file `to_path` as seen from site page `from_page` (both
    root-relative): relative, so the site works under any base path and from file://."""
    rel = _relpath(to_path, posixpath.dirname(from_page))
    url = quote(rel, safe="/")
    return f"{url}#{fragment}" if fragment else url
