"""The build's defaults, defined once (README, "Driving the build from Python").

`BuildOptions` (build/pipeline.py) uses them and the CLI shows them in `--help`.
Kept in a module that imports nothing heavy, so the command line can read them
without loading the parsers (`ask` and `search` start fast). The page-image
defaults live with the renderer (`render/page_images.py`), OCR's in `OcrSettings`.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_OUT = Path("_site")  # output folder: evidence.sqlite and the site


def idle_cpus() -> int:
    """The CPUs this process may use that other work is not already using: its CPU count (affinity
    included) minus the whole part of the 1-minute load average, at least 1 and at most the count.

    The default for `--jobs` (parser, page and page-image processes): a second worker process pays
    on an idle 2-core machine (the notes parse 1.6-1.8x faster) and on a machine already running
    more than a core's worth of other work it buys nothing (measured equal to one, within noise:
    README, "Parallelism and durability"); each pool also starts only for enough work to repay it."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        busy = int(os.getloadavg()[0])
    except (AttributeError, OSError):  # no load average (Windows): assume idle
        busy = 0
    return max(1, min(cpus, cpus - busy))


DEFAULT_JOBS = idle_cpus()  # parser, page and page-image processes
DEFAULT_MAX_FILE_MB = 200.0  # larger files are recorded `file_too_large`, not parsed
DEFAULT_MAX_PAGE_IMAGES = 1000  # page images rendered per PDF; later pages are listed with their text only
