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

import hashlib
import posixpath
import unicodedata
from collections.abc import Iterable, Iterator
from functools import cache
from urllib.parse import quote

from mnote_evidence.build.core.model import NOTE_SUFFIXES, suffix_of

DB_NAME = "evidence.sqlite"
# bumped when a source's page or copy moves: a site rendered by another scheme is rendered again whole
URL_SCHEME = "5"
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
# a folder holding DB_NAME and one of these is a build's output (the lock every build takes, the render's
# state store, the state file of earlier versions): never scanned as notes
SITE_MARKERS = frozenset({".build.lock", ".mnote-state.sqlite", ".mnote-site.json"})
STATIC_DIR, PAGES_DIR, MOVED_PAGES_DIR, MOVED_FILES_DIR = "_static", "_pages", "_page", "_file"
TAGS_DIR, FOLDERS_DIR, ENTITIES_DIR, SEARCH_DIR = "_tags", "_folders", "_entities", "_search"
RESERVED_DIRS = (
    STATIC_DIR,
    PAGES_DIR,
    MOVED_PAGES_DIR,
    MOVED_FILES_DIR,
    TAGS_DIR,
    FOLDERS_DIR,
    ENTITIES_DIR,
    SEARCH_DIR,
)


def holds_site(names: Iterable[str]) -> bool:
    """Whether a folder whose entries are `names` is a build's output folder (`SITE_MARKERS`)."""
    names = set(names)
    return DB_NAME in names and not SITE_MARKERS.isdisjoint(names)


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


