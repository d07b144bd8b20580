"""The build, top to bottom: scan -> parse (providers) -> sidecars -> index.

`build(root, options)` is the library entry point the CLI and the tests call.
It knows nothing of the command line: it raises typed errors (`build/core/errors.py`:
`NotAWorkspace`, `BuildLocked`) and reports progress as `ProgressEvent`s through
`BuildOptions.on_progress` (`build/core/progress.py`). Defaults live here once
(`build/core/defaults.py`, used by `BuildOptions`); the CLI takes them from there.
It is incremental by content hash: a resource whose bytes, provider version
and owner note are unchanged is not touched; a changed one is re-parsed (or
its intact sidecar reused) and replaces only its own rows; a vanished one is
marked `stale` on the first build that misses it and removed on the next.
What the index depends on beyond the files (schema, segmentation, provider and
OCR versions, page image settings) is compared by `build/versions.py`.
"""

from __future__ import annotations

import fcntl
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnote_evidence import __version__
from mnote_evidence.build import versions
from mnote_evidence.build.core.defaults import (
    DEFAULT_JOBS,
    DEFAULT_MAX_FILE_MB,
    DEFAULT_MAX_PAGE_IMAGES,
    DEFAULT_OUT,
    DEFAULT_SEARCH_FILE_MIB,
)
from mnote_evidence.build.core.errors import BuildLocked, NotAWorkspace, OutputInWorkspace
from mnote_evidence.build.core.formats import format_for
from mnote_evidence.build.core.fsutil import in_durable_batch
from mnote_evidence.build.core.ids import resource_id
from mnote_evidence.build.core.model import (
    KIND_MARKDOWN,
    KIND_OTHER,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_STALE,
    STATUS_UNSUPPORTED,
    UNPUBLISHED,
    NoteLink,
    ParsedResourceArtifact,
    ProviderError,
    ResourceRow,
    suffix_of,
)
from mnote_evidence.build.core.progress import OnProgress, Stage, StageProgress
from mnote_evidence.build.core.redact import redact
from mnote_evidence.build.core.sqlite_ro import file_identity
from mnote_evidence.build.core.trust import key_file, key_problem
from mnote_evidence.build.core.urls import DB_NAME
from mnote_evidence.build.index.linkgraph import LinkStage
from mnote_evidence.build.index.previous import PreviousBuild, load_previous
from mnote_evidence.build.index.recorded import recorded
from mnote_evidence.build.index.writer import (
    FreshIndex,
    IndexChanges,
    ResourceUpdate,
    cleanup_stray_temps,
    now_ms,
    starts_empty,
    write_index,
)
from mnote_evidence.build.knowledge.candidates import candidates, registry_key
from mnote_evidence.build.knowledge.ingest import reconcile
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.build.parse.executors import ParseExecutor, opened, parse_all
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.prepare import Prepare, Prepared, adopt_prepared
from mnote_evidence.build.parse.providers import provider_for, provider_version
from mnote_evidence.build.parse.run import InOrder
from mnote_evidence.build.parse.sidecars import (
    LAYOUT_BESIDE,
    LAYOUTS,
    SidecarPaths,
    SidecarsInPlace,
    choose_layout,
    paths_at,
    remember_layout,
    remove_sidecars,
    reusable,
    source_map_path,
    unwritable,
    write_sidecars,
)
from mnote_evidence.build.render.note_programs import PROGRAMS_DIR, store_programs
from mnote_evidence.build.render.page_images import (
    DEFAULT_FORMAT,
    DEFAULT_ZOOM,
    JPEG_QUALITY,
    PageImageSettings,
)
from mnote_evidence.build.workspace.scan import Ignore, SourceFile, scan, skip_dir

if TYPE_CHECKING:  # the renderer (jinja2, the note HTML renderer) loads only when the site is rendered
    from mnote_evidence.build.render.site import RenderReport


