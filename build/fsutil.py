"""Writing output files: atomic replacement, modes that follow the umask, and storage
errors (disk full, permission denied) as one clear line (SPEC §9).

Invariants: a write either replaces the file whole or leaves the old one and no
temp file behind; a new file gets mode 0666 & ~umask like any file the user
creates (not mkstemp's 0600), so a web server running as another user can read
the site; an existing file's mode is kept.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import tempfile
from pathlib import Path

# errno -> what to tell the user
_STORAGE_ERRNOS = {
    errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file size limit is exceeded",
    errno.EACCES: "permission denied", errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
}


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
    """Mode for `path` when it is replaced: the existing file's, else 0666 & ~umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~current_umask()


def atomic_write_bytes(path: Path, data: bytes) -> bool:
    """Write `data` to `path` atomically. Returns False (and touches nothing) if unchanged."""
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, file_mode(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def atomic_write_text(path: Path, text: str) -> bool:
    return atomic_write_bytes(path, text.encode("utf-8"))


def storage_error_message(exc: BaseException) -> str | None:
    """One line for a disk-full / permission / read-only error, naming the file; None for
    any other error (those are bugs and keep their traceback)."""
    if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:
        where = f" {exc.filename}" if exc.filename else ""
        return (f"cannot write{where}: {_STORAGE_ERRNOS[exc.errno]} "
                "(files already in place are intact; fix this and build again)")
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        if "disk is full" in text or "disk i/o error" in text:
            return "cannot write the index: the disk is full; the previous evidence.sqlite is kept"
        if "readonly" in text or "unable to open" in text:
            return "cannot write the index: permission denied; the previous evidence.sqlite is kept"
    return None
