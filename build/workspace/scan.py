"""Stage 1: scan the workspace.

Walks the root and returns every candidate file with its root-relative path, kind (from the format
registry), size and content hash. Nothing outside the root is read: a symlink resolving outside it is
a refused entry, and symlinked directories are never descended. Only regular files are read: a FIFO,
socket or device is `not_regular_file` without being opened, a broken or looping symlink
`symlink_broken`; files are opened non-blocking and checked again after opening.
Change detection: a file's hash is computed only when its size or `st_mtime_ns` differs from what
the previous build recorded (`known`; None, `build --rehash`, hashes all); a stamp is recorded only
when the mtime is `RACY_NS` older than the scan (a "racily clean" file is hashed again next time).
Skipped: hidden files and folders, sidecar folders (`*.ocr/`), the build's own output folder, any
folder holding a build's output (its `evidence.sqlite` and lock or state store), and what an
`.mnoteignore` matches (`Ignore`: gitignore syntax, one file in any folder, its patterns relative to
that folder; a matched folder is not descended, a matched file never opened).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Protocol

from pathspec import GitIgnoreSpec

from mnote_evidence.build.core.formats import kind_for
from mnote_evidence.build.core.fsutil import read_inside
from mnote_evidence.build.core.urls import holds_site

SIDECAR_DIR_SUFFIX = ".ocr"
IGNORE_FILE = ".mnoteignore"
MAX_IGNORE_BYTES = 1 << 20
RACY_NS = 2_000_000_000  # a stamp younger than this (2 s: FAT's mtime granularity) is not trusted next time

Stamp = tuple[int, int]


class Recorded(Protocol):
    """What the previous build recorded of a file (`model.ResourceRow` is one): its stamp and hash."""

    source_size: int | None
    source_mtime_ns: int | None
    source_hash: str | None


@dataclass(slots=True)
class SourceFile:
    path: str
    kind: str
    size: int
    sha256: str | None
    refused: tuple[str, str] | None = None
    stamp: Stamp | None = None  # (size, mtime_ns) to record: None when refused or too recent to trust
    hashed: bool = True

    @property
    def source_hash(self) -> str:
        return self.sha256 or ""


class NotRegularFile(OSError):
    """The path names a FIFO, socket, device or folder: never read."""


def file_sha256(path: Path | str) -> str:
    h = hashlib.sha256()
    with open_regular(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def open_regular(path: Path | str):
    """Open a regular file for binary reading; anything else raises `NotRegularFile` without
    blocking (O_NONBLOCK: a FIFO opens at once and is then refused by fstat)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise NotRegularFile(f"{path} is not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFile(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def is_inside(child: Path, root: Path) -> bool:
    try:
        child.relative_to(root)
        return True
    except ValueError:
        return False


class Ignore:
    """The workspace's `.mnoteignore` files, as git reads `.gitignore` files: each one's patterns apply
    below its folder, the last matching pattern of the deepest file with one decides (`!` re-includes),
    and nothing below an ignored folder is included again. `ignored` counts what the scan left out (a
    folder once, not its files)."""

    def __init__(self, root: Path):
        self.root = root
        self.ignored = 0
        self._specs: dict[str, GitIgnoreSpec | None] = {}  # folder ("" or "a/b/") -> its file's patterns
        self._applies: dict[str, bool] = {}  # folder -> whether it or a folder above it has patterns

    def seen(self, folder: str, has_file: bool) -> bool:
        """The scan listed `folder`: its ignore file is read now if the listing holds one. True if any
        pattern applies below it (else its entries need no look-up: most folders of most vaults)."""
        spec = self._specs[folder] = self._read(folder) if has_file else None
        parent = folder[: folder.rstrip("/").rfind("/") + 1]
        applies = self._applies[folder] = spec is not None or bool(folder and self._applies.get(parent))
        return applies

    def _read(self, folder: str) -> GitIgnoreSpec | None:
        data = read_inside(self.root, self.root / folder / IGNORE_FILE, MAX_IGNORE_BYTES)
        return (
            None if data is None else GitIgnoreSpec.from_lines(data.decode("utf-8", "replace").splitlines())
        )

    def _spec(self, folder: str) -> GitIgnoreSpec | None:
        if folder not in self._specs:
            self._specs[folder] = self._read(folder)
        return self._specs[folder]

    def decides(self, rel: str, is_dir: bool) -> bool:
        """True if an ignore file matches `rel` itself (its folders not looked at)."""
        cut = rel.rfind("/")
        while True:
            folder = rel[: cut + 1]
            spec = self._spec(folder)
            if spec is not None:
                include = spec.check_file(rel[len(folder) :] + ("/" if is_dir else "")).include
                if include is not None:
                    return include
            if cut < 0:
                return False
            cut = rel.rfind("/", 0, cut)

    def matches(self, rel: str) -> bool:
        """True if the file at `rel` is ignored: by a pattern, or in an ignored folder."""
        cut = rel.find("/")
        while cut >= 0:
            if self.decides(rel[:cut], is_dir=True):
                return True
            cut = rel.find("/", cut + 1)
        return self.decides(rel, is_dir=False)


def skip_dir(name: str) -> bool:
    return name.startswith(".") or name.endswith(SIDECAR_DIR_SUFFIX) or name == "__pycache__"


def scan(
    root: Path,
    exclude: list[Path] | None = None,
    known: Mapping[str, Recorded] | None = None,
    sites: list[str] | None = None,
    ignore: Ignore | None = None,
) -> list[SourceFile]:
    """All files under `root`, sorted by path (deterministic order). `known`: path -> what the previous
    build recorded (its rows, as read); a file with the recorded stamp (and a recorded hash) keeps that
    hash without being read. A folder holding a build's output (`urls.holds_site`) is skipped, its
    root-relative path appended to `sites`. One `os.scandir` per folder and one `lstat` per file.
    `ignore`: the workspace's ignore files (made here if not given), counting what they leave out."""
    root = root.resolve()
    known = known or {}
    ignore = ignore or Ignore(root)
    trust_before = time.time_ns() - RACY_NS
    excluded = {str(p.resolve()) for p in (exclude or [])}
    found: list[SourceFile] = []
    folders = [(str(root), "")]
    while folders:
        folder, prefix = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:  # unreadable folder: skipped, as os.walk does
            continue
        if prefix and holds_site(e.name for e in entries):  # a site moved in, or built by another version
            if sites is not None:
                sites.append(prefix[:-1])
            continue
        patterns = ignore.seen(prefix, any(entry.name == IGNORE_FILE for entry in entries))
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()  # follows a symlink, as os.walk sorts entries (a link to a folder)
            except OSError:
                is_dir = False
            if is_dir:
                # `root` is resolved, so the path is a real path unless it is a symlink (handled below)
                if skip_dir(name) or entry.path in excluded:
                    continue
                if patterns and ignore.decides(prefix + name, is_dir=True):
                    ignore.ignored += 1
                    continue
                if entry.is_symlink():
                    found.append(_refused_link(root, Path(entry.path), is_dir=True))
                else:
                    folders.append((entry.path, prefix + name + "/"))
            elif not name.startswith("."):
                rel = prefix + name
                if patterns and ignore.decides(rel, is_dir=False):
                    ignore.ignored += 1
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    found.append(_unreadable(rel, exc))
                    continue
                found.append(_entry(root, entry.path, rel, known, trust_before, st))
    found.sort(key=_by_path)
    return found


_by_path = attrgetter("path")


def _rel(root: Path, full: Path) -> str:
    return full.relative_to(root).as_posix()


def _refused_link(root: Path, full: Path, is_dir: bool) -> SourceFile:
    rel = _rel(root, full)
    try:
        target = full.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return SourceFile(
            rel,
            kind_for(rel),
            0,
            None,
            ("symlink_broken", "symlink is broken or loops back on itself; it was not read"),
        )
    if not is_inside(target, root):
        return SourceFile(
            rel,
            kind_for(rel),
            0,
            None,
            ("outside_root", "symlink points outside the workspace root; it was not read"),
        )
    what = "directory" if is_dir else "file"
    return SourceFile(
        rel,
        kind_for(rel),
        0,
        None,
        (
            "symlink_not_followed",
            f"symlinked {what} inside the root is not followed; link to the real path instead",
        ),
    )


def _unreadable(rel: str, exc: OSError) -> SourceFile:
    return SourceFile(rel, kind_for(rel), 0, None, ("unreadable", f"cannot read file: {exc.strerror}"))


def _entry(
    root: Path,
    full: str,
    rel: str,
    known: Mapping[str, Recorded] = {},
    trust_before: int = 0,
    st: os.stat_result | None = None,
) -> SourceFile:
    """One file's entry; `st`: its `lstat`, when the caller has it (one system call for most files:
    a link is followed below)."""
    if st is None:
        try:
            st = os.lstat(full)
        except OSError as exc:
            return _unreadable(rel, exc)
    if stat.S_ISLNK(st.st_mode):
        refused = _refused_link(root, Path(full), is_dir=False)
        target = Path(full).resolve() if refused.refused[0] != "symlink_broken" else None
        if target is None or not is_inside(target, root) or not target.is_file():
            return refused
    try:
        st = os.stat(full) if stat.S_ISLNK(st.st_mode) else st
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(full)
        stamp = (st.st_size, st.st_mtime_ns)
        recorded = known.get(rel)
        hashed = (
            recorded is None
            or not recorded.source_hash
            or (recorded.source_size, recorded.source_mtime_ns) != stamp
        )
        digest = file_sha256(full) if hashed else recorded.source_hash
    except NotRegularFile:
        return SourceFile(
            rel,
            kind_for(rel),
            0,
            None,
            ("not_regular_file", "a FIFO, socket or device, not a regular file; it was not opened"),
        )
    except OSError as exc:
        return SourceFile(rel, kind_for(rel), 0, None, ("unreadable", f"cannot read file: {exc.strerror}"))
    trusted = stamp if stamp[1] < trust_before else None
    return SourceFile(rel, kind_for(rel), stamp[0], digest, stamp=trusted, hashed=hashed)
