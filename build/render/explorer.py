"""The explorer on every resource page, and one page per folder (SPEC §8; docs/guides/navigation.md).

A page's explorer is bounded whatever the workspace's size: the folders the page lies in, from the
top (each opens its folder page), and the entries of its own folder, subfolders first, then files by
title, at most `SHOWN` of them (the current file always among them; "… N more" opens the folder page).
It is plain HTML (`<details>`), so it works without JavaScript. Every folder but the top one (whose
listing is the front page's tree) has a page under `_folders/` (`urls.folder_page`) listing all of it.

A folder's `listing_key` changes exactly when what the explorer or its folder page shows of it would
(its subfolders' names; its files' paths, titles, kinds and statuses), so a page's key holds its own
folder's listing key and nothing of other folders: a title change or a file added rewrites the pages
of that one folder, its folder page and the front page.
Invariants: every URL is relative to the page it is drawn on; nothing here writes files.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mnote_evidence.build.core.model import KIND_MARKDOWN, ResourceRow
from mnote_evidence.build.core.urls import folder_page, relative_url

SHOWN = 40  # entries of the page's own folder shown inline; the folder page lists the rest


def title_of(res: ResourceRow) -> str:
    """What a file is called in the explorer: its title (front matter, first heading), else its file
    name (a note's without its suffix)."""
    name = posixpath.basename(res.path)
    if res.title:
        return res.title
    return posixpath.splitext(name)[0] if res.kind == KIND_MARKDOWN else name


def folder_of(path: str) -> str:
    """The folder a source lies in ("" for the top of the workspace)."""
    return posixpath.dirname(path)


@dataclass
class _Folder:
    dirs: set[str] = field(default_factory=set)
    files: list[ResourceRow] = field(default_factory=list)


class Folders:
    """Every folder of the workspace with its subfolders and files, from the resource rows alone."""

    def __init__(self, resources: Iterable[ResourceRow], salt: str = ""):
        self.salt = salt
        self._by: dict[str, _Folder] = {"": _Folder()}
        for res in resources:
            folder = folder_of(res.path)
            node = self._by.get(folder)
            if node is None:
                node = self._by[folder] = _Folder()
                child = folder
                while child:  # its ancestors, up to the first one already known
                    parent = folder_of(child)
                    known = parent in self._by
                    self._by.setdefault(parent, _Folder()).dirs.add(posixpath.basename(child))
                    if known:
                        break
                    child = parent
            node.files.append(res)

    def __contains__(self, folder: str) -> bool:
        return folder in self._by

    @property
    def names(self) -> list[str]:
        """Every folder below the top, in path order: each has a folder page."""
        return sorted(f for f in self._by if f)

    def dirs(self, folder: str) -> list[str]:
        return sorted(self._by[folder].dirs, key=lambda d: (d.casefold(), d))

    def files(self, folder: str) -> list[ResourceRow]:
        return sorted(self._by[folder].files, key=lambda r: (title_of(r).casefold(), r.path))

    def listing_key(self, folder: str) -> str:
        """Changes exactly when what is shown of `folder` would (and with the templates: `salt`)."""
        return self._keys[folder]

    @cached_property
    def _keys(self) -> dict[str, str]:
        keys = {}
        for folder, node in self._by.items():
            rows = sorted((r.path, title_of(r), r.kind, r.status, r.error_code or "") for r in node.files)
            payload = [folder, sorted(node.dirs), rows, self.salt]
            keys[folder] = hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:20]
        return keys

    def in_folders(self, folders: set[str]) -> set[str]:
        """The paths of the files that lie directly in one of `folders`."""
        return {r.path for f in folders if f in self._by for r in self._by[f].files}

    def explorer(self, page: str, folder: str, current: str | None, page_of: Callable[[str], str]) -> dict:
        """The explorer's context on site page `page`, for a page in `folder` (`current`: the source
        shown there, marked; None on a folder page, where the folder itself is marked)."""
        chain = []
        parts = folder.split("/") if folder else []
        for i, name in enumerate(parts):
            path = "/".join(parts[: i + 1])
            chain.append({"name": name, "url": relative_url(page, folder_page(path))})
        entries: list[dict[str, Any]] = [
            {
                "dir": True,
                "name": d,
                "url": relative_url(page, folder_page(posixpath.join(folder, d))),
            }
            for d in self.dirs(folder)
        ]
        for res in self.files(folder):
            entries.append(
                {
                    "dir": False,
                    "name": title_of(res),
                    "file": posixpath.basename(res.path),
                    "kind": res.kind,
                    "status": res.status,
                    "url": relative_url(page, page_of(res.path)),
                    "current": res.path == current,
                }
            )
        shown = entries[:SHOWN]
        if current is not None and not any(e.get("current") for e in shown):
            shown += [e for e in entries if e.get("current")]
        return {
            "chain": chain,
            "entries": shown,
            "more": len(entries) - len(shown),
            "folder_url": relative_url(page, folder_page(folder)) if folder else None,
            "at_folder": current is None,
        }

    def folder_context(self, page: str, folder: str, page_of: Callable[[str], str]) -> dict:
        """What a folder page lists: every subfolder and every file (by title)."""
        return {
            "folder": folder,
            "subfolders": [
                {"name": d, "url": relative_url(page, folder_page(posixpath.join(folder, d)))}
                for d in self.dirs(folder)
            ],
            "files": [
                {
                    "title": title_of(r),
                    "file": posixpath.basename(r.path),
                    "kind": r.kind,
                    "status": r.status,
                    "url": relative_url(page, page_of(r.path)),
                }
                for r in self.files(folder)
            ],
        }
