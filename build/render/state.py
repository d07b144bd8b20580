"""The site's state file `.mnote-site.json`: what the last render wrote, read by the next (SPEC §8;
README "Incremental builds").

It holds the render's stamp (the index it rendered, the templates' hash, the settings), the front
page's key, the recorded collisions, and `pages`: per page of the site, the key it was written with.
A resource's page is one string, `KEY<TAB>SOURCE` (`page_entry`): at 10,000 notes, reading and
writing 10,000 small objects was a fifth of a one-note edit's render. Tombstones and tag pages keep
their objects (`{"key": "tombstone", "source": ...}`, `{"key", "source": null, "tag": true}`, the
tag index with its `counts`): few, and `render/tag_pages.py` reads and updates them as objects
(`tag_entries` / `merge_tags` hand it those alone). States written before keep working: an object
entry is read the same way (`entry_key`, `entry_source`), and `load` turns a resource page's into a string
once (`FORMAT`).

The templates' hash (`templates_hash`) is kept with the stat signature of every template file
(path, size, modification and change times in ns, inode) it was computed from, and computed again
whenever any of them differs (a template edited, added, removed or replaced, the package installed
elsewhere): any write to a file changes its change time, which no tool can set back.

Invariants: a key never holds a tab (`data.page_key` is hex), so `KEY<TAB>SOURCE` splits at the first
tab whatever the source path holds; the state is written after the pages it records (`render_site`);
an unreadable or missing state reads as `{}` (every page keyed again, nothing trusted).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

STATE_FILE = ".mnote-site.json"
TOMBSTONE = "tombstone"
FORMAT = 2  # resource pages' entries as strings; a state without it holds objects (converted on load)


def load(out: Path) -> dict[str, Any]:
    try:
        state = json.loads((out / STATE_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(state, dict) or not isinstance(state.get("pages", {}), dict):
        return {}
    if state.get("format") != FORMAT:  # written before: its resource pages' objects become strings, once
        state["pages"] = {p: _compact(e) for p, e in state.get("pages", {}).items()}
    return state


def _compact(entry: Any) -> Any:
    if isinstance(entry, dict) and entry.keys() == {"key", "source"} and entry["key"] != TOMBSTONE \
            and isinstance(entry["key"], str) and isinstance(entry["source"], str):
        return page_entry(entry["key"], entry["source"])
    return entry


def dumps(state: dict[str, Any]) -> str:
    return json.dumps({**state, "format": FORMAT}, ensure_ascii=False)  # no indent=: the C encoder, 10x faster


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
    """The tag pages' entries (objects with `tag`), for `tag_pages.write` to read and update."""
    return {p: e for p, e in pages.items() if e.__class__ is dict and e.get("tag")}


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
            rows.append(f"{os.path.relpath(path, folder)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}")
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
    if isinstance(recorded, list) and len(recorded) == 2 and recorded[0] == signature and isinstance(recorded[1], str):
        return recorded[1], recorded
    digest = content_hash(folder)
    return digest, [signature, digest]
