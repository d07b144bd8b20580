"""The front page `index.html` (SPEC §8): the workspace's own home note, its file tree, recent changes.

- The home note is a top-level `index.md`, else `README.md`, else `Home.md` (Obsidian Publish's
  landing note; case-insensitive, `.markdown` too), if indexed `ok`; it is rendered beside the tree,
  its links relative to `index.html`. Without one, the tree is the page's main column.
- "Recent changes" are the resources with the newest `updated_at_ms` (ties: notes first, then by
  path): the build's own record, so the page never stats the workspace.
- The page has a key (`FrontPage.key`) and is rewritten only when the home note's page, the tree,
  recent changes, problems or the Ask link change; it shows no build time.
Invariants: every URL is relative to `index.html`; nothing here writes files.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import posixpath
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from typing import Any

from mnote_evidence.build.core.model import (
    KIND_MARKDOWN,
    NOTE_SUFFIXES,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_STALE,
)
from mnote_evidence.build.core.urls import folder_page, page_path, relative_url
from mnote_evidence.build.render import data
from mnote_evidence.build.render.explorer import title_of

INDEX = "index.html"
HOME_NOTE_STEMS = ("index", "readme", "home")  # in this order: the first one present is the home note
RECENT = 8


def home_note(resources: list[data.Resource]) -> data.Resource | None:
    """The workspace's own front page note: top-level `index.md`, else `README.md`, else `Home.md`
    (ok only)."""
    candidates = {}
    for res in resources:
        if "/" in res.path or res.kind != KIND_MARKDOWN or res.status != STATUS_OK:
            continue
        stem, suffix = posixpath.splitext(res.path)
        if suffix.lower() in NOTE_SUFFIXES and stem.lower() in HOME_NOTE_STEMS:
            candidates.setdefault(stem.lower(), res)  # resources are sorted by path: first spelling wins
    return next((candidates[s] for s in HOME_NOTE_STEMS if s in candidates), None)


def recent(resources: list[data.Resource], n: int = RECENT) -> list[data.Resource]:
    """The `n` resources changed most recently by the index's record (newest first, ties by path).
    Only rows at least as new as the `n`-th newest time can be among them (at least `n` rows rank before
    any older one): those few are ranked by the whole key."""
    times = [r.updated_at_ms for r in resources if r.status != STATUS_STALE]
    if not times:
        return []
    cut = heapq.nlargest(n, times)[-1]
    live = (r for r in resources if r.updated_at_ms >= cut and r.status != STATUS_STALE)
    return heapq.nsmallest(n, live, key=lambda r: (-r.updated_at_ms, r.kind != KIND_MARKDOWN, r.path))


TREE_FIELDS = ("path", "kind", "status", "error_code", "title")


def same_tree(
    before: int, again: dict[str, data.Resource | None] | None, by_path: dict[str, data.Resource]
) -> bool:
    """Whether the tree's rows are those of the `before` rows the build read, given the rows read again
    since (`data.read_resources`): none added or removed, none with other `TREE_FIELDS`."""
    if again is None or len(by_path) != before:
        return False
    fields = attrgetter(*TREE_FIELDS)
    return all(
        old is not None and p in by_path and fields(old) == fields(by_path[p]) for p, old in again.items()
    )


def tree(resources: list[data.Resource], page_of: Callable[[str], str] = page_path) -> dict[str, Any]:
    """Nested folders: {"dirs": {name: subtree}, "files": [{"res", "name", "file", "url"}], "url"}, each
    file by title (`explorer.title_of`), each folder linking its folder page; `page_of`: each source's
    page in this site (`urls.Pages`)."""
    root: dict[str, Any] = {"dirs": {}, "files": [], "url": None}
    for res in resources:
        node = root
        parts = res.path.split("/")
        for i, part in enumerate(parts[:-1]):
            node = node["dirs"].get(part) or node["dirs"].setdefault(
                part,
                {"dirs": {}, "files": [], "url": relative_url(INDEX, folder_page("/".join(parts[: i + 1])))},
            )
        node["files"].append(
            {
                "res": res,
                "name": title_of(res),
                "file": parts[-1],
                "url": relative_url(INDEX, page_of(res.path)),
            }
        )
    return root


def _day(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ms / 1000)) if ms else ""


@dataclass
class FrontPage:
    """What `index.html` shows, computed from the resource rows alone (cheap: no template, no file)."""

    resources: list[data.Resource]
    note: data.Resource | None
    note_key: str | None  # the home note's page key: its body changes exactly when that does
    ask: bool
    known_tree_key: str | None = None

    @classmethod
    def of(
        cls, resources: list[data.Resource], note_key: Any, ask: bool, tree_key: str | None = None
    ) -> FrontPage:
        note = home_note(resources)
        return cls(resources, note, note_key(note) if note else None, ask, tree_key)

    @cached_property
    def recent_changes(self) -> list[data.Resource]:
        return recent(self.resources)

    def key(self, salt: list[Any]) -> str:
        """Changes whenever the page would: the tree's rows (`tree_key`), the error messages and warnings
        of the rows that have them, recent changes, the home note's page, the Ask link, the templates."""
        said = [
            (r.path, r.error_message, r.warnings) for r in self.resources if r.error_message or r.warnings
        ]
        payload = [
            self.tree_key(),
            said,
            [(r.path, r.updated_at_ms) for r in self.recent_changes],
            self.note.path if self.note else None,
            self.note_key,
            self.ask,
            salt,
        ]
        return hashlib.sha256(json.dumps(payload, default=str).encode()).hexdigest()[:20]

    def tree_key(self) -> str:
        """Changes exactly when the file tree's HTML would (paths, kinds, statuses, error codes, titles)."""
        return self._tree_key

    @cached_property
    def _tree_key(self) -> str:
        if self.known_tree_key is not None:  # an edit that changed no row's TREE_FIELDS: as recorded
            return self.known_tree_key
        # asked by `key` and the tree cache; NUL-joined (no field holds one, every row has five): cheaper than
        # JSON
        rows = "\0".join(
            [f"{r.path}\0{r.kind}\0{r.status}\0{r.error_code or ''}\0{r.title or ''}" for r in self.resources]
        )
        return hashlib.sha256(rows.encode()).hexdigest()[:20]

    def context(self, page_of: Callable[[str], str] = page_path) -> dict[str, Any]:
        """The template context of `index.html` (without the base context, the note body and the tree's
        HTML: `tree(self.resources)` rendered by `_tree.html`)."""
        changed = self.recent_changes
        errors, warnings, stale, counts = [], [], [], {}
        for r in self.resources:
            status = r.status
            counts[status] = counts.get(status, 0) + 1
            if status == STATUS_ERROR:
                errors.append({"res": r, "url": relative_url(INDEX, page_of(r.path))})
            elif status == STATUS_STALE:
                stale.append(r)
            if r.warnings:
                warnings += [(r, w) for w in r.warnings]
        return {
            "recent": [
                {
                    "res": r,
                    "name": title_of(r),
                    "file": posixpath.basename(r.path),
                    "folder": posixpath.dirname(r.path),
                    "when": _day(r.updated_at_ms),
                    "url": relative_url(INDEX, page_of(r.path)),
                }
                for r in changed
            ],
            "last_change": _day(changed[0].updated_at_ms) if changed else "",
            "errors": errors,
            "warnings": warnings,
            "stale": stale,
            "counts": counts,
            "home_note": {"path": self.note.path, "url": relative_url(INDEX, page_of(self.note.path))}
            if self.note
            else None,
        }
