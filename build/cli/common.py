"""What several commands share: mapping the library's typed errors to what to do, links into the
site, and the one way commands write text for people and JSON (`echo`, `echo_json`: escape sequences
from notes, file names or LightRAG are shown, never obeyed; `build/core/terminal.py`). Light by
design (`search`, `ask` and `verify` import it): the build's options live in `build/cli/options.py`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from mnote_evidence.build.core.errors import (
    BuildLocked,
    ExecutorUnavailable,
    MnoteError,
    NotAWorkspace,
    OutputInWorkspace,
    UnknownKind,
)
from mnote_evidence.build.core.terminal import json_text, printable

T = TypeVar("T")


def echo(text: str, err: bool = False) -> None:
    """Write text for a person: every control character in it shown, not obeyed (`printable`)."""
    click.echo(printable(text), err=err)


def echo_json(value: Any) -> None:
    """Write `value` as JSON with no control character raw (`json_text`)."""
    click.echo(json_text(value))


def what_to_do(exc: MnoteError) -> str:
    """The library's error as a message for a person: what happened and what to do."""
    if isinstance(exc, BuildLocked):
        return (
            f"another build is writing {exc.out}; wait for it to finish, "
            "or build into another folder with --out"
        )
    if isinstance(exc, NotAWorkspace):
        if exc.path.exists():
            return (
                f"WORKSPACE '{exc.path}' is a file, not a folder: pass the folder that holds your notes "
                f"(for this file, its folder '{exc.path.parent}')"
            )
        return f"WORKSPACE '{exc.path}' does not exist: pass the folder that holds your notes"
    if isinstance(exc, OutputInWorkspace):
        outside = exc.root.parent / f"{exc.root.name}-site"
        return (
            f"OUT '{exc.out}' is inside the workspace '{exc.root}', so the next build would index its own "
            f"site: build into a folder outside it (--out {shlex.quote(str(outside))}) or a hidden one "
            f"inside it (--out {shlex.quote(str(exc.root / '.site'))})"
        )
    if isinstance(exc, ExecutorUnavailable):
        return (
            f"{exc}: start the cluster (`dask scheduler`, then `dask worker {exc.address}` on each machine, "
            "with mnote-evidence[cluster] installed there), or pass the address of a running one to "
            "--executor, or build here with --executor local"
        )
    if isinstance(exc, UnknownKind):
        return (
            f"{exc}: the index in OUT was written by another version, so build into an empty --out "
            "folder; if it happens there too, the format registered for this file (build/core/formats.py) "
            "names a page rule that build/render/pages.py lacks"
        )
    return str(exc)


class _BadOutput(click.ClickException):
    """A refused option value, said in one line (`Error: …`) with the exit status of a bad option."""

    exit_code = 2


def run_library(call: Callable[[], T]) -> T:
    """`call()`, the library's typed errors turned into what to do (a refused OUT: exit 2)."""
    try:
        return call()
    except (OutputInWorkspace, ExecutorUnavailable) as exc:
        raise _BadOutput(what_to_do(exc)) from None
    except MnoteError as exc:
        raise click.ClickException(what_to_do(exc)) from None


def no_index(site_dir: Path) -> str:
    """Why `site_dir` has no index and what to do: build a folder of notes into the default output
    (never into the notes: `build` refuses that), or build into `site_dir` when it holds no notes."""
    from mnote_evidence.build.core.urls import DB_NAME
    from mnote_evidence.functions.adapters.serve import looks_like_notes

    if site_dir.is_dir() and looks_like_notes(site_dir):
        return (
            f"{site_dir} is a folder of notes, not a built site (no {DB_NAME}): build it with "
            f"`mnote-evidence build {shlex.quote(str(site_dir))}` (into ./_site), then pass --site _site"
        )
    return (
        f"{site_dir}/{DB_NAME} not found: run `mnote-evidence build WORKSPACE --out "
        f"{shlex.quote(str(site_dir))}` first, or point --site at a built site"
    )


def site_link(site_dir: Path, url: str) -> str:
    """A site-relative URL as a link that opens the anchor: file:// into the built site, or the
    site-relative URL as is when no site was rendered there (`build --no-site`)."""
    if (site_dir / "index.html").is_file():
        return site_dir.resolve().as_uri() + "/" + url
    return url
