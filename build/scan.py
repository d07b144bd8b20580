"""Stage 1: scan the workspace.

Walks the root and returns every candidate file with its root-relative path,
kind, size and content hash. Nothing outside the root is read: a symlink whose
target resolves outside the root becomes a refused entry with an error code,
and symlinked directories are never descended (no cycles, no escapes).

Skipped, never indexed: hidden files and folders (`.git`, `.mnote`, ...),
sidecar folders (`*.ocr/`), and the build's own output folder when it sits
inside the workspace.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from mnote_evidence.build.model import KIND_IMAGE, KIND_MARKDOWN, KIND_OFFICE, KIND_OTHER, KIND_PDF, NOTE_SUFFIXES

SIDECAR_DIR_SUFFIX = ".ocr"

KIND_BY_SUFFIX = {
    **dict.fromkeys(NOTE_SUFFIXES, KIND_MARKDOWN),
    ".pdf": KIND_PDF,
    ".docx": KIND_OFFICE,
    ".png": KIND_IMAGE,
    ".jpg": KIND_IMAGE,
    ".jpeg": KIND_IMAGE,
    ".webp": KIND_IMAGE,
    ".tif": KIND_IMAGE,
    ".tiff": KIND_IMAGE,
    ".bmp": KIND_IMAGE,
}


@dataclass
class SourceFile:
    path: str  # root-relative, '/'-separated
    kind: str
    size: int
    sha256: str | None  # "sha256:<hex>", None when refused
    refused: tuple[str, str] | None = None  # (error_code, message)

    @property
    def source_hash(self) -> str:
        return self.sha256 or ""


def kind_for(path: str) -> str:
    return KIND_BY_SUFFIX.get(Path(path).suffix.lower(), KIND_OTHER)


def file_sha256(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def is_inside(child: Path, root: Path) -> bool:
    try:
        child.relative_to(root)
        return True
    except ValueError:
        return False


def skip_dir(name: str) -> bool:
    return name.startswith(".") or name.endswith(SIDECAR_DIR_SUFFIX) or name == "__pycache__"


def scan(root: Path, exclude: list[Path] | None = None) -> list[SourceFile]:
    """All files under `root`, sorted by path (deterministic order)."""
    root = root.resolve()
    excluded = [p.resolve() for p in (exclude or [])]
    found: list[SourceFile] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        keep = []
        for name in sorted(dirnames):
            full = here / name
            # `root` is resolved, so `full` is a real path unless it is a symlink (handled below)
            if skip_dir(name) or full in excluded:
                continue
            if full.is_symlink():
                found.append(_refused_link(root, full, is_dir=True))
                continue
            keep.append(name)
        dirnames[:] = keep
        prefix = "" if here == root else here.relative_to(root).as_posix() + "/"
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            found.append(_entry(root, os.path.join(dirpath, name), prefix + name))
    found.sort(key=lambda f: f.path)
    return found


def _rel(root: Path, full: Path) -> str:
    return full.relative_to(root).as_posix()


def _refused_link(root: Path, full: Path, is_dir: bool) -> SourceFile:
    rel = _rel(root, full)
    target = full.resolve()
    if not is_inside(target, root):
        return SourceFile(rel, kind_for(rel), 0, None,
                          ("outside_root", "symlink points outside the workspace root; it was not read"))
    what = "directory" if is_dir else "file"
    return SourceFile(rel, kind_for(rel), 0, None,
                      ("symlink_not_followed", f"symlinked {what} inside the root is not followed; "
                       "link to the real path instead"))


def _entry(root: Path, full: str, rel: str) -> SourceFile:
    if os.path.islink(full):
        target = Path(full).resolve()
        if not is_inside(target, root) or not target.is_file():
            return _refused_link(root, Path(full), is_dir=False)
    try:
        size = os.stat(full).st_size
        digest = file_sha256(full)
    except OSError as exc:
        return SourceFile(rel, kind_for(rel), 0, None, ("unreadable", f"cannot read file: {exc.strerror}"))
    return SourceFile(rel, kind_for(rel), size, digest)
