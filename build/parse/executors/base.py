"""The parse stage's one executor interface: tasks in, each file's result out (SPEC §3, §9).

A `ParseTask` is a few files of the workspace (several small notes, or one attachment) with what their
parse needs; `ParseExecutor.map` runs tasks anywhere and yields `(path, result)` once per file, in any
order, each result finished by the task's `prepare` (its sidecars staged in this process's durable
batch or already where it was parsed). Invariants: a result is the one `run.parse_many` gives for the
same bytes and settings; `map` never raises for one file's failure (it is that file's `ProviderError`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mnote_evidence.build.parse.ocr.settings import OcrSettings

if TYPE_CHECKING:
    from mnote_evidence.build.parse.prepare import Prepare


@dataclass(frozen=True)
class ParseTask:
    root: str
    files: list[tuple[str, str]]  # (path, source hash), in the build's order
    ocr: OcrSettings
    prepare: Prepare | None = None

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.files]

    def alone(self) -> list[ParseTask]:
        """This task's files, one task each (a crashed task's files are retried alone)."""
        return [
            ParseTask(self.root, [f], self.ocr, None if self.prepare is None else self.prepare.only([f[0]]))
            for f in self.files
        ]


class ParseExecutor(Protocol):
    def map(self, tasks: list[ParseTask]) -> Iterator[tuple[str, Any]]:
        """Run `tasks`; yield (path, prepared result) once per file of them, as each arrives."""

    def close(self) -> None:
        """Let go of what the executor holds (worker processes, a cluster connection)."""
