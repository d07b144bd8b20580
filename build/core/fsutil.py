"""Writing output files: atomic replacement, modes that follow the umask, and storage errors (disk
full, permission denied) as one clear line (SPEC §9).

Invariants: a write either replaces the file whole or leaves the old one, and its data is on disk
before it is renamed into place; writes inside `durable_batch()` share one sync per batch (a temp file
written by another process, `stage_bytes`, joins it through `adopt`); a new file gets mode
0666 & ~umask (not mkstemp's 0600), so a web server running as another user can read the site; an
existing file's mode is kept. Given the `root` it writes under (the workspace), a write, read or
removal never follows a symlink or goes through a non-folder in any component below the root
(`UnsafePath`): nothing outside the root is touched. Temp names are bounded (`TEMP_NAME_BYTES`),
whatever the target's name.
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache, wraps
from pathlib import Path
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_STORAGE_ERRNOS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file size limit is exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
}


TEMP_NAME_BYTES = 48  # of the target's name in its temp name: `.NAME.xxxxxxxx.tmp` stays short


class UnsafePath(OSError):
    """A path below the root through a symlink, a file where a folder goes, or a folder where a file
    goes: never written, read or removed through."""


def temp_prefix(path: Path) -> str:
    """The start of `path`'s temp names: `.` + its name cut to `TEMP_NAME_BYTES` bytes (on a character
    boundary) + `.`; a temp name is this, 8 random characters and `.tmp`."""
    name = path.name.encode("utf-8")[:TEMP_NAME_BYTES].decode("utf-8", "ignore")
    return f".{name}."


def temp_glob(path: Path) -> str:
    """A glob pattern matching `path`'s temp files."""
    return glob.escape(temp_prefix(path)) + "*.tmp"


def folder_inside(root: Path, folder: Path, create: bool = False, replace_links: bool = False) -> bool:
    """Whether `folder` (`root` or below it) exists as real folders all the way down: each component
    below `root` is checked with lstat, so a symlink is never followed. With `create`, missing ones are
    made (mode 0777 & ~umask). Raises `UnsafePath` for a symlink or a non-folder on the way; with
    `create` and `replace_links` (the site folder, which is the build's own), a symlink on the way is
    removed (the link itself, never its target) and a real folder made in its place."""
    current = root
    for part in folder.relative_to(root).parts:
        if part in ("", ".", ".."):
            raise UnsafePath(errno.EINVAL, f"'{part}' in a path below the root", str(folder))
        current = current / part
        try:
            mode = os.lstat(current).st_mode
            if create and replace_links and stat.S_ISLNK(mode):
                os.unlink(current)
                raise FileNotFoundError(current)
        except FileNotFoundError:
            if not create:
                return False
            try:
                os.mkdir(current)
            except FileExistsError:  # made by another process meanwhile: checked again
                mode = os.lstat(current).st_mode
            else:
                continue
        if stat.S_ISLNK(mode):
            raise UnsafePath(errno.ELOOP, "a symlink (not followed)", str(current))
        if not stat.S_ISDIR(mode):
            raise UnsafePath(errno.ENOTDIR, "a file where a folder goes", str(current))
    return True


def read_inside(root: Path, path: Path, limit: int) -> bytes | None:
    """The bytes of regular file `path` below `root`, or None: missing, over `limit` bytes, not a
    regular file (a symlink, FIFO or device is never opened as one: O_NOFOLLOW | O_NONBLOCK, then
    fstat), or reached through a symlink or a non-folder (`folder_inside`)."""
    try:
        if not folder_inside(root, path.parent):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def unlink_inside(root: Path, path: Path) -> None:
    """Remove file `path` below `root` (a symlink there is removed itself, never its target); nothing
    when it is missing or reached through a symlink or a non-folder (`UnsafePath`, raised)."""
    if folder_inside(root, path.parent):
        path.unlink(missing_ok=True)


def path_problem(exc: BaseException) -> str | None:
    """Why a file could not be written when the cause is its path, not the disk: "is a symlink (not
    followed)", "is a file where a folder goes", "is a folder where a file goes", "has a name too long
    for the file system" (of `exc.filename`); None for any other error."""
    if isinstance(exc, UnsafePath):
        return f"is {exc.strerror}"
    if isinstance(exc, OSError):
        if exc.errno == errno.ENAMETOOLONG:
            return "has a name too long for the file system"
        if exc.errno in (errno.EISDIR, errno.ENOTDIR, errno.ELOOP):
            return "is in the way of the file"
    return None


