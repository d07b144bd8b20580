"""Worker processes of the build: they die with it, and each parse has a budget (SPEC §9).

Invariants:
- No worker outlives the build process: `worker_pool()` starts every worker with `PR_SET_PDEATHSIG` =
  SIGKILL (the forkserver parent exits when the build dies) and a watchdog thread that exits the
  worker once the build's pid is gone (`die_with`). A build started by `serve --watch` dies with
  `serve` the same way (`DIE_WITH_ENV`), so a killed server leaves no rebuild running.
- A parse has a time budget (`PARSE_SECONDS`) and a worker a memory budget (`PARSE_MEMORY_MB`,
  RLIMIT_DATA: heap, not address-space reservations), each settable as `MNOTE_<name>`. Exceeding one
  is a recorded error of that file (`parse_timeout`, `parse_out_of_memory`), never a hung build.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

PARSE_SECONDS = float(os.environ.get("MNOTE_PARSE_SECONDS", 1800))
PARSE_MEMORY_MB = float(os.environ.get("MNOTE_PARSE_MEMORY_MB", 4096))
_PR_SET_PDEATHSIG = 1
DIE_WITH_ENV = "MNOTE_DIE_WITH_PID"  # set by a parent that the build must not outlive (`serve --watch`)


@cache
def _context():
    """Workers start from a clean process: forking a parent that already loaded an OCR model
    (onnxruntime threads) can deadlock. `multiprocessing` loads with the first pool, not with this
    module: a no-op build starts none."""
    import multiprocessing

    return multiprocessing.get_context("forkserver")


class BudgetExceeded(BaseException):
    """Raised inside a parse that ran past its time budget. A BaseException, so a provider's
    `except Exception` cannot swallow it."""


def die_with(pid: int) -> None:
    """End this process (SIGKILL) when process `pid` ends: Linux's `PR_SET_PDEATHSIG` (for the parent),
    and everywhere a watchdog thread that exits within a second once `pid` is gone or this process
    has been handed to another parent (its parent died: a killed parent may stay unreaped a while)."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the watchdog alone
        pass

    def watch() -> None:
        while _alive(pid) and os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="mnote-watchdog", daemon=True).start()


def init_worker(build_pid: int, memory_mb: float) -> None:
    """Pool initializer: die with the build; cap this worker's heap."""
    die_with(build_pid)
    if os.getppid() == 1 or not _alive(build_pid):
        os._exit(1)
    if memory_mb > 0:
        limit = int(memory_mb * 1024 * 1024)
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def worker_pool(
    max_workers: int,
    memory_mb: float | None = None,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
) -> ProcessPoolExecutor:
    """A process pool whose workers die with this process and have a memory budget; `initializer`
    (a module-level function) then runs once in each worker with `initargs`."""
    from concurrent.futures import ProcessPoolExecutor

    budget = PARSE_MEMORY_MB if memory_mb is None else memory_mb
    return ProcessPoolExecutor(
        max_workers=max_workers,
        mp_context=_context(),
        initializer=_init,
        initargs=(os.getpid(), budget, initializer, initargs),
    )


def _init(build_pid: int, memory_mb: float, initializer: Callable[..., None] | None, initargs: tuple) -> None:
    init_worker(build_pid, memory_mb)
    if initializer is not None:
        initializer(*initargs)


@contextmanager
def time_budget(seconds: float | None = None) -> Iterator[None]:
    """Raise `BudgetExceeded` in the block after `seconds` (SIGALRM; also interrupts a blocking
    read). Only in a process's main thread with no timer of its own; elsewhere (a build run from a
    thread, a test runner's timeout) it does nothing."""
    seconds = PARSE_SECONDS if seconds is None else seconds
    if (
        seconds <= 0
        or threading.current_thread() is not threading.main_thread()
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0
    ):  # someone else's timer: leave it alone
        yield
        return

    message = f"parsing took longer than {seconds:g} s"
    expired = []

    def expire(signum, frame):
        expired.append(True)
        raise BudgetExceeded(message)

    previous = signal.signal(signal.SIGALRM, expire)
    # The timer repeats and expiry is sticky: a bare `except:` in a library meets the next one, and a parse
    # that finishes late is a timeout all the same.
    signal.setitimer(signal.ITIMER_REAL, seconds, min(seconds, 0.1))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if expired:
        raise BudgetExceeded(message)
