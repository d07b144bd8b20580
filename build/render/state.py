"""The build's state beside the site: one SQLite file, `.mnote-state.sqlite` (SPEC §8).

It holds what the last render wrote, read by the next: `head` (the render's stamp, the front page's
key, the recorded collisions, the templates' signature and hash, the page table's digest and this
installation's seal over it all: `headers.seal_state`; `serve` sends as pages only what a sealed store
records), `page` (per page, the key it was
written with: `KEY<TAB>SOURCE` for a resource's page, a JSON object for tombstones and tag pages) and
`cache` (the front page's parts, each stored with the key it was made for). A resource's entry is one
string (`page_entry`). The templates' hash is recomputed whenever the stat signature of any template
file (path, size, mtime and ctime in ns, inode) differs.
Invariants: a key never holds a tab; `save` writes in one transaction, after the pages it records
(a crash before it costs a re-render of those pages, never a wrong page); a missing or unreadable
store reads as `{}` (every page keyed again) and is made anew; a cached value is used only for the
key it was stored with.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mnote_evidence.build.core import headers

STATE_FILE = headers.STATE_FILE
TOMBSTONE = "tombstone"
SCHEMA = """
CREATE TABLE IF NOT EXISTS head (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS page (page TEXT PRIMARY KEY, entry TEXT NOT NULL, object INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS cache (name TEXT PRIMARY KEY, key TEXT NOT NULL, value TEXT NOT NULL);
"""
# files other versions kept beside the site: removed when the store is written
OTHER_STATE = (
    ".mnote-site.json",
    ".mnote-site-pages.json",
    ".mnote-front-tree.html",
    ".mnote-front-note.json",
    ".mnote-rows-base.marshal",
    ".mnote-rows-delta.marshal",
)


@contextlib.contextmanager
def _store(out: Path, write: bool = False) -> Iterator[sqlite3.Connection | None]:
    """The store of the site in `out` (None when there is none to read, or it cannot be read)."""
    path = out / STATE_FILE
    conn = None
    linked = False
    for name in (STATE_FILE, f"{STATE_FILE}-journal"):  # a link here is not the store: never followed
        if (out / name).is_symlink():
            linked = True
            if write:
                (out / name).unlink()
    if write or (path.is_file() and not linked):
        try:
            conn = _open(path)
        except sqlite3.DatabaseError:
            if write:
                path.unlink(missing_ok=True)  # unreadable: made anew (every page is keyed again)
                conn = _open(path)
    try:
        yield conn
    finally:
        if conn is not None:
            conn.close()


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.executescript(SCHEMA)
    except sqlite3.DatabaseError:
        conn.close()
        raise
    return conn


def load(out: Path) -> dict[str, Any]:
    """The state with every page's entry; `{}` when it cannot be read."""
    return with_pages(out, load_head(out))


def load_head(out: Path) -> dict[str, Any]:
    """The head alone: what a render with nothing to do reads (its stamp, its collisions); `{}` unless
    this installation sealed it (`headers.state_is_sealed`: a store shipped in a workspace's `_site/`
    is not the build's)."""
    try:
        with _store(out) as conn:
            if conn is None:
                return {}
            head = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM head")}
    except (sqlite3.DatabaseError, ValueError):
        return {}
    return head if headers.state_is_sealed(head) else {}


def discard(out: Path) -> None:
    """Remove the store (one this installation did not seal): its pages and cached parts are not ours."""
    for name in (STATE_FILE, f"{STATE_FILE}-journal"):
        with contextlib.suppress(OSError):
            (out / name).unlink()


def with_pages(out: Path, state: dict[str, Any]) -> dict[str, Any]:
    """`state` (from `load_head`) with every page entry (`"_base"`: a copy, what `save` compares with)."""
    if not state:
        return {}
    try:
        with _store(out) as conn:
            if conn is None:
                return {}
            rows = conn.execute("SELECT page, entry, object FROM page").fetchall()
        if headers.pages_digest((page, entry) for page, entry, _ in rows) != state.get("pages_digest"):
            return {}  # not the pages its head was sealed with
        pages = {page: json.loads(entry) if obj else entry for page, entry, obj in rows}
    except (sqlite3.DatabaseError, ValueError):
        return {}
    state["pages"], state["_base"] = pages, dict(pages)
    return state


def save(out: Path, head: dict[str, Any], pages: dict[str, Any], loaded: dict[str, Any]) -> None:
    """Write the state: `head`, and the page entries that differ from what `loaded` read, in one
    transaction. Called after the render's pages are committed."""
    before: dict[str, Any] = loaded.get("_base") or {}
    changed = [(p, e) for p, e in pages.items() if p not in before or before[p] != e]
    removed = [(p,) for p in before if p not in pages]
    head = head | {"pages_digest": headers.pages_digest((p, _entry_text(e)) for p, e in pages.items())}
    head["seal"] = headers.seal_state(head)
    with _store(out, write=True) as conn:
        conn.execute("BEGIN IMMEDIATE")
        if not before:
            conn.execute("DELETE FROM page")
        conn.execute("DELETE FROM head")
        conn.executemany(
            "INSERT INTO head VALUES (?, ?)",
            [(k, json.dumps(v, ensure_ascii=False)) for k, v in head.items()],
        )
        conn.executemany("DELETE FROM page WHERE page = ?", removed)
        conn.executemany(
            "INSERT OR REPLACE INTO page VALUES (?, ?, ?)",
            [(p, _entry_text(e), int(not isinstance(e, str))) for p, e in changed],
        )
        conn.execute("COMMIT")
    for name in OTHER_STATE:
        with contextlib.suppress(OSError):
            (out / name).unlink()


def _entry_text(entry: Any) -> str:
    """A page entry as the store holds it: a resource's string as it is, anything else as JSON."""
    return entry if isinstance(entry, str) else json.dumps(entry, ensure_ascii=False)


def cached(out: Path, name: str, key: str) -> str | None:
    """The value stored as `name` for `key`; None when none is, or it was made for another key."""
    try:
        with _store(out) as conn:
            row = (
                conn.execute("SELECT key, value FROM cache WHERE name = ?", [name]).fetchone()
                if conn
                else None
            )
    except sqlite3.DatabaseError:
        return None
    return row[1] if row and row[0] == key else None


def cache(out: Path, name: str, key: str, value: str) -> None:
    """Store `value` as `name`, made for `key`."""
    with _store(out, write=True) as conn:
        conn.execute("INSERT OR REPLACE INTO cache VALUES (?, ?, ?)", [name, key, value])


def page_entry(key: str, source: str) -> str:
    """The state's entry for a resource's page."""
    return f"{key}\t{source}"


def entry_key(entry: Any) -> str | None:
    """The key a page was written with (None: no such page recorded)."""
    if isinstance(entry, str):
        return entry.partition("\t")[0]
    return entry.get("key") if isinstance(entry, dict) else None


def entry_source(entry: Any) -> str | None:
    """The source path whose page it is (None: a tag page, or nothing recorded)."""
    if isinstance(entry, str):
        return entry.partition("\t")[2]
    return entry.get("source") if isinstance(entry, dict) else None


def tombstone(source: str) -> dict[str, str]:
    return {"key": TOMBSTONE, "source": source}


def tag_entries(pages: dict[str, Any]) -> dict[str, Any]:
    """The tag pages' entries (objects with `tag`), for `tag_pages.write` to read and update: copies, so
    the base `load` read (what `save` compares with) keeps the entries as they were."""
    return {p: dict(e) for p, e in pages.items() if e.__class__ is dict and e.get("tag")}


def merge_tags(pages: dict[str, Any], before: set[str], tags: dict[str, Any]) -> None:
    """Put back what `tag_pages.write` left in `tags` (taken by `tag_entries` as `before`)."""
    for page in before - tags.keys():
        del pages[page]
    pages.update(tags)


def _signature(folder: Path) -> str:
    """Every file under `folder` with its size, times and inode, in path order."""
    rows = []
    for base, dirs, files in os.walk(folder):
        dirs.sort()
        for name in files:
            path = os.path.join(base, name)
            st = os.stat(path)
            rows.append(
                f"{os.path.relpath(path, folder)}\0{st.st_size}"
                f"\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"
            )
    rows.sort()
    return hashlib.sha256("\0".join([str(folder), *rows]).encode()).hexdigest()


def content_hash(folder: Path) -> str:
    """The hash of every file's path and bytes under `folder` (the templates and static files)."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return h.hexdigest()[:16]


def templates_hash(folder: Path, state: dict[str, Any]) -> tuple[str, list[str]]:
    """The content hash of `folder`, taken from `state` when its files' signature is the one it
    records; and the [signature, hash] pair to record for the next render."""
    signature = _signature(folder)
    recorded = state.get("templates")
    if (
        isinstance(recorded, list)
        and len(recorded) == 2
        and recorded[0] == signature
        and isinstance(recorded[1], str)
    ):
        return recorded[1], recorded
    digest = content_hash(folder)
    return digest, [signature, digest]