def current_umask() -> int:
    """The process umask, read without changing it (Linux /proc), else by set-and-restore."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode(path: Path) -> int:
    """Mode for `path` when it is replaced: the existing regular file's (a symlink is not followed),
    else 0666 & ~umask."""
    try:
        st = os.lstat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return st.st_mode & 0o7777
    return 0o666 & ~current_umask()


def _holds(path: Path, data: bytes) -> bool:
    """Whether regular file `path` (not followed if a symlink) holds exactly `data`; read only when
    its size is `data`'s."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # known now, not when the batch renames its files
            raise
        return False
    if stat.S_ISDIR(st.st_mode):
        raise UnsafePath(errno.EISDIR, "a folder where a file goes", str(path))
    if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
        return False
    try:
        return path.read_bytes() == data
    except OSError:
        return False


def atomic_write_bytes(
    path: Path, data: bytes, root: Path | None = None, replace_links: bool = False
) -> bool:
    """Write `data` to `path` atomically. Returns False (and touches nothing) if unchanged.

    Alone: the data is fsync'ed, then renamed over `path`. Inside `durable_batch()`: the
    temp file joins the batch and is renamed when the batch commits (one sync for all). With `root`,
    `path`'s folders below it are made and checked by `folder_inside` (`UnsafePath`; `replace_links`:
    a symlink on the way is replaced by a real folder)."""
    batch = _batch.get()
    if batch is not None and path in batch.pending:  # written before in this batch: that goes in first
        batch.commit()
    _make_folder(path, root, replace_links)
    if _holds(path, data):
        return False
    tmp = _temp_beside(path, data, sync=batch is None)
    if batch is None:
        _replace(tmp, path)
    else:
        batch.add(tmp, path, len(data))
    return True


def _make_folder(path: Path, root: Path | None, replace_links: bool = False) -> None:
    """`path`'s folder, made if missing (checked below `root` when given: `folder_inside`)."""
    if root is None:
        path.parent.mkdir(parents=True, exist_ok=True)
    else:
        root.mkdir(parents=True, exist_ok=True)  # the root itself is the caller's, trusted
        folder_inside(root, path.parent, create=True, replace_links=replace_links)