def folder_page(folder: str) -> str:
    """Site file of a workspace folder's page: `a/b` -> `_folders/a/b/index.html` (reserved, so no
    source's page is ever there). A folder named `index.html` would be a folder where its parent's page
    is a file: in its place (and its subfolders') stands `index.html~<hash>`."""
    parts = folder.split("/")
    for i, part in enumerate(parts):
        if same_file_key(part) == "index.html":
            prefix = "/".join(folder.split("/")[: i + 1])
            parts[i] += "~" + hashlib.sha256(prefix.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{FOLDERS_DIR}/{'/'.join(parts)}/index.html"


def same_file_key(site_path: str) -> str:
    """What two site paths share when they are one file on some file system or static host: Unicode
    normalisation (NFC) and case (macOS, Windows and many hosts ignore both)."""
    if site_path.isascii():  # nearly every path: ASCII is NFC, and its casefold is its lower case
        return site_path.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", site_path).casefold())


NAME_BYTES = 255  # of one file or folder name: what ext4, APFS, btrfs and most hosts allow


def _fits(site_path: str) -> bool:
    """Whether every name of `site_path` fits a file system (`NAME_BYTES` of UTF-8)."""
    return all(len(part.encode("utf-8", "surrogatepass")) <= NAME_BYTES for part in site_path.split("/"))


def _folders(site_path: str) -> Iterator[str]:
    """The folders `site_path` lies in: `a/b/c.html` -> `a`, `a/b`."""
    cut = site_path.find("/")
    while cut != -1:
        yield site_path[:cut]
        cut = site_path.find("/", cut + 1)


def _digest(source_path: str, n: int) -> str:
    return hashlib.sha256(f"{source_path}\0{n}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


class Pages:
    """Every file one site writes for its sources, pages and copies: `page_path` and `copy_path`,
    except where two of them, or one and a folder another one lies in, would be one file
    (`same_file_key`: `a.md` and `a.markdown`, `spec.pdf` and `spec.pdf.md`, `B.md` and `b.md`, a
    folder `spec.pdf.html/`, copies `a.pdf` and `A.pdf`), or a name is too long (`NAME_BYTES`). Folders
    keep their place (they are the workspace's); of two files the path first in code point order keeps
    it, pages before copies. Each other page moves to `_page/<source path>.html` (`.<n>.html` when
    that is taken too), each other copy to `_file/<source path>` (`_file/<hash>/<name>`); a name too
    long moves to `_page/<hash>.html`. Each move is one of `problems` (`page_collision`,
    `name_too_long`). So placement is injective over the set, and the index (`page_url`) and the site,
    both built over the same paths, agree on it. `moved` is empty for nearly every workspace."""

    def __init__(self, paths: Iterable[str]):
        paths = sorted(paths)
        self._files: dict[str, str] = {}  # same_file_key of a placed file -> the source placed there
        self._folders: dict[str, str] = {}  # same_file_key of a folder -> the folder
        self.moved: dict[str, str] = {}  # source -> its page, for the sources not on their page_path
        self.copies_moved: dict[str, str] = {}  # source -> its copy, for those not on their copy_path
        self.kept_by: dict[str, str] = {}  # each page moved by a collision -> what holds its page_path
        self.problems: list[dict[str, str]] = []  # one per move, in path order: pages, then copies
        for path in paths:
            for place in (page_path(path), copy_path(path)):
                for folder in _folders(place):
                    self._folders.setdefault(same_file_key(folder), folder)
        losers: list[tuple[str, str, str | None]] = []  # (source, "page" | "copy", what holds its place)
        for kind, place_of in (("page", page_path), ("copy", copy_path)):
            for path in paths:
                place = place_of(path)
                key = same_file_key(place)
                holder = (
                    f"the folder {self._folders[key]}/"
                    if key in self._folders
                    else f"the {'page' if kind == 'page' else 'file'} of {self._files[key]}"
                    if key in self._files
                    else None
                )
                if holder is None and _fits(place):
                    self._files[key] = path
                else:
                    losers.append((path, kind, holder))
        for path, kind, holder in losers:
            self._move(path, kind, holder)

    def _free(self, site_path: str) -> bool:
        """Whether a file at `site_path` would be one file with no placed file or folder."""
        key = same_file_key(site_path)
        return (
            _fits(site_path)
            and key not in self._files
            and key not in self._folders
            and not any(same_file_key(f) in self._files for f in _folders(site_path))
        )

    def _move(self, path: str, kind: str, holder: str | None) -> None:
        usual = page_path(path) if kind == "page" else copy_path(path)
        for n in range(1, 1 << 16):
            if kind == "page":
                name = f"{path}.html" if n == 1 else f"{path}.{n}.html"
                if not _fits(f"{MOVED_PAGES_DIR}/{name}"):
                    name = f"{_digest(path, n)}.html"
            else:
                name = path if n == 1 else f"{_digest(path, n)}/{posixpath.basename(path)}"
            place = f"{MOVED_PAGES_DIR if kind == 'page' else MOVED_FILES_DIR}/{name}"
            if self._free(place):
                break
        self._files[same_file_key(place)] = path
        for folder in _folders(place):
            self._folders.setdefault(same_file_key(folder), folder)
        what = "page" if kind == "page" else "copy"
        if holder is None:
            code = "name_too_long"
            why = f"its {what} {usual} has a name longer than file systems allow ({NAME_BYTES} bytes)"
        else:
            code = "page_collision"
            why = (
                f"its {what} {usual} would be one file with {holder} (names that differ only in case, "
                "Unicode form or note suffix)"
            )
        if kind == "page":
            self.moved[path] = place
            if holder is not None:
                self.kept_by[path] = holder
        else:
            self.copies_moved[path] = place
        self.problems.append({"path": path, "code": code, "message": f"{why}; its {what} is {place}"})

    @property
    def moves(self) -> dict[str, str]:
        """Every placement away from its usual path: source -> page, `<source>\\0` -> copy (a NUL
        ends no path): what a page's links depend on beside their own targets."""
        return self.moved | {f"{path}\0": copy for path, copy in self.copies_moved.items()}

    def __call__(self, source_path: str) -> str:
        return self.moved.get(source_path) or page_path(source_path)

    def copy(self, source_path: str) -> str:
        """Site file holding the copy of the source's bytes in this site."""
        return self.copies_moved.get(source_path) or copy_path(source_path)

    def is_free(self, site_path: str) -> bool:
        """Whether a file at `site_path` (a page an earlier site placed there) stands in the way of no
        file or folder of this site: it may stay (a tombstone), else it goes."""
        return self._free(site_path)

    def shares_file(self, site_path: str) -> bool:
        """Whether `site_path` is one file with a page or copy of this site (maybe in another case)."""
        return same_file_key(site_path) in self._files

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
