"""Stage 2: run a provider on one file, never raising, under the parse budgets (SPEC §3, §11).

`parse_one` is the worker entry point: every failure becomes a `ProviderError` with a code, so one bad
file cannot stop the build. `parse_many` runs it on a task's files (small files several per task) and
finishes each result with a `prepare` where it was parsed; `parse_shipped` does the same for files whose
bytes were carried to a machine without the workspace (its OCR cache entries carried with them).
`in_fresh_process` retries a crashed worker's file alone, so only the file that really crashes is
recorded `parse_crashed`. Which workers run the tasks is `build/parse/executors/`'s; `InOrder` restores
the build's order of the results.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnote_evidence.build.core.model import (
    NOTE_SUFFIXES,
    ParsedResourceArtifact,
    ProviderError,
    Warning_,
    suffix_of,
    summarised,
)
from mnote_evidence.build.parse.ocr.settings import SHIPPED, OcrSettings, ShippedCache
from mnote_evidence.build.parse.providers import ParseInput, provider_for
from mnote_evidence.build.parse.providers.base import shipped_input
from mnote_evidence.build.parse.workers import BudgetExceeded, time_budget, worker_pool
from mnote_evidence.build.workspace.scan import SourceFile

if TYPE_CHECKING:
    from mnote_evidence.build.parse.prepare import Prepare

BATCH_BYTES = 1 << 20  # a batch of small files stops growing at about this many bytes
OnResult = Callable[[str, Any], None]


class InOrder:
    """An `OnResult` that calls `emit(path, result)` in the order of `paths` whatever order the results
    arrive in: an early one waits until those before it are in (the pool finishes tasks out of order;
    the build records resources in path order, which decides the index's block ids)."""

    def __init__(self, paths: list[str], emit: OnResult):
        self.paths, self.emit = paths, emit
        self.early: dict[str, Any] = {}
        self.next = 0

    def __call__(self, path: str, result: Any) -> None:
        self.early[path] = result
        while self.next < len(self.paths) and self.paths[self.next] in self.early:
            ready = self.paths[self.next]
            self.next += 1
            self.emit(ready, self.early.pop(ready))


CRASHED = "the parser process crashed on this file"


def parse_one(
    root: str, path: str, source_hash: str, ocr: OcrSettings
) -> ParsedResourceArtifact | ProviderError:
    """Worker entry point: never raises, so one bad file cannot stop the build."""
    return parse_input(ParseInput(Path(root), path, source_hash), ocr)


def parse_input(
    item: ParseInput, ocr: OcrSettings, seconds: float | None = None
) -> ParsedResourceArtifact | ProviderError:
    """`item` parsed by its provider within the time budget (`seconds`, default `PARSE_SECONDS`);
    never raises."""
    provider = provider_for(item.path, ocr)
    try:
        with time_budget(seconds):
            artifact = provider.parse(item)
    except ProviderError as exc:
        return exc
    except BudgetExceeded as exc:
        return ProviderError("parse_timeout", f"{exc}; the file was not indexed (MNOTE_PARSE_SECONDS)")
    except MemoryError:
        return ProviderError(
            "parse_out_of_memory",
            "ran out of its memory budget while parsing this file (MNOTE_PARSE_MEMORY_MB)",
        )
    except Exception as exc:  # a provider bug or a library crash on odd input
        return ProviderError("parse_failed", f"{type(exc).__name__}: {exc}")
    # a warning that repeats (a `^id` used 1,000 times) is listed up to a bound, then counted
    artifact.warnings = [Warning_(**w) for w in summarised([w.to_json() for w in artifact.warnings])]
    return artifact


def parse_many(
    root: str, files: list[tuple[str, str]], ocr: OcrSettings, prepare: Prepare | None = None
) -> list:
    """Worker entry point for a batch of small files ((path, source hash) each): `parse_one` on each,
    so one task carries many notes (a task per 2 KB note costs more in the pool than its parse),
    then `prepare.many` on the results (their notes compiled into one file: `build/parse/prepare.py`)."""
    with _young_gc_deferred(all(suffix_of(path) in NOTE_SUFFIXES for path, _ in files)):
        results = [parse_one(root, path, source_hash, ocr) for path, source_hash in files]
        if prepare is None:
            return results
        return prepare.many([(path, result) for (path, _), result in zip(files, results)])


@contextmanager
def _young_gc_deferred(notes: bool) -> Iterator[None]:
    """For a batch of notes: no cyclic GC while they are parsed, one young collection after. Notes'
    tokens are many short-lived objects freed by reference counting, and the batch bounds what is
    deferred; any other file (a PDF can allocate without bound) is parsed with the GC as usual."""
    if not notes or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def batches(files: list[SourceFile], max_files: int, max_bytes: int = BATCH_BYTES) -> list[list[SourceFile]]:
    """`files` in order, cut into batches of at most `max_files` files and about `max_bytes` bytes (a
    larger file is a batch of its own), so that work spreads over the workers and a crash retries few."""
    out: list[list[SourceFile]] = []
    size = 0
    for f in files:
        if not out or len(out[-1]) >= max_files or size + f.size > max_bytes:
            out.append([])
            size = 0
        out[-1].append(f)
        size += f.size
    return out


def parse_shipped(
    files: list[tuple[str, str, bytes]],
    ocr: OcrSettings,
    entries: dict[tuple[str, str], list[dict]],
    seconds: float | None = None,
) -> tuple[list[ParsedResourceArtifact | ProviderError], dict[tuple[str, str], list[dict]]]:
    """Worker entry point on a machine without the workspace: `parse_input` on each (path, source hash,
    bytes), the OCR cache being `entries` (read by the build process); returns the results and the
    OCR cache entries made, for the build process to seal and store."""
    cache = ShippedCache(dict(entries))
    token = SHIPPED.set(cache)
    try:
        with _young_gc_deferred(all(suffix_of(path) in NOTE_SUFFIXES for path, _, _ in files)):
            results = []
            for path, source_hash, data in files:
                with shipped_input(path, source_hash, data) as item:
                    results.append(parse_input(item, ocr, seconds))
    finally:
        SHIPPED.reset(token)
    return results, cache.new


def in_fresh_process(fn: Callable[..., Any], *args: Any, memory_mb: float | None = None) -> Any:
    """`fn(*args)` in a worker process of its own; None if that process died (a native crash)."""
    with worker_pool(1, memory_mb) as solo:
        try:
            return solo.submit(fn, *args).result()
        except Exception:
            return None