KEY_UNAVAILABLE = "evidence_key_unavailable"  # a build-wide warning: nothing in the workspace is trusted
SITE_IN_WORKSPACE = "site_in_workspace"  # a build-wide warning: a folder holding a built site is not scanned
NOTE_BATCH = 32  # notes per worker task: one task per small note costs more in the pool than its parse
NOTES_FOR_POOL = 200  # fewer changed notes are parsed in this process: starting workers costs more


@dataclass
class BuildOptions:
    out: Path = DEFAULT_OUT
    jobs: int = DEFAULT_JOBS
    max_file_mb: float = DEFAULT_MAX_FILE_MB
    site: bool = True
    page_zoom: float = DEFAULT_ZOOM
    page_format: str = DEFAULT_FORMAT
    page_quality: int = JPEG_QUALITY
    max_page_images: int = DEFAULT_MAX_PAGE_IMAGES
    search_file_mib: float = DEFAULT_SEARCH_FILE_MIB  # the static search index's largest file
    ocr: OcrSettings = field(default_factory=OcrSettings)
    lightrag: LightRagConfig | None = None
    # sidecar layout: "beside" (`Note.ocr/`) or "mnote" (`.mnote/sidecars/`); None: the workspace's
    # (`sidecars.choose_layout`)
    sidecars: str | None = None
    on_progress: OnProgress | None = None
    rehash: bool = (
        False  # hash every file, not only those whose size or mtime changed (build/workspace/scan.py)
    )
    # where files are parsed (build/parse/executors/): None, the local pool of `jobs` workers; a Dask
    # scheduler's address (tcp://HOST:PORT) or an executor object, the parse tasks go there
    executor: str | ParseExecutor | None = None
    # process-wide GC tuning (`_long_lived`): on from the command line, opt-in for a program using the library
    tune_gc: bool = False

    @property
    def page_images(self) -> PageImageSettings:
        return PageImageSettings(self.page_format, self.page_quality, self.page_zoom)


@dataclass
class BuildReport:
    root: str
    db_path: str
    changed: bool = False
    parsed: int = 0
    reused_sidecars: int = 0
    unchanged: int = 0
    stale: int = 0
    removed: int = 0
    hashed: int = 0
    status_counts: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    site: RenderReport | None = None
    knowledge: dict[str, Any] | None = None
    redone: dict[str, Any] = field(default_factory=dict)
    # files left out of the output: by an `.mnoteignore` (a folder counts once), by front matter
    excluded: dict[str, int] = field(default_factory=lambda: {"ignored": 0, "unpublished": 0})
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def _build_lock(out: Path) -> Iterator[None]:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".build.lock", "a") as lock:  # "a": a no-op build leaves even its mtime alone
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildLocked(out) from None
        yield


