"""Typed errors of the library (the build and its stages), one class per thing that can go wrong.

Like MkDocs' `exceptions.py` and sqlite-utils' `NoTable`: the library raises these and never
knows about click or exit codes; `build/cli/main.py` alone turns them into a message that says what
to do. Bad *input files* are not errors here: they are recorded per file (SPEC §11) and the
build goes on. These are the conditions that stop a whole call.

Invariants: every class derives from `MnoteError`; each carries the facts a caller needs as
attributes (`path`, `out`, `kind`), so no caller parses a message string.
"""

from __future__ import annotations

from pathlib import Path


class MnoteError(Exception):
    """Base of every error the mnote-evidence library raises on purpose."""


class BuildError(MnoteError):
    """A build cannot start or cannot finish."""


class NotAWorkspace(BuildError):
    """The workspace to build is missing or is not a folder."""

    def __init__(self, path: Path):
        self.path = Path(path)
        what = "is not a folder" if self.path.exists() else "does not exist"
        super().__init__(f"workspace '{self.path}' {what}")


class BuildLocked(BuildError):
    """Another build holds the lock on this output folder."""

    def __init__(self, out: Path):
        self.out = Path(out)
        super().__init__(f"another build is writing {self.out}")


class OutputInWorkspace(BuildError):
    """The output folder is inside the workspace where the scan would read it: the next build would
    index its own site. Raised before anything is written."""

    def __init__(self, root: Path, out: Path):
        self.root, self.out = Path(root), Path(out)
        super().__init__(f"output folder '{self.out}' is inside the workspace '{self.root}'")


class UnknownKind(BuildError):
    """The site renderer met a resource whose kind or format has no page rule.

    Raised instead of rendering a placeholder page: a format registered without a page
    renderer (or an index written by a different version) must not pass silently."""

    def __init__(self, path: str, kind: str, page: str | None):
        self.path, self.kind, self.page = path, kind, page
        rule = f"page rule '{page}'" if page else "registered format"
        super().__init__(f"no {rule} to render '{path}' (kind '{kind}')")


class IndexDamaged(BuildError):
    """An in-place write met a damaged `evidence.sqlite` (SQLite: malformed). The file was moved aside
    (`moved_to`), so the next build rebuilds the index from the files and sidecars."""

    def __init__(self, path: Path, moved_to: Path, detail: str):
        self.path, self.moved_to = Path(path), Path(moved_to)
        super().__init__(
            f"{self.path} is damaged ({detail}); it was moved to {self.moved_to.name}: run the "
            "build again to rebuild the index"
        )


class ExecutorUnavailable(BuildError):
    """The cluster named to run the parse (`--executor ADDRESS`) cannot be reached, or gave no result
    for longer than its deadline. Raised before the index is written: the previous build stays."""

    def __init__(self, address: str, detail: str):
        self.address, self.detail = address, detail
        super().__init__(f"the parse executor at {address} is unavailable: {detail}")
