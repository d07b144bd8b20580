"""The site's copies of files (SPEC §8): each source's bytes beside its page (`urls.copy_path`), and the
templates' static files.

Invariants: nothing outside the workspace is copied (a symlink leaving it is skipped); a copy is
replaced whole (a temp file renamed into place) and only when its size differs or the source is newer;
a copy beside our pages of an attachment not served inline is removed (such copies live under `_file/`).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from mnote_evidence.build.core.fsutil import atomic_write_bytes
from mnote_evidence.build.core.urls import STATIC_DIR, copy_path, is_reserved
from mnote_evidence.build.workspace.scan import is_inside


def drop_active_copy(out: Path, rel: str, is_page: Callable[[str], bool]) -> None:
    """Delete a copy an older build made beside our pages of an attachment that is not served inline
    (it lives under `_file/`), unless that name is a page or a reserved file of ours."""
    if copy_path(rel) != rel and not is_reserved(rel) and not is_page(rel):
        (out / rel).unlink(missing_ok=True)


class Folders:
    """What one render learned of folders while copying (`copy_source`): each source folder's resolved
    path (one `resolve` per folder, not one per file: realpath stats every component) and the site's
    folders it made. Per render only: a symlink may change between builds."""

    def __init__(self) -> None:
        self.resolved: dict[str, Path] = {}
        self.made: set[str] = set()


def copy_source(root: Path, out: Path, rel: str, folders: Folders | None = None) -> None:
    """Copy the source at `rel` into the site, unless the copy there has its size and is no older.
    `root` is resolved (`render_site`): only the source's folder is resolved here (once per render with
    `folders`), and the source itself when it is a symlink; each file stat'ed once."""
    folders = folders or Folders()
    src, dest = root / rel, out / copy_path(rel)
    parent, _, name = rel.rpartition("/")
    try:
        st = os.lstat(src)
        if stat.S_ISLNK(st.st_mode):
            resolved = src.resolve()
            st = os.stat(resolved)
        else:
            if parent not in folders.resolved:
                folders.resolved[parent] = src.parent.resolve()
            resolved = folders.resolved[parent] / name
    except OSError:
        return
    if not is_inside(resolved, root) or not stat.S_ISREG(st.st_mode):
        return
    try:
        copied = os.stat(dest)
        if copied.st_size == st.st_size and copied.st_mtime >= st.st_mtime:
            return
    except OSError:
        pass
    if str(dest.parent) not in folders.made:
        dest.parent.mkdir(parents=True, exist_ok=True)
        folders.made.add(str(dest.parent))
    tmp = dest.with_name(f".{dest.name}.tmp")
    try:
        shutil.copyfile(src, tmp)
        tmp.replace(dest)
    except BaseException:  # disk full: no half copy left behind
        tmp.unlink(missing_ok=True)
        raise


def copy_static(templates: Path, out: Path) -> None:
    """The templates' static files (styles, scripts, the vendored search engine) into the site."""
    src = templates / STATIC_DIR
    for path in src.rglob("*"):
        if path.is_file():
            dest = out / STATIC_DIR / path.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(dest, path.read_bytes())  # the vendored search engine is WebAssembly
