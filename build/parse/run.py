"""Stage 2: run a provider on one file, never raising, under the parse budgets (SPEC §3, §11).

`parse_one` is the worker entry point: every failure becomes a `ProviderError` with a code, so one bad
file cannot stop the build. `parse_in_pool` runs it in worker processes (`workers.py`), small files
several per task (`parse_many`), and retries a crashed worker's files one per fresh process, so only
the file that really crashes is recorded `parse_crashed`. `parse_all` picks in-process or the pool;
with a `prepare` each result is finished where it was parsed, and with an `on_result` each is handed
over as it arrives and not kept (`InOrder` restores the build's order).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from concurrent.futures import as_completed
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
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.providers import ParseInput, provider_for
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


def parse_one(
    root: str, path: str, source_hash: str, ocr: OcrSettings
) -> ParsedResourceArtifact | ProviderError:
    """Worker entry point: never raises, so one bad file cannot stop the build."""
    provider = provider_for(path, ocr)
    try:
        with time_budget():
            artifact = provider.parse(ParseInput(Path(root), path, source_hash))
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


def parse_in_pool(
    files: list[SourceFile],
    root: Path,
    jobs: int,
    ocr: OcrSettings,
    advance: Callable[[int], None],
    batch: int = 1,
    on_result: OnResult | None = None,
    prepare: Prepare | None = None,
) -> dict:
    """Parse in worker processes, up to `batch` files per task (see `batches`). A worker that
    dies (a crash inside a native library) breaks the pool; the files it took down are retried
    one per fresh process, so only the file that really crashes is recorded as `parse_crashed`.
    Returns every result, or with `on_result` none (each was handed to it)."""
    results: dict[str, Any] = {}
    done: set[str] = set()

    def deliver(path: str, result: Any) -> None:
        done.add(path)
        if on_result is None:
            results[path] = result
        else:  # outside the pool's `try` below: its error (disk full) is the build's
            on_result(path, result)

    with worker_pool(jobs) as pool:
        futures = {
            pool.submit(
                parse_many, str(root), [(f.path, f.source_hash) for f in group], ocr, _only(prepare, group)
            ): group
            for group in batches(files, batch)
        }
        try:
            for fut in as_completed(futures):
                group = futures.pop(fut)  # a done future holds its results: let them go once delivered
                try:
                    parsed = fut.result()
                except Exception:
                    continue
                del fut
                for f, result in zip(group, parsed):
                    deliver(f.path, result)
                del parsed
                advance(len(group))
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
    for f in files:
        if f.path in done:
            continue
        with worker_pool(1) as solo:
            try:
                result = solo.submit(
                    parse_many, str(root), [(f.path, f.source_hash)], ocr, _only(prepare, [f])
                ).result()[0]
            except Exception:
                result = ProviderError("parse_crashed", "the parser process crashed on this file")
        deliver(f.path, result)
        advance(1)
    return results


def _only(prepare: Prepare | None, group: list[SourceFile]) -> Prepare | None:
    return None if prepare is None else prepare.only([f.path for f in group])


def parse_all(
    files: list[SourceFile],
    root: Path,
    jobs: int,
    ocr: OcrSettings,
    advance: Callable[[int], None],
    batch: int = 1,
    min_pool: int = 2,
    on_result: OnResult | None = None,
    prepare: Prepare | None = None,
) -> dict:
    """Parse `files`: in worker processes when `jobs` > 1 and there are at least `min_pool` files
    (fewer would not repay the start of the workers), else here, in the same batches; each result then
    goes through `prepare` where it was parsed. `on_result(path, result)` is called as each result
    arrives (in no particular order; `InOrder` restores one) and the result is not kept, so this
    process's share of the work overlaps the workers' parsing. Returns the results not handed to an
    `on_result` (all, or none)."""
    if jobs <= 1 or len(files) < max(2, min_pool):
        results: dict[str, Any] = {}
        for group in batches(files, batch):
            for f, result in zip(
                group,
                parse_many(str(root), [(f.path, f.source_hash) for f in group], ocr, _only(prepare, group)),
            ):
                if on_result is None:
                    results[f.path] = result
                else:
                    on_result(f.path, result)
                advance(1)
        return results
    return parse_in_pool(files, root, jobs, ocr, advance, batch, on_result, prepare)
