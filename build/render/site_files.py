"""Every write, copy and removal of the site goes through here (SPEC §8; docs/security.md, "What a
build writes").

The site folder `out` is the build's own, so it is the root of every write (`fsutil`'s `root`): each
folder below it is a real folder, checked with lstat, never followed. A symlink on the way (a shipped
`_site/` whose `_static` or `Projects` leads out) is removed, the link itself and never its target,
and a real folder made in its place; temp names are bounded (`fsutil.temp_prefix`). What cannot be
placed without removing something that is not a link (a folder where a page goes, a file where a
folder goes) is left as it is: the caller records it (`not_written`) and the rest of the site is
written.
"""

from __future__ import annotations

from pathlib import Path

from mnote_evidence.build.core.fsutil import (
    UnsafePath,
    atomic_write_bytes,
    copy_into,
    folder_inside,
    path_problem,
    stage_bytes,
    unlink_inside,
)


def write_bytes(out: Path, rel: str, data: bytes) -> bool:
    """`data` at site path `rel`, atomically (`fsutil.atomic_write_bytes`); False when unchanged."""
    return atomic_write_bytes(out / rel, data, root=out, replace_links=True)


def write_text(out: Path, rel: str, text: str) -> bool:
    return write_bytes(out, rel, text.encode("utf-8"))


def stage(out: Path, rel: str, data: bytes) -> Path | None:
    """`fsutil.stage_bytes` of site path `rel` (a worker's half of a batched write)."""
    return stage_bytes(out / rel, data, root=out, replace_links=True)


def copy(src: Path, out: Path, rel: str) -> None:
    """The bytes of file `src` at site path `rel` (`fsutil.copy_into`)."""
    copy_into(src, out / rel, root=out, replace_links=True)


def folder(out: Path, rel: str) -> Path:
    """Site folder `rel`, made (real folders all the way down; `out` itself is the caller's)."""
    out.mkdir(parents=True, exist_ok=True)
    folder_inside(out, out / rel, create=True, replace_links=True)
    return out / rel


def is_real_folder(out: Path, rel: str) -> bool:
    """Whether site folder `rel` exists as real folders below `out` (no symlink, no file, on the way)."""
    try:
        return folder_inside(out, out / rel)
    except UnsafePath:
        return False


def unlink(out: Path, rel: str) -> None:
    """Remove the file at site path `rel` (a link there itself); nothing through a link or a file."""
    try:
        unlink_inside(out, out / rel)
    except (UnsafePath, IsADirectoryError, PermissionError):  # a folder there is not ours to remove
        pass


def not_written(out: Path, source: str | None, rel: str, exc: BaseException) -> dict[str, str] | None:
    """The problem to record when `exc` kept site file `rel` from being written because of what is in
    its way (`fsutil.path_problem`); None for any other error (the disk's: the build's to report)."""
    why = path_problem(exc)
    if why is None:
        return None
    try:
        where = Path(exc.filename).relative_to(out).as_posix()
    except (TypeError, ValueError):
        where = rel
    return {
        "path": source or rel,
        "code": "site_file_not_written",
        "message": f"{rel} is not written: {where} in the site folder {why}; remove it and build again",
    }
