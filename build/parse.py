"""Stage 2: run a provider on one file, never raising, under the parse budgets (SPEC §3, §11).

`parse_one` is the worker entry point: every failure becomes a `ProviderError` with a code
(`parse_timeout`, `parse_out_of_memory`, `parse_failed`), so one bad file cannot stop the build.
`parse_in_pool` runs it in worker processes (`build/workers.py`: they die with the build) and
retries the files of a worker that crashed one per fresh process, so only the file that really
crashes is recorded as `parse_crashed`.
"""

from __future__ import annotations

from concurrent.futures import as_completed
from pathlib import Path
from typing import Callable

from mnote_evidence.build.formats import provider_for
from mnote_evidence.build.model import ParsedResourceArtifact, ProviderError
from mnote_evidence.build.ocr.settings import OcrSettings
from mnote_evidence.build.providers import ParseInput
from mnote_evidence.build.scan import SourceFile
from mnote_evidence.build.workers import BudgetExceeded, time_budget, worker_pool


def parse_one(root: str, path: str, source_hash: str, ocr: OcrSettings) -> ParsedResourceArtifact | ProviderError:
    """Worker entry point: never raises, so one bad file cannot stop the build."""
    provider = provider_for(path, ocr)
    try:
        with time_budget():
            return provider.parse(ParseInput(Path(root), path, source_hash))
    except ProviderError as exc:
        return exc
    except BudgetExceeded as exc:
        return ProviderError("parse_timeout", f"{exc}; the file was not indexed (MNOTE_PARSE_SECONDS)")
    except MemoryError:
        return ProviderError("parse_out_of_memory", "ran out of its memory budget while parsing this file "
                             "(MNOTE_PARSE_MEMORY_MB)")
    except Exception as exc:  # a provider bug or a library crash on odd input
        return ProviderError("parse_failed", f"{type(exc).__name__}: {exc}")


def parse_in_pool(files: list[SourceFile], root: Path, jobs: int, ocr: OcrSettings,
                   advance: Callable[[int], None]) -> dict:
    """Parse in worker processes. A worker that dies (a crash inside a native
    library) breaks the pool; the files it took down are retried one per fresh
    process, so only the file that really crashes is recorded as `parse_crashed`."""
    results: dict[str, ParsedResourceArtifact | ProviderError] = {}
    with worker_pool(jobs) as pool:
        futures = {pool.submit(parse_one, str(root), f.path, f.source_hash, ocr): f for f in files}
        for fut in as_completed(futures):
            try:
                results[futures[fut].path] = fut.result()
                advance(1)
            except Exception:
                pass
    for f in files:
        if f.path in results:
            continue
        with worker_pool(1) as solo:
            try:
                results[f.path] = solo.submit(parse_one, str(root), f.path, f.source_hash, ocr).result()
            except Exception:
                results[f.path] = ProviderError("parse_crashed", "the parser process crashed on this file")
        advance(1)
    return results
