"""The site's state: what the last render wrote, read by the next (SPEC §8; README "Incremental builds").

The state file `.mnote-site.json` holds the render's stamp (the index it rendered, the templates'
hash, the settings), the front page's key, the recorded collisions, and `pages`: per page of the
site, the key it was written with. Only the entries that changed since a base are in it: the others
are in `PAGES_FILE` (`{"id", "pages"}`), which the state names by its id (`"base"`, with `"removed"`:
the base's pages gone since). An edit rewrites the small state file, not 10,000 entries (with their
sync); the base is written again (`save`) when there is none, or the changes reach a tenth of it.
A state whose base is missing or has another id reads as no state at all.
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
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

from mnote_evidence.build.fsutil import atomic_write_text

STATE_FILE = ".mnote-site.json"
PAGES_FILE = ".mnote-site-pages.json"  # the base of the state's page entries
TOMBSTONE = "tombstone"
FORMAT = 2  # resource pages' entries as strings, on a base; a state without it holds every entry itself
_DECODER = json.JSONDecoder()
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
    state.pop("_base", None)  # ours only in memory
    return state


def with_pages(out: Path, state: dict[str, Any], lazy: bool = False) -> dict[str, Any]:
    """`state` (from `load_head`) with every page entry: merged from its base. `lazy`: as `Entries`, which
    reads the base's resource pages one by one where asked, when the base is laid out for it (`save`)."""
    if not state:
        return {}
    if state.get("format") != FORMAT:  # written before: its resource pages' objects become strings, once
        state["pages"] = {p: _compact(e) for p, e in state.get("pages", {}).items()}
        return state
    removed, objects, size = state.get("removed"), state.get("base_sorted"), state.get("base_size")
    if lazy and isinstance(objects, int) and isinstance(size, int) and isinstance(removed, list):
        text = _text(out / PAGES_FILE)
        header = f'{{"id": "{state.get("base")}", "pages": {{'
        if text is None or not text.startswith(header) or not text.endswith("}}"):
            return {}  # a base of another state (or none): nothing is trusted
        try:
            entries = Entries(text, len(header), objects, state["pages"], removed)
        except ValueError:
            return {}
        state["pages"], state["_base"] = entries, {"id": state["base"], "size": size}
        return state
    base = _read(out / PAGES_FILE)
    if (base is None or base.get("id") != state.get("base") or not isinstance(base.get("pages"), dict)
            or not isinstance(removed, list)):
        return {}  # a base of another state (or none): nothing is trusted
    pages = dict(base["pages"])
    pages.update(state["pages"])
    for page in removed:
        pages.pop(page, None)
    state["pages"], state["_base"] = pages, base
    return state


