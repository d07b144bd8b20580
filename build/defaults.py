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
DEFAULT_JOBS = max(1, os.cpu_count() or 1)  # parser and page-image processes
DEFAULT_MAX_FILE_MB = 200.0  # larger files are recorded `file_too_large`, not parsed
DEFAULT_MAX_PAGE_IMAGES = 1000  # page images rendered per PDF; later pages are listed with their text only
