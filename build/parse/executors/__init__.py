"""Where the parse stage runs: one interface (`base.ParseExecutor`) over this machine's process pool
(`local.LocalPool`, the default) and a Dask distributed cluster (`dask.DaskExecutor`).

`executor_for(spec)` is the one registry: None or "local" is the local pool; an address
`tcp://HOST:PORT`, `tls://HOST:PORT` or `dask://HOST:PORT` (the same as tcp://) is a Dask
scheduler's. `parse_all` cuts the files into tasks and hands each result on as it arrives; the build
records them in path order (`run.InOrder`), so block ids, sidecars and the site do not depend on where
the files were parsed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from mnote_evidence.build.parse.executors.base import ParseExecutor, ParseTask
from mnote_evidence.build.parse.executors.local import LocalPool
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.prepare import Prepare
from mnote_evidence.build.parse.run import OnResult, batches
from mnote_evidence.build.workspace.scan import SourceFile

__all__ = ["LocalPool", "ParseExecutor", "ParseTask", "executor_for", "opened", "parse_all"]
DASK_SCHEMES = ("tcp://", "tls://", "dask://")


def executor_for(spec: str | ParseExecutor | None, jobs: int = 1) -> ParseExecutor:
    """The executor `spec` names (see the module docstring); an executor object is returned as is.
    Raises ValueError for an address of no known scheme."""
    if spec is None or spec == "local":
        return LocalPool(jobs)
    if not isinstance(spec, str):
        return spec
    if spec.startswith(DASK_SCHEMES):
        from mnote_evidence.build.parse.executors.dask import DaskExecutor

        return DaskExecutor(spec)
    raise ValueError(f"unknown executor {spec!r}: use 'local' or a Dask scheduler's tcp://HOST:PORT")


@contextmanager
def opened(spec: str | ParseExecutor | None) -> Iterator[ParseExecutor | None]:
    """The executor `spec` names for one build (None: the local pool, chosen per stage); one made here
    from an address is closed after, an executor object passed in stays its owner's."""
    if spec is None or spec == "local":
        yield None
        return
    executor = executor_for(spec)
    try:
        yield executor
    finally:
        if executor is not spec:
            executor.close()


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
    executor: ParseExecutor | None = None,
) -> dict:
    """Parse `files` in tasks of up to `batch` files (`run.batches`) on `executor` (default: the local
    pool, with `jobs` workers when there are at least `min_pool` files). `on_result(path, result)` is
    called as each result arrives (in no particular order; `InOrder` restores one) and the result is not
    kept, so this process's share of the work overlaps the workers' parsing. Returns the results not
    handed to an `on_result` (all, or none)."""
    tasks = [
        ParseTask(
            str(root),
            [(f.path, f.source_hash) for f in group],
            ocr,
            None if prepare is None else prepare.only([f.path for f in group]),
        )
        for group in batches(files, batch)
    ]
    results: dict[str, Any] = {}
    with closing((executor or LocalPool(jobs, min_pool)).map(tasks)) as arriving:
        for path, result in arriving:
            if on_result is None:
                results[path] = result
            else:
                on_result(path, result)
            advance(1)
    return results
