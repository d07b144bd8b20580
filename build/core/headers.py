"""Response headers of the site, defined once for static hosts (`_headers`) and `serve` (SPEC §8).

Attachments are an allowlist: those of a known inert type (`urls.INLINE_TYPES`: PDF, raster images,
audio, video, plain text) are copied beside our pages and sent inline by that type; every other one is
copied under `_file/` (`urls.copy_path`), so one rule makes each such copy inert: an
`application/octet-stream` download, sandboxed, never sniffed. `serve` applies the same allowlist to
every file of the site (`site_file_headers`), so a file no build placed is a download too: an `.html`
file is sent as a page only when the site's state store, sealed by this installation
(`seal_state`), records it as a page the build wrote, and a `_static/` file only when its bytes are
the packaged asset's; anything else (planted in a shipped `_site/`) is a download. Every
response carries `nosniff` and the site CSP (our pages load only their own scripts and styles; inline
style attributes position the PDF boxes). `_headers` is the format of Netlify and Cloudflare Pages;
other hosts need the same headers (docs/security.md). The search index (`_search/`) is data: its files are
sent as inert downloads too, the manifest revalidated on every load (it names the build's files), the
`db.NNN` files cached for good (their URLs carry the build's hash, `?cb=`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mnote_evidence.build.core.assets import asset_dir
from mnote_evidence.build.core.trust import seal
from mnote_evidence.build.core.urls import MOVED_FILES_DIR, SEARCH_DIR, STATIC_DIR, inline_type

# every page's <meta> CSP (a <meta> cannot say frame-ancestors)
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'"
)
SITE_CSP = PAGE_CSP + "; frame-ancestors 'self'"
ATTACHMENT_CSP = "sandbox; default-src 'none'"
COMMON = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
ATTACHMENT = {
    "Content-Type": "application/octet-stream",
    "Content-Disposition": "attachment",
    "Content-Security-Policy": ATTACHMENT_CSP,
}
HEADERS_FILE = "_headers"
# one rule per file name: a host joins the values of one header from several matching rules
# the manifest names this build's files; every other `_search/` file is named by its bytes
SEARCH_CACHE = {"manifest.json": "no-cache"} | {
    f"{folder}/*": "public, max-age=31536000, immutable" for folder in ("t", "b", "f", "r")
}


def headers_file(base: str = "/") -> str:
    """The `_headers` file for a site published at `base`."""
    base = "/" + base.strip("/") + "/" if base.strip("/") else "/"
    lines = [f"{base}*"] + [f"  {k}: {v}" for k, v in {**COMMON, "Content-Security-Policy": SITE_CSP}.items()]
    for folder in (MOVED_FILES_DIR, SEARCH_DIR):
        lines += [f"{base}{folder}/*"] + [f"  {k}: {v}" for k, v in ATTACHMENT.items()]
    for name, cache in SEARCH_CACHE.items():
        lines += [f"{base}{SEARCH_DIR}/{name}", f"  Cache-Control: {cache}"]
    return "\n".join(lines) + "\n"


STATE_FILE = ".mnote-state.sqlite"  # the render's state store (render/state.py)
_STATE_CONTEXT = "site-state"
FRONT_PAGES = ("index.html", "ask.html")  # written by every render, not entries of the store


def pages_digest(rows: Iterable[tuple[str, str]]) -> str:
    """The hash of a state store's page table: (page, entry text) rows, in any order."""
    h = hashlib.sha256()
    for page, entry in sorted(rows):
        h.update(f"{page}\0{entry}\0".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def seal_state(head: dict[str, Any]) -> str:
    """This installation's seal of a state store's head (which holds its `pages_digest`); the head
    unsealed (no key) gives a text `state_is_sealed` never accepts."""
    digest = hashlib.sha256(json.dumps(head, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return seal(f'{{\n "head": "{digest}"\n}}\n', _STATE_CONTEXT)


def state_is_sealed(head: dict[str, Any]) -> bool:
    """Whether `head` (with its `seal`) is a state store's head this installation wrote."""
    sealed = head.get("seal")
    if not isinstance(sealed, str) or '"mac"' not in sealed:
        return False
    return hmac.compare_digest(seal_state({k: v for k, v in head.items() if k != "seal"}), sealed)


_cache_lock = threading.Lock()
_built: dict[str, tuple[tuple[int, int, int], frozenset[str]]] = {}  # site -> (store's stat, its pages)
_assets: dict[str, tuple[tuple[int, int, int], bool]] = {}  # _static file -> (its stat, is the asset)


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of regular file `path` (a symlink is not followed), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def built_pages(site_dir: Path) -> frozenset[str]:
    """The pages the build wrote in `site_dir`: those its sealed state store records, and the front
    pages; empty when the store is missing, unsealed or its pages do not match its seal."""
    path = site_dir / STATE_FILE
    key = _stat_key(path)
    if key is None:
        return frozenset()
    with _cache_lock:
        known = _built.get(str(site_dir))
    if known is not None and known[0] == key:
        return known[1]
    pages: frozenset[str] = frozenset()
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        try:
            head = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM head")}
            rows = conn.execute("SELECT page, entry FROM page").fetchall()
        finally:
            conn.close()
        if state_is_sealed(head) and head.get("pages_digest") == pages_digest(rows):
            pages = frozenset([page for page, _ in rows if page.endswith(".html")] + list(FRONT_PAGES))
    except (sqlite3.Error, ValueError, TypeError):
        if known is not None:  # mid-write: the last pages read stand
            return known[1]
    with _cache_lock:
        _built[str(site_dir)] = (key, pages)
    return pages


def _is_packaged_asset(site_dir: Path, site_path: str) -> bool:
    """Whether `_static/…` file `site_path` holds the bytes of the packaged asset of that name."""
    path = site_dir / site_path
    key = _stat_key(path)
    if key is None:
        return False
    with _cache_lock:
        known = _assets.get(str(path))
    if known is not None and known[0] == key:
        return known[1]
    packaged = asset_dir("site_templates") / site_path
    try:
        same = packaged.is_file() and packaged.read_bytes() == path.read_bytes()
    except OSError:
        same = False
    with _cache_lock:
        _assets[str(path)] = (key, same)
    return same


def site_file_headers(site_path: str, site_dir: Path) -> dict[str, str]:
    """Headers that decide how the site file at root-relative `site_path` of `site_dir` (the file
    itself, after `..` and symlinks are resolved) is sent: none for our own files (a page the build
    recorded, `built_pages`; a `_static/` file that is the packaged asset), the inline type of an
    attachment of a known inert type, `ATTACHMENT` for anything else (all of `_file/` and `_search/`, and
    every file the build did not write as a page or asset). Folder names compare case-blind: on a
    case-insensitive disk `_FILE/x.html` is `_file/x.html`."""
    first = site_path.partition("/")[0].lower()
    if first in (MOVED_FILES_DIR, SEARCH_DIR):
        return dict(ATTACHMENT)
    if first == STATIC_DIR and "/" in site_path:
        return {} if _is_packaged_asset(site_dir, site_path) else dict(ATTACHMENT)
    if site_path.endswith(".html"):
        return {} if site_path in built_pages(site_dir) else dict(ATTACHMENT)
    inline = inline_type(site_path)
    return {"Content-Type": inline} if inline else dict(ATTACHMENT)