class _Build:
    """One run's working state; each method is one step of `build()`."""

    def __init__(self, root: Path, options: BuildOptions):
        self.root = root
        self.options = options
        self.db_path = options.out / DB_NAME
        self.report = BuildReport(root=root.name, db_path=str(self.db_path))
        self.prev: PreviousBuild = load_previous(self.db_path)
        self.changes = IndexChanges()
        self.fresh: FreshIndex | None = None
        self.stamp = now_ms()
        self._versions: dict[str, str] = {}
        self._suffix_versions: dict[str, str] = {}
        self.unpublished: set[str] = set()  # notes whose front matter keeps them out (`_parsed`)
        self.excluded: set[str] = set()  # files of the previous build left out now (`vanished`)
        self.executor: ParseExecutor | None = None  # set by `opened`
        self.layout = options.sidecars or ""  # the workspace's when not given, once its notes are known
        identity = file_identity(self.db_path)  # its mtime: when the previous build last wrote it
        self.sidecars_in_place = SidecarsInPlace(root, identity[1] if identity else None)
        if options.sidecars is not None and self.layout not in LAYOUTS:
            raise ValueError(f"sidecar layout must be one of {', '.join(LAYOUTS)} (got {self.layout!r})")

    @classmethod
    @contextmanager
    def opened(cls, root: Path, options: BuildOptions) -> Iterator[_Build]:
        """This run; when its index is written from empty (`writer.starts_empty`), the working copy is open
        from here on and each resource's rows go in as it is recorded (`_record`), overlapping the parse.
        Leaving before the index is written (an error, Ctrl-C) removes the copy: the old file stays."""
        cleanup_stray_temps(options.out / DB_NAME)  # before the working copy of this run exists
        run = cls(root, options)
        with opened(options.executor) as run.executor:
            if not starts_empty(run.db_path, run.prev.incompatible_schema is not None, run.prev.valid):
                yield run
                return
            with FreshIndex.open(run.db_path) as run.fresh:
                yield run

    def _version(self, path: str) -> str:
        """The version of `path`'s provider (a supported format), set up once per provider per build;
        looked up by the suffix as written (asked for every file: one dict look-up each)."""
        suffix = suffix_of(path)
        version = self._suffix_versions.get(suffix)
        if version is None:
            fmt = format_for(path)
            spec = fmt.provider
            if spec not in self._versions:
                self._versions[spec] = provider_version(fmt, self.options.ocr)
            version = self._suffix_versions[suffix] = self._versions[spec]
        return version

    def _row(
        self,
        f: SourceFile,
        owner: str | None,
        status: str,
        provider: str | None = None,
        version: str | None = None,
        paths: SidecarPaths | None = None,
        artifact: ParsedResourceArtifact | None = None,
        error: tuple[str, str] | None = None,
    ) -> ResourceRow:
        return ResourceRow(
            resource_id=resource_id(f.path),
            path=f.path,
            owner=owner,
            kind=f.kind,
            status=status,
            provider=provider,
            provider_version=version,
            source_hash=f.sha256,
            artifact_path=paths.text if paths else None,
            source_map_path=paths.source_map if paths else None,
            error_code=error[0] if error else None,
            error_message=error[1] if error else None,
            page_count=len(artifact.pages) if artifact and artifact.pages else None,
            block_count=len(artifact.blocks) if artifact else 0,
            warnings=[w.to_json() for w in artifact.warnings] if artifact else [],
            updated_at_ms=self.stamp,
            title=artifact.title if artifact else None,
            source_size=f.stamp[0] if f.stamp else None,
            source_mtime_ns=f.stamp[1] if f.stamp else None,
        )

    def _record_error(
        self,
        f: SourceFile,
        owner: str | None,
        kind_status: str,
        code: str,
        message: str,
        provider: str | None = None,
        version: str | None = None,
    ) -> None:
        message = redact(message)  # stored, rendered, printed: an upstream may have echoed a secret
        prev = self.prev.resources.get(f.path)
        if (
            prev
            and prev.status == kind_status
            and prev.error_code == code
            and prev.error_message == message
            and prev.source_hash == f.sha256
            and prev.owner == owner
            and prev.provider_version == version
        ):
            self.report.unchanged += 1
            return
        self._drop_old_sidecars(prev)
        row = self._row(f, owner, kind_status, provider, version, error=(code, message))
        self._record(ResourceUpdate(row))

    def _record(self, update: ResourceUpdate) -> None:
        """`update` joins the index changes, in the build's order (which decides the block ids); written from
        empty, its rows go in now and its artifact is dropped unless LightRAG reads it later
        (`knowledge/candidates.py`). The working copy is renamed into place only after this step's sidecars
        are synced, so the index never points at a sidecar that is not on disk."""
        self.changes.updates.append(update)
        if self.fresh is not None:
            self.fresh.add(update)
            if self.options.lightrag is None:
                update.artifact = update.segmented = None

    def _drop_old_sidecars(self, prev: ResourceRow | None, keep: SidecarPaths | None = None) -> None:
        if prev and prev.source_map_path and (keep is None or keep.source_map != prev.source_map_path):
            remove_sidecars(self.root, SidecarPaths(prev.artifact_path, prev.source_map_path))

    def _accept(
        self,
        f: SourceFile,
        owner: str | None,
        artifact: ParsedResourceArtifact,
        reused_from: str | None = None,
        prepared: Prepared | None = None,
    ) -> None:
        """Record a parse (its sidecars written now, or already where it was parsed: `prepared`); one
        whose sidecars cannot be written is recorded with its warning, without sidecars."""
        prev = self.prev.resources.get(f.path)
        if prepared is not None:
            paths = prepared.paths
        else:
            try:
                paths = write_sidecars(self.root, artifact, owner, self.layout)
            except OSError as exc:
                marked = unwritable(self.root, artifact, exc)
                if marked is None:  # the disk's error, not this file's: the build's
                    raise
                artifact, paths = marked, None
        self._drop_old_sidecars(prev, keep=paths)
        if reused_from and paths is not None and reused_from != paths.source_map:
            remove_sidecars(self.root, paths_at(reused_from, artifact))
        row = self._row(f, owner, STATUS_OK, artifact.provider, artifact.provider_version, paths, artifact)
        self._record(ResourceUpdate(row, artifact, prepared.segmented if prepared else None))

    def _parse(
        self,
        todo: list[tuple[SourceFile, str | None]],
        progress: StageProgress,
        on_parsed: Callable[[SourceFile, str | None, Any], None],
        **kwargs,
    ) -> None:
        """Parse `todo` ((file, owner) each); each result comes back prepared (build/parse/prepare.py) and its
        staged sidecars join this step's durable batch as it arrives; `on_parsed(file, owner, result)`
        records it in `todo`'s order (path order: deterministic) as soon as those before it are in."""
        programs = partial(store_programs, self.options.out / PROGRAMS_DIR) if self.options.site else None
        prepare = Prepare(str(self.root), self.layout, {f.path: owner for f, owner in todo}, programs)
        by_path = {f.path: (f, owner) for f, owner in todo}
        in_order = InOrder(list(by_path), lambda path, result: on_parsed(*by_path[path], result))

        def arrived(path: str, result: Any) -> None:
            adopt_prepared(result)
            if self.options.tune_gc:
                gc.freeze()
            in_order(path, result)

        parse_all(
            [f for f, _ in todo],
            self.root,
            self.options.jobs,
            self.options.ocr,
            progress.advance,
            on_result=arrived,
            prepare=prepare,
            executor=self.executor,
            **kwargs,
        )

    def _parsed(self, f: SourceFile, owner: str | None, result: Any) -> ParsedResourceArtifact | None:
        """Record one parse's result: its artifact (returned), or its error."""
        if isinstance(result, ProviderError):
            if result.code == UNPUBLISHED:  # no row: what an earlier build recorded of it goes (`vanished`)
                self.unpublished.add(f.path)
                return None
            p = provider_for(f.path, self.options.ocr)
            self._record_error(f, owner, STATUS_ERROR, result.code, result.message, p.name, p.version())
            return None
        self._accept(f, owner, result.artifact, prepared=result)
        return result.artifact

    def _unchanged(self, f: SourceFile, owner: str | None, version: str) -> bool:
        """Same bytes, same provider version, same owner (and sidecars where the layout puts them, still
        in place: `SidecarsInPlace`): the previous outcome stands.

        That includes a recorded parse error: providers are deterministic, so the same
        bytes fail the same way (a new provider version retries them)."""
        prev = self.prev.resources.get(f.path)
        return bool(
            prev
            and prev.status in (STATUS_OK, STATUS_ERROR)
            and prev.source_hash == f.sha256
            and prev.provider_version == version
            and prev.owner == owner
            and (
                prev.status != STATUS_OK  # checked last: the sidecar path is the dearest
                or prev.source_map_path == source_map_path(f.path, owner, self.layout)
                and self.sidecars_in_place(prev.source_map_path, prev.artifact_path)
            )
        )

    def screen(self, f: SourceFile, owner: str | None) -> bool:
        """Record refused, unsupported, empty and oversized files. True if `f` should be parsed."""
        if f.refused:
            self._record_error(f, owner, STATUS_ERROR, *f.refused)
        elif f.kind == KIND_OTHER:
            self._record_error(
                f,
                owner,
                STATUS_UNSUPPORTED,
                "unsupported_type",
                f"no provider for '{Path(f.path).suffix or 'files without extension'}'",
            )
        elif f.size == 0 and f.kind != KIND_MARKDOWN:
            self._record_error(f, owner, STATUS_ERROR, "empty_file", "file is empty (0 bytes)")
        elif f.size > self.options.max_file_mb * 2**20:
            self._record_error(
                f,
                owner,
                STATUS_ERROR,
                "file_too_large",
                f"{f.size / 2**20:.1f} MiB is over the {self.options.max_file_mb:g} MiB "
                "limit; raise --max-file-mb to index it",
            )
        else:
            return True
        return False

    @in_durable_batch  # sidecars: one sync for the batch, all of it before the index points at them
    def notes(self, files: list[SourceFile]) -> dict[str, list[NoteLink] | None]:
        """Parse changed notes (in the worker pool when there are many: `NOTE_BATCH` per task);
        return every indexable note's links (None: unchanged, as indexed)."""
        links: dict[str, list[NoteLink] | None] = {}
        progress = StageProgress(self.options.on_progress, Stage.NOTES, len(files))
        todo: list[SourceFile] = []
        limit, unchanged, screened = self.options.max_file_mb * 2**20, 0, 0
        # one provider reads every note (formats.py: kind markdown is one format), so one version for all
        version = self._version(files[0].path) if files else ""
        for f in files:
            if (f.refused or not 0 < f.size <= limit or f.kind == KIND_OTHER) and not self.screen(f, f.path):
                screened += 1
                continue
            if self._unchanged(f, f.path, version):
                unchanged += 1
                links[f.path] = (
                    None  # as the index holds them (build/index/linkgraph.py reads them if needed)
                )
                continue
            todo.append(f)
        self.report.unchanged += unchanged
        progress.advance(screened + unchanged)

        def parsed(f: SourceFile, owner: str | None, result: Any) -> None:
            artifact = self._parsed(f, owner, result)
            if artifact is not None:
                links[f.path] = [
                    NoteLink(b.id, link["target"], link["kind"], link.get("label"))
                    for b in artifact.blocks
                    for link in b.links
                ]

        self._parse([(f, f.path) for f in todo], progress, parsed, batch=NOTE_BATCH, min_pool=NOTES_FOR_POOL)
        progress.finish()
        self.report.parsed += len(todo) - len(self.unpublished)  # those are counted as excluded
        return links

    @in_durable_batch
    def resources(self, files: list[SourceFile], owner_of: dict[str, str | None]) -> None:
        todo: list[tuple[SourceFile, str | None]] = []
        for f in files:
            owner = owner_of.get(f.path)
            if not self.screen(f, owner):
                continue
            version = self._version(f.path)
            if self._unchanged(f, owner, version):
                self.report.unchanged += 1
                continue
            prev = self.prev.resources.get(f.path)
            reused = reusable(
                self.root,
                f.path,
                f.source_hash,
                version,
                owner,
                self.layout,
                prev.source_map_path if prev else None,
            )
            if reused is not None:
                self.report.reused_sidecars += 1
                self._accept(f, owner, *reused)
            else:
                todo.append((f, owner))
        self._parse_all(todo)

    def _parse_all(self, todo: list[tuple[SourceFile, str | None]]) -> None:
        progress = StageProgress(self.options.on_progress, Stage.PARSE, len(todo))
        if not todo:
            return
        self.report.parsed += len(todo)
        self._parse(todo, progress, self._parsed)
        progress.finish()

    def vanished(self, present: set[str], ignore: Ignore) -> None:
        """Rows of files not scanned: stale on the first build that misses them (a tombstone page), removed
        on the next; an excluded file's (ignored, unpublished) removed at once, nothing of it kept."""
        for path in sorted(self.prev.resources.keys() - present):
            prev = self.prev.resources[path]
            excluded = path in self.unpublished or ignore.matches(path)
            if prev.status == STATUS_STALE or excluded:
                if excluded:
                    self.excluded.add(path)
                    self.changes.purge = True
                self.changes.removed.append(prev.resource_id)
                self._drop_old_sidecars(prev)
                self.report.removed += 1
            else:
                self.changes.stale.append(prev.resource_id)
                self.report.stale += 1

    def stamps(self, files: list[SourceFile]) -> None:
        """Record new (size, mtime) stamps of files whose rows are not rewritten (touched, same bytes). A file
        the scan did not hash kept its recorded stamp, unless that stamp is too recent to trust: only the
        others are looked at."""
        rewritten = {u.row.path for u in self.changes.updates}
        for f in files:
            if not f.hashed and f.stamp is not None:
                continue
            prev = self.prev.resources.get(f.path)
            stamp = f.stamp or (None, None)
            if (
                prev is not None
                and f.path not in rewritten
                and (prev.source_size, prev.source_mtime_ns) != stamp
            ):
                self.changes.stamps.append((*stamp, prev.resource_id))

    def layout_changed(self) -> bool:
        return self.prev.meta.get("sidecar_layout", LAYOUT_BESIDE) != self.layout


