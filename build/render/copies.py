"""The site's copies of files (SPEC §8): each source's bytes beside its page (`urls.copy_path`), and the
templates' static files.

Invariants: nothing outside the workspace is copied (a symlink leaving it is skipped); a copy is
replaced whole (a temp file renamed into place) and only when its size differs or the source is newer;
a copy an older build made beside our pages of a file a browser would execute is removed (it now
lives under `_file/`).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Callable

from mnote_evidence.build.fsutil import atomic_write_bytes
from mnote_evidence.build.scan import is_inside
from mnote_evidence.build.urls import STATIC_DIR, copy_path, is_reserved


def drop_active_copy(out: Path, rel: str, is_page: Callable[[str], bool]) -> None:
    """Delete a copy an older build made of an HTML/SVG/... attachment beside our pages (it now
    lives under `_file/`), unless that name is a page or a reserved file of ours."""
    if copy_path(rel) != rel and not is_reserved(rel) and not is_page(rel):
        (out / rel).unlink(missing_ok=True)


def copy_source(root: Path, out: Path, rel: str) -> None:
    """Copy the source at `rel` into the site, unless the copy there has its size and is no older.
    `root` is resolved (`render_site`): only the source's path is resolved here, each file stat'ed once."""
    src, dest = root / rel, out / copy_path(rel)
    resolved = src.resolve()
    try:
        st = os.stat(resolved)
    except OSError:
        return
    if not is_inside(resolved, root) or not stat.S_ISREG(st.st_mode):
        return  # never copy anything that leaves the workspace
    try:
        copied = os.stat(dest)
        if copied.st_size == st.st_size and copied.st_mtime >= st.st_mtime:
            return
    except OSError:
        pass
    dest.parent.mkdir(parents=True, exist_ok=True)
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
