"""The parse stage on a Dask distributed cluster (`distributed.Client(address)`); the workers need not
see the workspace.

This process reads each task's bytes and the OCR cache entries it holds for them and ships both; a
Dask worker hands the task to a child process of its own (`workers.worker_pool`: the parse's time and
memory budgets, a native crash kept to that child, retried alone as locally), and returns the results
and the OCR entries it made; here those entries are sealed and stored and each result goes through the
task's `prepare` (sidecars staged here, in the build's durable batch). A task whose Dask worker is lost
is rescheduled by Dask (the scheduler's `distributed.scheduler.allowed-failures`); past that its
files are retried alone once more, then recorded `parse_crashed`. No result for `STALL_SECONDS` (no
worker, a stuck cluster) or an unreachable scheduler raises `ExecutorUnavailable`: never a hung build.
At most `WINDOW_PER_THREAD` tasks per worker thread are in flight, which bounds the bytes held here.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mnote_evidence.build.core.errors import ExecutorUnavailable
from mnote_evidence.build.core.formats import format_for
from mnote_evidence.build.core.model import KIND_IMAGE, KIND_PDF, ProviderError
from mnote_evidence.build.parse import workers
from mnote_evidence.build.parse.executors.base import ParseTask
from mnote_evidence.build.parse.libraries import mupdf
from mnote_evidence.build.parse.ocr.normalize import OcrLine
from mnote_evidence.build.parse.ocr.run import engine_version, image_key, page_key
from mnote_evidence.build.parse.ocr.settings import OcrSettings, cache_path, cached_lines, store_lines
from mnote_evidence.build.parse.run import CRASHED, in_fresh_process, parse_shipped

CONNECT_SECONDS = float(os.environ.get("MNOTE_CLUSTER_CONNECT_SECONDS", 10))
# no result for this long: the cluster is stuck or has no worker (a task is bounded by its parse budget)
STALL_SECONDS = float(os.environ.get("MNOTE_CLUSTER_STALL_SECONDS", workers.PARSE_SECONDS + 300))
WINDOW_PER_THREAD = 4
LOST = "the cluster lost the worker parsing this file (its task was retried, alone, and lost again)"

Shipment = tuple[list[tuple[str, str, bytes]], OcrSettings, dict[tuple[str, str], list[dict]], float, float]


class DaskExecutor:
    def __init__(self, address: str | None = None, client: Any = None):
        """A Dask scheduler's `address` (`dask://` is read as `tcp://`), or a connected `client`."""
        if address is not None and address.startswith("dask://"):
            address = "tcp://" + address.removeprefix("dask://")
        self.address, self.client, self._own = address, client, client is None

    def _connected(self) -> Any:
        if self.client is None:
            try:
                import distributed
            except ImportError:
                raise ExecutorUnavailable(
                    str(self.address), "Dask is not installed: pip install 'mnote-evidence[cluster]'"
                ) from None
            try:
                self.client = distributed.Client(self.address, timeout=CONNECT_SECONDS, set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise ExecutorUnavailable(str(self.address), f"{type(exc).__name__}: {exc}") from None
        return self.client

    def map(self, tasks: list[ParseTask]) -> Iterator[tuple[str, Any]]:
        from distributed import wait
        from distributed.client import FIRST_COMPLETED

        client = self._connected()
        threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
        window = max(4, WINDOW_PER_THREAD * threads)
        queue: deque[tuple[ParseTask, bool]] = deque((t, False) for t in tasks)  # (task, retried alone)
        pending: dict[Any, tuple[ParseTask, bool]] = {}
        try:
            while queue or pending:
                while queue and len(pending) < window:
                    task, alone = queue.popleft()
                    fut = client.submit(run_shipment, _shipment(task), pure=False)
                    pending[fut] = (task, alone)
                try:
                    with client.as_current():  # `wait` finds the client of the futures there
                        done, _ = wait(list(pending), timeout=STALL_SECONDS, return_when=FIRST_COMPLETED)
                except TimeoutError:
                    raise ExecutorUnavailable(
                        str(self.address or client.scheduler.address),
                        f"no parse result for {STALL_SECONDS:g} s (MNOTE_CLUSTER_STALL_SECONDS): "
                        "does the cluster have workers?",
                    ) from None
                for fut in done:
                    task, alone = pending.pop(fut)
                    try:
                        parsed, made = fut.result()
                    except Exception as exc:  # KilledWorker past the scheduler's allowed failures
                        if not alone:
                            queue.extendleft((one, True) for one in reversed(task.alone()))
                            continue
                        crashed = "KilledWorker" in type(exc).__name__
                        message = LOST if crashed else f"{type(exc).__name__}: {exc}"
                        parsed = [ProviderError("parse_crashed" if crashed else "parse_failed", message)]
                        made = {}
                    _store(task, made)
                    if task.prepare is not None:
                        parsed = task.prepare.many(list(zip(task.paths, parsed)))
                    yield from zip(task.paths, parsed)
        finally:
            for fut in pending:
                fut.cancel()

    def close(self) -> None:
        if self._own and self.client is not None:
            self.client.close()
            self.client = None


def _shipment(task: ParseTask) -> Shipment:
    """What a worker needs for `task`: each file's bytes, the OCR cache entries held here for them, and
    the parse budgets of this build."""
    files, entries = [], {}
    for path, source_hash in task.files:
        data = (Path(task.root) / path).read_bytes()
        files.append((path, source_hash, data))
        entries.update(_cached(Path(task.root), task.ocr, path, source_hash, data))
    return files, task.ocr, entries, workers.PARSE_SECONDS, workers.PARSE_MEMORY_MB


def _cached(root: Path, ocr: OcrSettings, path: str, source_hash: str, data: bytes) -> dict:
    """The checked OCR cache entries of this file (an image's, or each page's of a PDF), as JSON."""
    fmt = format_for(path)
    if not ocr.enabled or fmt is None or fmt.kind not in (KIND_IMAGE, KIND_PDF):
        return {}
    version = engine_version(ocr)
    if not cache_path(root, ocr, version, "-").parent.is_dir():  # nothing cached for this engine
        return {}
    if fmt.kind == KIND_IMAGE:
        keys = [image_key(source_hash)]
    else:
        try:
            with mupdf().open(stream=data, filetype="pdf") as doc:
                keys = [page_key(source_hash, n, ocr.pdf_dpi) for n in range(1, doc.page_count + 1)]
        except Exception:  # the worker's parse says what is wrong with it
            return {}
    found = {key: cached_lines(root, ocr, version, key) for key in keys}
    return {(version, key): [line.__dict__ for line in lines] for key, lines in found.items() if lines}


def _store(task: ParseTask, made: dict[tuple[str, str], list[dict]]) -> None:
    for (version, key), lines in made.items():
        store_lines(Path(task.root), task.ocr, version, key, [OcrLine(**line) for line in lines])


_pool_lock = threading.Lock()
_pool: dict[float, Any] = {}  # memory budget -> this Dask worker's pool of parse processes


def run_shipment(shipment: Shipment) -> tuple[list, dict]:
    """Dask task: `run.parse_shipped` in this worker's parse processes; a task whose process crashed
    has its files retried one per fresh process, so only the file that crashes is `parse_crashed`."""
    files, ocr, entries, seconds, memory_mb = shipment
    pool = _parse_pool(memory_mb)
    try:
        return pool.submit(parse_shipped, files, ocr, entries, seconds).result()
    except Exception:
        with _pool_lock:
            if _pool.get(memory_mb) is pool:
                del _pool[memory_mb]
        pool.shutdown(wait=False)
    results, made = [], {}
    for f in files:
        one = in_fresh_process(parse_shipped, [f], ocr, entries, seconds, memory_mb=memory_mb)
        results.append(ProviderError("parse_crashed", CRASHED) if one is None else one[0][0])
        made.update({} if one is None else one[1])
    return results, made


def _parse_pool(memory_mb: float) -> Any:
    """One pool per Dask worker process (as many processes as its threads), started on first use."""
    with _pool_lock:
        if memory_mb not in _pool:
            from distributed import get_worker

            # a Dask worker is a daemon process, which multiprocessing forbids children; ours die with
            # it all the same (`workers.die_with`), which is what the rule is for
            multiprocessing.current_process().daemon = False
            _pool[memory_mb] = workers.worker_pool(get_worker().state.nthreads, memory_mb)
        return _pool[memory_mb]
