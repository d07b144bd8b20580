"""The site's state: what the last render wrote, read by the next (SPEC §8).

The state file `.mnote-site.json` holds the render's stamp (the index rendered, the templates' hash,
the settings), the front page's key, the recorded collisions, and `pages`: per page, the key it was
written with. Only entries changed since a base are in it; the others are in `PAGES_FILE`, named by
its id (with `"removed"`: the base's pages gone since); the base is written again when there is none
or the changes grow large. A resource's page entry is one string, `KEY<TAB>SOURCE` (`page_entry`);
tombstones and tag pages keep their objects. The templates' hash is recomputed whenever the stat
signature of any template file (path, size, mtime and ctime in ns, inode) differs.
Invariants: a key never holds a tab, so an entry splits at the first tab; the state is written after
the pages it records; a missing or unreadable state, or one whose base is missing or of another id,
reads as `{}` (every page keyed again).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from mnote_evidence.build.core.fsutil import atomic_write_text

STATE_FILE = ".mnote-site.json"
PAGES_FILE = ".mnote-site-pages.json"
TOMBSTONE = "tombstone"
FORMAT = 2  # resource pages' entries as strings, on a base; a state without it holds every entry itself
COMPACT_MIN = 256  # changes the state file may hold over its base before the base is written again


def load(out: Path) -> dict[str, Any]:
    """The state, its pages merged from the base; `{}` when it cannot be read whole.
    (`"_base"` holds the base as read, for `save`.)"""
    return with_pages(out, load_head(out))


def load_head(out: Path) -> dict[str, Any]:
    """The state file alone (its `pages`: the changes over the base): what a render with nothing to do
    reads (its stamp, its collisions), without the base's 10,000 entries."""
    state = _read(out / STATE_FILE)
    if state is None or not isinstance(state.get("pages", {}), dict):
        return {}
    state.pop("_base", None)
    return state


def with_pages(out: Path, state: dict[str, Any]) -> dict[str, Any]:
    """`state` (from `load_head`) with every page entry: merged from its base."""
    if not state:
        return {}
    if state.get("format") != FORMAT:  # an earlier format: its resource pages' objects become strings, once
        state["pages"] = {p: _compact(e) for p, e in state.get("pages", {}).items()}
        return state
    base = _read(out / PAGES_FILE)
    removed = state.get("removed")
    if (
        base is None
        or base.get("id") != state.get("base")
        or not isinstance(base.get("pages"), dict)
        or not isinstance(removed, list)
    ):
        return {}  # a base of another state (or none): nothing is trusted
    pages = dict(base["pages"])
    pages.update(state["pages"])
    for page in removed:
        pages.pop(page, None)
    state["pages"], state["_base"] = pages, base
    return state


def _read(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def save(out: Path, head: dict[str, Any], pages: dict[str, Any], loaded: dict[str, Any]) -> None:
    """Write the state: `head` and `pages`, as changes over the base `loaded` came with while they are
    few, else on a new base. Inside the render's batch, after its pages: the base goes in before the state
    naming it, and a state is read only with the base of its id, so a crash between them costs a full
    re-render, never a wrong page."""
    base = loaded.get("_base")
    if base is not None:
        before: dict[str, Any] = base["pages"]
        changed = {p: e for p, e in pages.items() if p not in before or before[p] != e}
        removed = [p for p in before if p not in pages]
        if len(changed) + len(removed) <= max(COMPACT_MIN, len(before) // 10):
            atomic_write_text(
                out / STATE_FILE, dumps({**head, "base": base["id"], "pages": changed, "removed": removed})
            )
            return
    text = json.dumps(pages, ensure_ascii=False)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    atomic_write_text(out / PAGES_FILE, f'{{"id": "{digest}", "pages": {text}}}')
    atomic_write_text(out / STATE_FILE, dumps({**head, "base": digest, "pages": {}, "removed": []}))


def _compact(entry: Any) -> Any:
    if (
        isinstance(entry, dict)
        and entry.keys() == {"key", "source"}
        and entry["key"] != TOMBSTONE
        and isinstance(entry["key"], str)
        and isinstance(entry["source"], str)
    ):
        return page_entry(entry["key"], entry["source"])
    return entry


def dumps(state: dict[str, Any]) -> str:
    return json.dumps({**state, "format": FORMAT}, ensure_ascii=False)  # no indent=: the C encoder


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
