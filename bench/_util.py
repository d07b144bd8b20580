"""Small helpers shared by the benchmarks: timing and peak memory."""

from __future__ import annotations

import resource
import statistics
import time
from typing import Callable


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best wall time (s) of `repeat` runs: the least disturbed by the rest of the machine."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def peak_rss_mb() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: ru_maxrss survives fork+exec on Linux,
    so a child would report its parent's peak."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