class _Collection:
    """When the cyclic GC may run during a build (`_long_lived`); does nothing unless `tuned`."""

    def __init__(self, tuned: bool) -> None:
        self.tuned = tuned
        self.enabled = gc.isenabled()  # as the caller had it: never switched on here if it was off

    def settled(self, resume: bool = True) -> None:
        """The previous rows and the scanned files are in: frozen; collection back on if `resume`."""
        if self.tuned:
            gc.freeze()
            if resume:
                self.resume()

    def resume(self) -> None:
        if self.tuned and self.enabled:
            gc.enable()


@contextmanager
def _long_lived(tuned: bool) -> Iterator[_Collection]:
    """With `tuned`: the build's long-lived objects (the modules imported before it, the previous rows, the
    scanned files, each parsed artifact as it arrives) are frozen out of the cyclic GC's generations
    (`gc.freeze`) so collections do not traverse them again, and automatic collection is off until the
    scan has settled (for an edit, until its index is written: `_Collection.resume`). Everything is
    handed back to the GC when the build ends; reference counting frees objects meanwhile."""
    collection = _Collection(tuned)
    if not tuned:
        yield collection
        return
    gc.freeze()
    gc.disable()
    try:
        yield collection
    finally:
        gc.unfreeze()
        collection.resume()


