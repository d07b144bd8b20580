"""The default executor: this machine's worker processes (`workers.worker_pool`), or this process.

A worker that dies (a crash inside a native library) breaks the pool; the files of the tasks it took
down are retried one per fresh process, so only the file that really crashes is recorded
`parse_crashed`. Fewer files than `min_pool` (or `jobs` 1) are parsed here: starting workers would
cost more than their parse.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import as_completed
from typing import Any

from mnote_evidence.build.core.model import ProviderError
from mnote_evidence.build.parse.executors.base import ParseTask
from mnote_evidence.build.parse.run import CRASHED, in_fresh_process, parse_many
from mnote_evidence.build.parse.workers import worker_pool


class LocalPool:
    def __init__(self, jobs: int, min_pool: int = 2):
        self.jobs, self.min_pool = jobs, min_pool

    def map(self, tasks: list[ParseTask]) -> Iterator[tuple[str, Any]]:
        if self.jobs <= 1 or sum(len(t.files) for t in tasks) < max(2, self.min_pool):
            for t in tasks:
                yield from zip(t.paths, parse_many(t.root, t.files, t.ocr, t.prepare))
            return
        crashed: list[ParseTask] = []
        with worker_pool(self.jobs) as pool:
            futures = {pool.submit(parse_many, t.root, t.files, t.ocr, t.prepare): t for t in tasks}
            try:
                for fut in as_completed(futures):
                    task = futures.pop(fut)  # a done future holds its results: let them go once yielded
                    try:
                        parsed = fut.result()
                    except Exception:
                        crashed.append(task)
                        continue
                    del fut
                    yield from zip(task.paths, parsed)
                    del parsed
            except BaseException:  # the consumer's error (disk full) or Ctrl-C: the build's
                for fut in futures:
                    fut.cancel()
                raise
        for task in sorted(crashed, key=tasks.index):
            for one in task.alone():
                parsed = in_fresh_process(parse_many, one.root, one.files, one.ocr, one.prepare)
                yield one.paths[0], ProviderError("parse_crashed", CRASHED) if parsed is None else parsed[0]

    def close(self) -> None:
        pass
