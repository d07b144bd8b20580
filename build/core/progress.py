"""Build progress as data: the library reports `ProgressEvent`s through a callback; it never draws.

`BuildOptions.on_progress` receives, for every stage in this order: scan, notes, parse, knowledge (only
with a LightRAG server), index, then render and page_images (only when the site is built), a first
event with `done == 0`, a last with `done == total`, and events in between as work completes. `total`
is known from the first event on and may be 0 (then the first event is also the last); single-step
stages count 1. Invariants: `0 <= done <= total`; events of one stage are contiguous and `done` never
decreases within it; a callback that raises stops the build (it is the caller's code).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class Stage(StrEnum):
    SCAN = "scan"
    NOTES = "notes"
    PARSE = "parse"
    KNOWLEDGE = "knowledge"
    INDEX = "index"
    RENDER = "render"
    PAGE_IMAGES = "page_images"


@dataclass(frozen=True)
class ProgressEvent:
    stage: Stage
    done: int
    total: int

    @property
    def finished(self) -> bool:
        return self.done >= self.total


OnProgress = Callable[[ProgressEvent], None]


class StageProgress:
    """Counts one stage's work and emits its events: `start` on creation, `finish` at the end."""

    def __init__(self, on_progress: OnProgress | None, stage: Stage, total: int):
        self.on_progress, self.stage, self.total, self.done = on_progress, stage, total, 0
        self._emit()

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        self._emit()

    def finish(self) -> None:
        if self.done < self.total:
            self.done = self.total
            self._emit()

    def _emit(self) -> None:
        if self.on_progress is not None:
            self.on_progress(ProgressEvent(self.stage, self.done, self.total))