def check_output(root: Path, out: Path) -> None:
    """Raise `OutputInWorkspace` when `out` is `root` or inside it where the scan would read it (no
    hidden or sidecar folder on the way, `scan.skip_dir`): its next build would index its own site."""
    root, out = root.resolve(), out.resolve()
    if out.is_relative_to(root) and not any(skip_dir(part) for part in out.relative_to(root).parts):
        raise OutputInWorkspace(root, out)


def build(root: Path, options: BuildOptions | None = None) -> BuildReport:
    started = time.perf_counter()
    options = options or BuildOptions()
    root = root.resolve()
    if not root.is_dir():
        raise NotAWorkspace(root)
    check_output(root, options.out)  # before the lock: nothing is written
    with (
        _build_lock(options.out),
        _long_lived(options.tune_gc) as collection,
        _Build.opened(root, options) as run,
    ):
        sites: list[str] = []
        known = None if options.rehash else run.prev.resources
        ignore = Ignore(root)
        files = scan(root, exclude=[options.out], known=known, sites=sites, ignore=ignore)
        run.report.hashed = sum(1 for f in files if f.sha256 and f.hashed)
        # the previous build's rows and the files just scanned; an edit collects after its index write
        collection.settled(resume=run.report.hashed > NOTES_FOR_POOL)
        StageProgress(options.on_progress, Stage.SCAN, len(files)).finish()
        notes = [f for f in files if f.kind == KIND_MARKDOWN]
        others = [f for f in files if f.kind != KIND_MARKDOWN]
        run.layout = run.layout or choose_layout(root, (f.path for f in notes))
        note_links = run.notes(notes)
        if run.unpublished:  # as if absent: a link to one finds nothing
            files = [f for f in files if f.path not in run.unpublished]
        run.report.excluded = {"ignored": ignore.ignored, "unpublished": len(run.unpublished)}
        graph = LinkStage.plan(run.db_path, run.prev, files, note_links, [f.path for f in others])
        run.resources(others, graph.owner_of)
        run.vanished({f.path for f in files}, ignore)
        run.changes.meta = {"sidecar_layout": run.layout}
        graph.record(run.changes)
        run.stamps(files)
        changes = run.changes
        plan = versions.Plan.for_build(run.prev, options.ocr, options.page_images if options.site else None)
        plan.apply(changes)
        if options.lightrag:
            progress = StageProgress(options.on_progress, Stage.KNOWLEDGE, 1)
            # a rebuilt index (new schema) starts without knowledge_text: every kept text is re-read
            ingest = reconcile(
                options.lightrag,
                candidates(root, run.prev.resources, changes),
                run.prev.knowledge,
                run.stamp,
                set() if changes.rebuild else run.prev.knowledge_texts,
                run.prev.sent_hashes,
            )
            run.report.knowledge = ingest.summary()
            changes.knowledge_texts = ingest.texts
            if registry_key(ingest.rows) != registry_key(run.prev.knowledge.values()) or ingest.texts:
                changes.knowledge = ingest.rows
            progress.finish()
        progress = StageProgress(options.on_progress, Stage.INDEX, 1)
        run.report.changed = bool(
            changes.updates
            or changes.stale
            or changes.removed
            or changes.knowledge is not None
            or changes.links
            or plan.meta_changed
            or run.layout_changed()
            or not run.db_path.exists()
        )
        resegmented = 0
        if run.report.changed:
            changes.meta.update(
                {
                    "generator": f"mnote-evidence {__version__}",
                    "workspace_name": root.name,
                    "built_at_ms": str(run.stamp),
                }
            )
            resegmented = write_index(run.db_path, changes, run.fresh, run.prev.valid)
        elif (
            changes.stamps
        ):  # only touched files (same bytes): their new stamps, so they are not hashed again
            write_index(
                run.db_path,
                IndexChanges(stamps=changes.stamps),
                valid=run.prev.valid,
            )
        remember_layout(root, run.layout)  # with the workspace: a build into another OUT keeps it
        progress.finish()
        run.report.redone = plan.redone(run.prev, changes.updates, resegmented)
        run.report.status_counts, run.report.errors, run.report.warnings = recorded(run.db_path)
        untrusted = key_problem()
        if untrusted:
            warning = {"path": str(key_file()), "code": KEY_UNAVAILABLE, "message": untrusted}
            run.report.warnings.append(warning)
        for folder in sorted(sites):
            message = (
                "a folder holding a built site (evidence.sqlite and the build's state): not indexed; move it "
                "out of the workspace, or delete it"
            )
            run.report.warnings.append({"path": folder, "code": SITE_IN_WORKSPACE, "message": message})
        collection.resume()
        if options.site:
            from mnote_evidence.build.render.data import FromBuild
            from mnote_evidence.build.render.site import RenderOptions, render_site

            render_options = RenderOptions(
                jobs=options.jobs,
                images=options.page_images,
                max_page_images=options.max_page_images,
                ask=options.lightrag is not None,
                excluded=frozenset(run.excluded),
                search_file_bytes=int(options.search_file_mib * (1 << 20)),
            )
            # the rows this run read and what it wrote since: the renderer reads only the rows written
            known = (
                FromBuild(run.prev.resources, changes.resource_ids_written(), graph.resolver, graph.aliases)
                if run.prev.resources and not (changes.rebuild or changes.resegment)
                else None
            )
            run.report.site = render_site(
                root, options.out, run.db_path, render_options, options.on_progress, known
            )
            run.report.warnings += run.report.site.warnings
        run.report.seconds = round(time.perf_counter() - started, 3)
        return run.report