class Entries(MutableMapping):
    """A state's page entries, as `with_pages` merges them, reading from the base only what is asked: an
    edit looks at a few dozen of 10,000 pages, and parsing the whole base was a tenth of its render.

    The base file (`save`) is `{"id": ID, "pages": {OBJECTS, STRINGS}}`: first the object entries (tag
    pages, tombstones: few, `base_sorted` characters, parsed at once), then the resource pages' strings in
    page order. In that second part every value is a JSON string, and a JSON string holds no unescaped
    quote, so `", "` is always the end of one entry and the start of the next: a page is found by a binary
    search over the text (each step decodes the key after the next `", "`), its value decoded alone, in
    ~15 steps (a `find` of the key over the whole text cost 0.2 ms a page). Iterating parses it whole."""

    def __init__(self, text: str, start: int, objects: int, changes: dict[str, Any], removed: list[str]):
        self._text = text
        self._objects: dict[str, Any] = json.loads("{" + text[start:start + objects] + "}")
        at = start + objects
        self._strings = at + 2 if objects and text.startswith(", ", at) else at  # where the strings start
        self._end = len(text) - 2  # the closing "}}"
        self._found: dict[str, Any] = {}  # base entries looked up (None: not in the base)
        self._all: dict[str, Any] | None = None  # the whole base, once iterated
        self.changes = {p: e for p, e in changes.items() if p not in removed}  # over the base (as `with_pages`
        self.gone = set(removed)  # merges: the removed pages go last); base pages removed
        self._set: set[str] = set()  # pages set since: compared with the base when saved

    def base(self, page: str) -> Any:
        """The base's entry for `page` (None: none)."""
        if self._all is not None:
            return self._all.get(page)
        if page in self._objects:
            return self._objects[page]
        if page not in self._found:
            self._found[page] = self._lookup(page)
        return self._found[page]

    def _entry(self, key_at: int) -> tuple[str, int]:
        """The key of the string entry at `key_at`, and where its value starts."""
        key, end = _DECODER.raw_decode(self._text, key_at)
        return key, end + 2  # past ": "

    def _lookup(self, page: str) -> str | None:
        text, lo, hi = self._text, self._strings, self._end
        if lo >= hi:
            return None
        key, value_at = self._entry(lo)  # the first entry has no `", "` before it
        if key >= page:
            return _DECODER.raw_decode(text, value_at)[0] if key == page else None
        # the `", "` before the page's key, if any, starts in [lo, hi): each step keeps it there
        while lo < hi:
            mid = (lo + hi) // 2
            at = text.find('", "', mid, hi + 3)
            if at < 0:
                hi = mid
                continue
            key, value_at = self._entry(at + 3)
            if key == page:
                return _DECODER.raw_decode(text, value_at)[0]
            if key < page:
                lo = at + 1
            else:
                hi = mid
        return None

    def all_base(self) -> dict[str, Any]:
        if self._all is None:
            self._all = json.loads(self._text)["pages"]
        return self._all

    def objects(self) -> dict[str, Any]:
        """Every object entry (tag pages, tombstones), without reading the resource pages."""
        out = {p: e for p, e in self._objects.items() if p not in self.gone and p not in self.changes}
        out.update((p, e) for p, e in self.changes.items() if not isinstance(e, str))
        return out

    def over_base(self) -> tuple[dict[str, Any], list[str]]:
        """The entries that differ from the base's, and the base's pages removed (what `save` writes). The
        state's own changes differed when it was saved: only the pages set since are looked up."""
        return ({p: e for p, e in self.changes.items() if p not in self._set or self.base(p) != e},
                sorted(self.gone))

    def __getitem__(self, page: str) -> Any:
        if page in self.changes:
            return self.changes[page]
        entry = None if page in self.gone else self.base(page)
        if entry is None:
            raise KeyError(page)
        return entry

    def __setitem__(self, page: str, entry: Any) -> None:
        self.changes[page] = entry
        self._set.add(page)
        self.gone.discard(page)

    def __delitem__(self, page: str) -> None:
        if page not in self:
            raise KeyError(page)
        self.changes.pop(page, None)
        if self.base(page) is not None:
            self.gone.add(page)

    def __iter__(self) -> Iterator[str]:
        base = self.all_base()
        yield from (p for p in base if p not in self.gone)
        yield from (p for p in list(self.changes) if p not in base)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _read(path: Path) -> dict[str, Any] | None:
    text = _text(path)
    try:
        doc = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _text(path: Path) -> str | None:
    try:
        return path.read_text("utf-8")
    except (OSError, ValueError):
        return None


def save(out: Path, head: dict[str, Any], pages: dict[str, Any], loaded: dict[str, Any]) -> None:
    """Write the state: `head` and `pages`, as changes over the base `loaded` came with while they are
    few, else on a new base. Inside the render's batch, after its pages: the base goes in before the state
    naming it, and a state is read only with the base of its id, so a crash between them costs a full
    re-render, never a wrong page."""
    base = loaded.get("_base")
    # over the base, unless there is none or it has the older layout (every entry in one object): then anew
    if base is not None and loaded.get("base_sorted") is not None:
        if isinstance(pages, Entries):
            (changed, removed), size = pages.over_base(), base["size"]
        else:
            before: dict[str, Any] = base["pages"]
            changed = {p: e for p, e in pages.items() if p not in before or before[p] != e}
            removed = [p for p in before if p not in pages]
            size = len(before)
        if len(changed) + len(removed) <= max(COMPACT_MIN, size // 10):
            atomic_write_text(out / STATE_FILE, dumps({**head, "base": base["id"], "base_sorted": loaded["base_sorted"],
                                                       "base_size": size, "pages": changed, "removed": removed}))
            return
    # the object entries first, then the strings (`Entries` reads the strings one by one)
    objects = json.dumps({p: e for p, e in pages.items() if not isinstance(e, str)}, ensure_ascii=False)[1:-1]
    strings = json.dumps(dict(sorted((p, e) for p, e in pages.items() if isinstance(e, str))),  # page order:
                         ensure_ascii=False)[1:-1]  # `Entries` looks them up by a binary search
    text = objects + (", " if objects and strings else "") + strings
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    atomic_write_text(out / PAGES_FILE, f'{{"id": "{digest}", "pages": {{{text}}}}}')
    atomic_write_text(out / STATE_FILE, dumps({**head, "base": digest, "base_sorted": len(objects),
                                               "base_size": len(pages), "pages": {}, "removed": []}))


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
    """The tag pages' entries (objects with `tag`), for `tag_pages.write` to read and update: copies, so
    the base `load` read (what `save` compares with) keeps the entries as they were."""
    items = pages.objects().items() if isinstance(pages, Entries) else pages.items()  # Entries: no base read
    return {p: dict(e) for p, e in items if e.__class__ is dict and e.get("tag")}


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
