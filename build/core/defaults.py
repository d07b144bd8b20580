"""The build's defaults, defined once (docs/reference/python.md).

`BuildOptions` (build/pipeline.py) uses them and the CLI shows them in `--help`. Kept in a module that
imports nothing heavy, so the command line reads them without loading the parsers. The page-image
defaults live with the renderer (`render/page_images.py`), OCR's in `OcrSettings`.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_OUT = Path("_site")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), the default for `--jobs` (parser, page and
    page-image processes); not reduced on a busy machine: each process still gets its share of the CPU."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


DEFAULT_JOBS = usable_cpus()
DEFAULT_MAX_FILE_MB = 200.0
DEFAULT_MAX_PAGE_IMAGES = 1000
# the largest file of the static search index: under every static host's per-file limit (Cloudflare Pages:
# 25 MiB a file, GitHub Pages warns at 50 MB)
DEFAULT_SEARCH_FILE_MIB = 8.0
