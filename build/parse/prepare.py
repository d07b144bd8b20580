"""A parse's outputs made ready where it ran (a worker process), so the build process only records them.

`Prepare(root, layout, owners)` runs in the worker on each `parse_one` result: an artifact becomes a
`Prepared` with its sidecars staged (`sidecars.stage_sidecars`: temp files, neither synced nor renamed)
and each block's FTS value segmented (tagged with its `SEGMENTATION_VERSION`); a `ProviderError`
passes through. With `programs` the task's notes are also compiled for their pages (`Prepare.many`).
`adopt_prepared` runs in the build process: the staged files join its `fsutil.durable_batch`, and a
storage error met in the worker is raised there. Invariants: the sidecar bytes and FTS values are
those a `--jobs 1` build writes; the index uses the values only if of its segmentation version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mnote_evidence.build.core import text
from mnote_evidence.build.core.fsutil import adopt
from mnote_evidence.build.core.model import KIND_MARKDOWN, ParsedResourceArtifact, ProviderError
from mnote_evidence.build.parse.sidecars import SidecarPaths, stage_sidecars, unwritable


@dataclass
class Prepared:
    artifact: ParsedResourceArtifact
    paths: SidecarPaths | None = None  # None: its sidecars cannot be written (a warning says why)
    staged: list[tuple[Path, Path]] | None = None
    segmented: tuple[str, list[str]] | None = None
    error: OSError | None = None  # staging failed (disk full...): raised in the build process


@dataclass(frozen=True)
class Prepare:
    """Picklable: sent with each task to the worker (`owners`: the owner note of each file of the task)."""

    root: str
    layout: str
    owners: dict[str, str | None]
    # compiles (text, blocks) of the task's notes for their pages: a picklable callable from the renderer
    programs: Callable[[list[tuple[str, list]]], None] | None = None

    def only(self, paths: list[str]) -> Prepare:
        """This, with the owners of `paths` only (what one task needs to carry)."""
        return Prepare(self.root, self.layout, {p: self.owners[p] for p in paths}, self.programs)

    def __call__(self, path: str, result: ParsedResourceArtifact | ProviderError) -> Prepared | ProviderError:
        if not isinstance(result, ParsedResourceArtifact):
            return result
        segmented = (text.SEGMENTATION_VERSION, [text.segment_for_index(b.text) for b in result.blocks])
        root = Path(self.root)
        try:
            paths, staged = stage_sidecars(root, result, self.owners[path], self.layout)
        except OSError as exc:
            marked = unwritable(root, result, exc)
            return Prepared(result, error=exc) if marked is None else Prepared(marked, None, [], segmented)
        return Prepared(result, paths, staged, segmented)

    def many(
        self, results: list[tuple[str, ParsedResourceArtifact | ProviderError]]
    ) -> list[Prepared | ProviderError]:
        """Each (path, result) of one parse task through `__call__`; then, with `programs`, its notes
        compiled for their pages while their tokens are still here (`markdown_syntax.keep_parsed`)."""
        out = [self(path, result) for path, result in results]
        if self.programs is not None:
            self.programs(
                [
                    (p.artifact.text, p.artifact.blocks)
                    for p in out
                    if isinstance(p, Prepared) and p.error is None and p.artifact.kind == KIND_MARKDOWN
                ]
            )
        return out


def adopt_prepared(result: Prepared | ProviderError) -> None:
    """In the build process, as `result` arrives: its staged sidecars join the current durable batch."""
    if isinstance(result, Prepared):
        if result.error is not None:
            raise result.error
        for tmp, path in result.staged or ():
            adopt(tmp, path)
