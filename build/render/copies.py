"""The site's copies of files (SPEC §8): each source's bytes where the site's placement puts them
(`urls.Pages.copy`: beside its page, or under `_file/`), and the templates' static files.

A Word document's pictures are extracted once into `_pages/<sha256 prefix>/media/` (`copy_pictures`:
keyed by the document's content, as PDF page images are), for its page to show at their place.
Invariants: nothing outside the workspace is copied (a symlink leaving it is skipped); a copy is
replaced whole (a temp file renamed into place) and only when the regular file there differs in size
or is older than the source; every copy is written through real folders below the site
(`render/site_files.py`); a copy an older build left at the source's own path is removed when the
copy lives elsewhere and nothing of this site is placed there; a note's copy has its `%%comments%%`
blanked (`markdown/comments.py`), written only when its bytes differ.
"""

from __future__ import annotations

import os
import posixpath
import stat
import zipfile
from pathlib import Path

from mnote_evidence.build.core.formats import kind_for
from mnote_evidence.build.core.model import KIND_MARKDOWN
from mnote_evidence.build.core.urls import PAGES_DIR, STATIC_DIR, Pages, copy_path, is_reserved
from mnote_evidence.build.markdown.comments import blank_comment_bytes
from mnote_evidence.build.parse.providers.docx_parts import MAX_PICTURE_BYTES, Picture, pictures
from mnote_evidence.build.render import site_files
from mnote_evidence.build.workspace.scan import is_inside


def drop_active_copy(out: Path, rel: str, placed: Pages) -> None:
    """Delete a copy an older build made at the source's own path when its copy lives elsewhere
    (under `_file/`: an attachment not served inline, or moved by a collision), unless that name is
    a reserved file or holds a file or folder of this site."""
    if placed.copy(rel) != rel and not is_reserved(rel) and placed.is_free(rel):
        site_files.unlink(out, rel)


class Folders:
    """What one render learned of folders while copying (`copy_source`): each source folder's resolved
    path (one `resolve` per folder, not one per file: realpath stats every component) and the site's
    folders it made. Per render only: a symlink may change between builds."""

    def __init__(self) -> None:
        self.resolved: dict[str, Path] = {}
        self.made: set[str] = set()


def copy_source(
    root: Path, out: Path, rel: str, folders: Folders | None = None, dest_rel: str | None = None
) -> None:
    """Copy the source at `rel` into the site at `dest_rel` (default `urls.copy_path`), unless the
    regular file there has its size and is no older. `root` is resolved (`render_site`): only the
    source's folder is resolved here (once per render with `folders`), and the source itself when it
    is a symlink; each file stat'ed once."""
    folders = folders or Folders()
    dest_rel = dest_rel or copy_path(rel)
    src, dest = root / rel, out / dest_rel
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
    folder = dest_rel.rpartition("/")[0]
    if folder not in folders.made:  # real folders first: a copy seen through a link is none
        site_files.folder(out, folder)
        folders.made.add(folder)
    if kind_for(rel) == KIND_MARKDOWN:  # a note as published, without its `%%comments%%`: compared whole
        try:  # (a copy of the same size may hold the comments: an older copy, or a UTF-8 note's blanks)
            data = resolved.read_bytes()
        except OSError:
            return
        site_files.write_bytes(out, dest_rel, blank_comment_bytes(data))
        return
    try:
        copied = os.lstat(dest)  # a link there is no copy: it is replaced
        if stat.S_ISREG(copied.st_mode) and copied.st_size == st.st_size and copied.st_mtime >= st.st_mtime:
            return
    except OSError:
        pass
    site_files.copy(resolved, out, dest_rel)


def copy_static(templates: Path, out: Path) -> None:
    """The templates' static files (styles, scripts, the vendored search engine) into the site."""
    src = templates / STATIC_DIR
    for path in src.rglob("*"):
        if path.is_file():  # the vendored search engine is WebAssembly: bytes
            site_files.write_bytes(out, f"{STATIC_DIR}/{path.relative_to(src).as_posix()}", path.read_bytes())


# beside the settings' folders of `_pages/<sha256 prefix>/` (page_images.remove_stale keeps it)
MEDIA = "media"


def picture_paths(source_hash: str, found: list[Picture]) -> dict[str, str]:
    """Site path of each picture part of a Word document with content `source_hash` (one file per part,
    however often it is shown)."""
    folder = f"{PAGES_DIR}/{source_hash.removeprefix('sha256:')[:24]}/{MEDIA}"
    out: dict[str, str] = {}
    for pic in found:
        if pic.part not in out:
            out[pic.part] = f"{folder}/picture-{len(out) + 1}{posixpath.splitext(pic.part)[1].lower()}"
    return out


def document_pictures(root: Path, rel: str) -> list[Picture]:
    """The pictures of the Word document at `rel` (none for another file, or one outside the workspace)."""
    if not rel.lower().endswith(".docx"):
        return []
    src = root / rel
    try:
        if not is_inside(src.resolve(), root):
            return []
    except OSError:
        return []
    return pictures(src)


def copy_pictures(root: Path, out: Path, rel: str, source_hash: str) -> None:
    """Extract the pictures of the Word document at `rel` that the site lacks (best effort: a picture
    that cannot be read or written is left out of its page's files, its page shows its alt text)."""
    found = document_pictures(root, rel)
    missing = {part: p for part, p in picture_paths(source_hash, found).items() if not (out / p).is_file()}
    if not missing:
        return
    try:
        with zipfile.ZipFile(root / rel) as zf:
            for part, dest in missing.items():
                with zf.open(part) as f:
                    data = f.read(MAX_PICTURE_BYTES + 1)
                if len(data) <= MAX_PICTURE_BYTES:
                    site_files.write_bytes(out, dest, data)
    except (OSError, KeyError, zipfile.BadZipFile, ValueError):
        return