def _temp_beside(path: Path, data: bytes, sync: bool) -> Path:
    """`data` in a new temp file next to `path` (fsync'ed if `sync`), with the mode `path` will have."""
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, file_mode(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _replace(tmp: Path, path: Path) -> None:
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def stage_bytes(
    path: Path, data: bytes, root: Path | None = None, replace_links: bool = False
) -> Path | None:
    """The first half of a batched `atomic_write_bytes`, for a worker process: `data` in a temp file
    beside `path`, neither synced nor renamed (the build process does both: `adopt`); None if `path`
    already holds exactly `data`."""
    _make_folder(path, root, replace_links)
    if _holds(path, data):
        return None
    return _temp_beside(path, data, sync=False)


def adopt(tmp: Path, path: Path) -> None:
    """The second half: the staged `tmp` replaces `path` as `atomic_write_bytes` would (it joins the
    current `durable_batch`, else it is fsync'ed and renamed now)."""
    batch = _batch.get()
    if batch is None:
        fsync_path(tmp)
        _replace(tmp, path)
        return
    if path in batch.pending:
        batch.commit()
    batch.add(tmp, path, tmp.stat().st_size)


def write_named(files: Iterable[tuple[Path, bytes]]) -> int:
    """Files named by their bytes' hash, each `(path, bytes)` in a real folder the caller has checked:
    each one missing (or not holding its bytes) is written to a temp beside it, all are made durable by
    one sync, then renamed into place (a link at a name is replaced, never followed), and their folders
    synced. A reader never sees part of a file under its name. Returns how many were written."""
    mode = 0o666 & ~current_umask()
    moves: list[tuple[Path, Path]] = []
    try:
        for path, data in files:
            if _holds(path, data):
                continue
            tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            moves.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        if moves:
            _sync([tmp for tmp, _ in moves])
            for tmp, path in moves:
                os.replace(tmp, path)
            for folder in {path.parent for _, path in moves}:
                fsync_path(folder)
    except BaseException:
        for tmp, _ in moves:
            tmp.unlink(missing_ok=True)
        raise
    return len(moves)


class _Batch:
    """Temp files written and not yet renamed into place (see `durable_batch`)."""

    def __init__(self) -> None:
        self.moves: list[tuple[Path, Path]] = []
        self.pending: set[Path] = set()
        self.size = 0

    def add(self, tmp: Path, path: Path, size: int) -> None:
        self.moves.append((tmp, path))
        self.pending.add(path)
        self.size += size
        if len(self.moves) >= BATCH_FILES or self.size >= BATCH_BYTES:
            self.commit()

    def commit(self) -> None:
        """Make the temps durable (one sync), rename them into place, make the renames durable."""
        if not self.moves:
            return
        moves, self.moves, self.pending, self.size = self.moves, [], set(), 0
        try:
            _sync([tmp for tmp, _ in moves])
            for tmp, path in moves:
                os.replace(tmp, path)
        except BaseException:
            for tmp, _ in moves:
                tmp.unlink(missing_ok=True)
            raise
        _sync(list(dict.fromkeys(path.parent for _, path in moves)))


BATCH_FILES = 512  # a batch commits when it holds this many files...
BATCH_BYTES = 64 << 20  # ... or this many bytes: what a kill can leave as temp files is bounded
_batch: ContextVar[_Batch | None] = ContextVar("mnote_write_batch", default=None)


@contextmanager
def durable_batch() -> Iterator[None]:
    """Atomic writes inside this block are made durable together: one sync per batch, not one per file.

    Every file is still replaced whole by a rename, only after its data is on disk, so readers see the
    old file or the new one. A crash can lose the batch not yet committed (up to `BATCH_FILES` files):
    their temp files (`temp_glob`) may be left and the old files stay. Callers record a file as done
    (the site's state file, the rows pointing at sidecars) only after the batch commits, so the next
    build redoes what was lost. A batch inside a batch joins the outer one; an error still commits the
    files already written whole."""
    if _batch.get() is not None:
        yield
        return
    batch = _Batch()
    token = _batch.set(batch)
    try:
        yield
    finally:
        _batch.reset(token)
        batch.commit()


def commit_pending() -> None:
    """Commit the current batch now (nothing outside a batch): before writing a file that records
    the batch's files as done."""
    batch = _batch.get()
    if batch is not None:
        batch.commit()


def in_durable_batch(func: Callable[P, R]) -> Callable[P, R]:
    """Run `func` inside `durable_batch()`."""

    @wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with durable_batch():
            return func(*args, **kwargs)

    return run


FSYNC_EACH_MAX = 32


def _sync(paths: list[Path]) -> None:
    """Flush files (or folders) to disk: an fsync of each for a few (`FSYNC_EACH_MAX`: a one-note edit's
    files), else one `syncfs` per file system where Linux has it (a `syncfs` also flushes every other
    process's pending writes there, too slow for a small batch on a busy machine)."""
    if len(paths) > FSYNC_EACH_MAX:
        devices: dict[int, Path] = {}
        for path in paths:
            devices.setdefault(os.stat(path).st_dev, path)
        if _syncfs() is not None and all(_syncfs_ok(path) for path in devices.values()):
            return
    for path in paths:
        fsync_path(path)


def fsync_path(path: Path) -> None:
    """fsync a file or folder by its path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@cache
def _syncfs():
    """Linux's syncfs(2) (flush one file system), or None."""
    import ctypes  # only when a batch commits: commands that write nothing do not load it

    try:
        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None


def _syncfs_ok(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        return _syncfs()(fd) == 0
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str, root: Path | None = None, replace_links: bool = False) -> bool:
    return atomic_write_bytes(path, text.encode("utf-8"), root, replace_links)


def copy_into(src: Path, path: Path, root: Path, replace_links: bool = False) -> None:
    """Copy file `src` to `path` below `root` as `atomic_write_bytes` writes (folders checked, a
    bounded temp name renamed into place), streamed rather than read whole; not synced (a copy is
    made again when it differs from its source)."""
    _make_folder(path, root, replace_links)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, file_mode(path))
        with os.fdopen(fd, "wb") as f, open(src, "rb") as source:
            shutil.copyfileobj(source, f, 1 << 20)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _replace(Path(tmp), path)


def storage_error_message(exc: BaseException) -> str | None:
    """One line for a disk-full / permission / read-only error, naming the file; None for
    any other error (those are bugs and keep their traceback)."""
    if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:
        where = f" {exc.filename}" if exc.filename else ""
        return (
            f"cannot write{where}: {_STORAGE_ERRNOS[exc.errno]} "
            "(files already in place are intact; fix this and build again)"
        )
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        if "disk is full" in text or "disk i/o error" in text:
            return "cannot write the index: the disk is full; the previous evidence.sqlite is kept"
        if "readonly" in text or "unable to open" in text:
            return "cannot write the index: permission denied; the previous evidence.sqlite is kept"
    return None
