"""Stage 3: sidecars, the on-disk truth of a parse (SPEC §1, §2, §5).

Where they go (root-relative): in the layout `mnote` every sidecar goes under `.mnote/sidecars/`
(`<root-relative path>.*`), so a note editor lists none of them. In the layout `beside` (MNote's
convention, SPEC §2):
- a resource owned by note `docs/Page.md`: `docs/Page.ocr/<name>.parse.md` and `.source-map.json`,
  <name> being its path inside `docs/Page.assets/`, else relative to the note's folder, else
  `_root/<root-relative path>`;
- an unowned resource: `.mnote/sidecars/<root-relative path>.*`;
- a note: only `.mnote/sidecars/<note path>.source-map.json` (the note is its own text).
`*.ocr.md` replaces `*.parse.md` for OCR text. The layout is the workspace's (`choose_layout`): the one
asked for, else the one its last build used (`.mnote/workspace.json`), else `beside` where its notes
already have `Note.ocr/` folders, else `mnote`.
Invariants: files are written atomically and only when their bytes change, in one `durable_batch` before
the index points at them; the same input gives byte-identical files (on one installation: the source map's
last member `mac` seals it, `build/core/trust.py`); a sidecar is reused instead of parsing again only if
this installation sealed it, its `sourceHash` and `providerVersion` match, and its text file is the
regular file the build itself writes there (`load_cached`); removing one also removes the sidecar folders
it leaves empty (never a user folder). Sidecars are written, read and removed only through real folders
below the root (`fsutil.folder_inside`): one that cannot be (a symlink or a file on the way, a name too
long) leaves its resource indexed with a `sidecar_not_written` warning (`unwritable`).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import stat
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mnote_evidence.build.core.fsutil import (
    adopt,
    atomic_write_text,
    folder_inside,
    path_problem,
    read_inside,
    stage_bytes,
    unlink_inside,
)
from mnote_evidence.build.core.model import (
    KIND_MARKDOWN,
    SOURCE_MAP_SCHEMA,
    Block,
    Page,
    ParsedResourceArtifact,
    Section,
    Warning_,
)
from mnote_evidence.build.core.trust import installation_key, is_sealed, seal
from mnote_evidence.build.workspace.scan import SIDECAR_DIR_SUFFIX

UNOWNED_DIR = ".mnote/sidecars"
WORKSPACE_SETTINGS = ".mnote/workspace.json"  # what every build of the workspace keeps, whatever its OUT
SOURCE_MAP_SUFFIX = ".source-map.json"
LAYOUT_BESIDE, LAYOUT_MNOTE = "beside", "mnote"
LAYOUTS = (LAYOUT_BESIDE, LAYOUT_MNOTE)
MAX_SIDECAR_BYTES = 256 << 20  # a sidecar file past this is not read back: the file is parsed again
SEAL_CONTEXT = SOURCE_MAP_SCHEMA
NOT_WRITTEN = "sidecar_not_written"


@dataclass(frozen=True)
class SidecarPaths:
    text: str | None
    source_map: str


def sidecar_base(resource_path: str, owner_path: str | None, layout: str = LAYOUT_BESIDE) -> str:
    if layout == LAYOUT_MNOTE or owner_path is None or owner_path == resource_path:
        return f"{UNOWNED_DIR}/{resource_path}"
    owner_dir, owner_name = posixpath.split(owner_path)
    stem = posixpath.splitext(owner_name)[0]
    assets = posixpath.join(owner_dir, stem + ".assets")
    sidecar_dir = posixpath.join(owner_dir, stem + SIDECAR_DIR_SUFFIX)
    rel = posixpath.relpath(resource_path, assets)
    if rel.startswith("../"):
        rel = posixpath.relpath(resource_path, owner_dir or ".")
    if rel.startswith("../"):
        rel = "_root/" + resource_path
    return posixpath.join(sidecar_dir, rel)


def choose_layout(root: Path, note_paths: Iterable[str]) -> str:
    """The layout of a build not told one: the workspace's remembered one (`remember_layout`), else
    `beside` if a note has its `Note.ocr/` folder (a real folder: MNote's, or an earlier build's),
    else `mnote`. The notes are looked at only while nothing is remembered."""
    raw = read_inside(root, root / WORKSPACE_SETTINGS, 1 << 16)
    try:
        remembered = json.loads(raw).get("sidecars") if raw else None
    except (ValueError, AttributeError):
        remembered = None
    if remembered in LAYOUTS:
        return remembered
    for path in note_paths:
        folder = posixpath.splitext(path)[0] + SIDECAR_DIR_SUFFIX
        try:
            if stat.S_ISDIR(os.lstat(root / folder).st_mode):
                return LAYOUT_BESIDE
        except OSError:
            continue
    return LAYOUT_MNOTE


def remember_layout(root: Path, layout: str) -> None:
    """Record `layout` in the workspace (`WORKSPACE_SETTINGS`, written only when it changes and only
    through real folders); one that cannot be written is chosen again by the next build."""
    try:
        atomic_write_text(root / WORKSPACE_SETTINGS, _compact({"sidecars": layout}) + "\n", root)
    except OSError:
        pass


def source_map_path(resource_path: str, owner_path: str | None, layout: str = LAYOUT_BESIDE) -> str:
    return sidecar_base(resource_path, owner_path, layout) + SOURCE_MAP_SUFFIX


def sidecar_paths(
    artifact: ParsedResourceArtifact, owner_path: str | None, layout: str = LAYOUT_BESIDE
) -> SidecarPaths:
    return paths_at(source_map_path(artifact.source_path, owner_path, layout), artifact)


def paths_at(map_rel: str, artifact: ParsedResourceArtifact) -> SidecarPaths:
    """The sidecar files of `artifact` whose source map is at root-relative `map_rel`."""
    return _paths(map_rel, artifact.kind, artifact.from_ocr)


def _paths(map_rel: str, kind: str, from_ocr: bool) -> SidecarPaths:
    base = map_rel[: -len(SOURCE_MAP_SUFFIX)]
    if kind == KIND_MARKDOWN:
        return SidecarPaths(None, map_rel)
    return SidecarPaths(base + (".ocr.md" if from_ocr else ".parse.md"), map_rel)


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def source_map(
    artifact: ParsedResourceArtifact, owner_path: str | None, paths: SidecarPaths
) -> dict[str, Any]:
    """The `mnote.resource_source_map.v1` document for an artifact."""
    out: dict[str, Any] = {
        "schema": SOURCE_MAP_SCHEMA,
        "provider": artifact.provider,
        "providerVersion": artifact.provider_version,
        "resourceKind": artifact.kind,
        "ownerDocumentPath": owner_path,
        "sourceRootRelativePath": artifact.source_path,
        "sourceHash": artifact.source_hash,
        "fromOcr": artifact.from_ocr,
    }
    if artifact.title:
        out["title"] = artifact.title
    if paths.text is not None:
        out["textFile"] = posixpath.basename(paths.text)
        out["textHash"] = _sha(artifact.text)
    if artifact.pages:
        by_page: dict[int, list[dict[str, Any]]] = {p.page: [] for p in artifact.pages}
        for block in artifact.blocks:
            by_page[block.page].append(block.to_json())
        out["pageCount"] = len(artifact.pages)
        out["pages"] = [{**p.to_json(), "blocks": by_page[p.page]} for p in artifact.pages]
    else:
        out["blocks"] = [b.to_json() for b in artifact.blocks]
    out["sections"] = [s.to_json() for s in artifact.sections]
    out["warnings"] = [w.to_json() for w in artifact.warnings]
    return out


# made once (`json.dumps` with options builds an encoder per call)
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# that C encoder made once with `_COMPACT`'s options (`encode` makes one per call); the same bytes
_C_COMPACT = (
    None
    if json.encoder.c_make_encoder is None
    else json.encoder.c_make_encoder(
        None, _COMPACT.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
)


def _compact(value: Any) -> str:
    if _C_COMPACT is None:
        return _COMPACT.encode(value)
    return "".join(_C_COMPACT(value, 0))


def dumps(doc: dict[str, Any]) -> str:
    """Deterministic JSON, one block / section per line: diffable, and written by the C encoder
    (`indent=` would switch `json` to its pure-Python encoder)."""

    def items(values: list, render) -> str:
        return "[]" if not values else "[\n" + ",\n".join(render(v) for v in values) + "\n ]"

    def page(p: dict[str, Any]) -> str:
        head = _compact({k: v for k, v in p.items() if k != "blocks"})[:-1]
        return f'  {head},"blocks":' + items(p["blocks"], lambda b: "   " + _compact(b)) + "}"

    lines = []
    for key, value in doc.items():
        if key == "pages":
            rendered = items(value, page)
        elif key in ("blocks", "sections"):
            rendered = items(value, lambda v: "  " + _compact(v))
        else:
            rendered = _compact(value)
        lines.append(f" {_compact(key)}: {rendered}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_sidecars(
    root: Path, artifact: ParsedResourceArtifact, owner_path: str | None, layout: str = LAYOUT_BESIDE
) -> SidecarPaths:
    """`stage_sidecars` and `fsutil.adopt` in this process (inside a `durable_batch`, its files join it)."""
    paths, staged = stage_sidecars(root, artifact, owner_path, layout)
    for tmp, path in staged:
        adopt(tmp, path)
    return paths


def stage_sidecars(
    root: Path, artifact: ParsedResourceArtifact, owner_path: str | None, layout: str = LAYOUT_BESIDE
) -> tuple[SidecarPaths, list[tuple[Path, Path]]]:
    """`write_sidecars` in a worker process: the same bytes in temp files beside their places, as
    (temp, sidecar) pairs in writing order, for the build process to `fsutil.adopt` (one sync per
    batch, then the renames); a sidecar that already holds its bytes has no pair. Raises the `OSError`
    of a path it cannot write (see `unwritable`)."""
    paths = sidecar_paths(artifact, owner_path, layout)
    files = [(paths.text, artifact.text)] if paths.text is not None else []
    files.append((paths.source_map, seal(dumps(source_map(artifact, owner_path, paths)), SEAL_CONTEXT)))
    staged: list[tuple[Path, Path]] = []
    try:
        for rel, content in files:
            tmp = stage_bytes(root / rel, content.encode("utf-8"), root)
            if tmp is not None:
                staged.append((tmp, root / rel))
    except BaseException:  # none or all: no temp file of a half-staged pair is left behind
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    return paths, staged


def unwritable(root: Path, artifact: ParsedResourceArtifact, exc: OSError) -> ParsedResourceArtifact | None:
    """`artifact` with a `sidecar_not_written` warning when `exc` (from `stage_sidecars`) is about the
    sidecar's path (`fsutil.path_problem`), not the disk; None for any other error (the build's)."""
    problem = path_problem(exc)
    if problem is None:
        return None
    where = Path(exc.filename) if exc.filename else None
    named = where.relative_to(root).as_posix() if where and where.is_relative_to(root) else "its path"
    message = f"its sidecar cannot be written ({named} {problem}); it is indexed and parsed on every build"
    return replace(artifact, warnings=[*artifact.warnings, Warning_(NOT_WRITTEN, message)])


def remove_sidecars(root: Path, paths: SidecarPaths) -> None:
    """Remove a resource's sidecars and the sidecar folders they leave empty; nothing through a
    symlink or a file on the way (`fsutil.UnsafePath`: left as it is)."""
    for rel in (paths.text, paths.source_map):
        if rel:
            try:
                unlink_inside(root, root / rel)
            except OSError:
                continue
            _prune_empty(root, rel)


def _prune_empty(root: Path, rel: str) -> None:
    """Remove the now-empty folders of a sidecar path, up to its `X.ocr/` folder (included) or
    `.mnote/sidecars/` (excluded); never a folder outside those, nor one reached through a symlink."""
    parts = rel.split("/")[:-1]
    if rel.startswith(UNOWNED_DIR + "/"):
        floor = UNOWNED_DIR.count("/") + 2  # keep .mnote/sidecars itself
    else:
        ocr = [i for i, part in enumerate(parts) if part.endswith(SIDECAR_DIR_SUFFIX)]
        if not ocr:
            return
        floor = ocr[0] + 1
    while len(parts) >= floor:
        folder = root / "/".join(parts)
        try:
            if not folder_inside(root, folder):
                return
            folder.rmdir()
        except OSError:
            return
        parts.pop()


def artifact_from_source_map(doc: dict[str, Any], text: str) -> ParsedResourceArtifact:
    pages, blocks = [], []
    for p in doc.get("pages", []):
        pages.append(Page(p["page"], p["width"], p["height"], p.get("source")))
        blocks.extend(Block.from_json(b, page=p["page"]) for b in p["blocks"])
    blocks.extend(Block.from_json(b) for b in doc.get("blocks", []))
    return ParsedResourceArtifact(
        kind=doc["resourceKind"],
        provider=doc["provider"],
        provider_version=doc["providerVersion"],
        source_path=doc["sourceRootRelativePath"],
        source_hash=doc["sourceHash"],
        text=text,
        blocks=blocks,
        sections=[Section.from_json(s) for s in doc["sections"]],
        pages=pages,
        warnings=[Warning_(**w) for w in doc.get("warnings", [])],
        from_ocr=doc.get("fromOcr", False),
        title=doc.get("title"),
    )


def read_source_map(root: Path, map_rel: str) -> dict[str, Any] | None:
    """The source map at root-relative `map_rel` as this installation wrote it: a regular file reached
    through real folders, at most `MAX_SIDECAR_BYTES`, whose seal checks (on an installation without a
    key nothing is sealed: any such file); else None."""
    raw = read_inside(root, root / map_rel, MAX_SIDECAR_BYTES)
    if raw is None or (not is_sealed(raw, SEAL_CONTEXT) and installation_key() is not None):
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def load_cached(
    root: Path, map_rel: str, path: str, source_hash: str, provider_version: str
) -> ParsedResourceArtifact | None:
    """A previous parse of exactly these bytes by this provider version, if its sidecars (source
    map at root-relative `map_rel`, see `source_map_path`) are intact and this installation wrote
    them: the map sealed by its key, its text file the regular file of the name the build gives it
    (`paths_at`), both under `MAX_SIDECAR_BYTES`. Anything else is no cache (the file is parsed again)."""
    if installation_key() is None:  # nothing is sealed, so nothing is trusted
        return None
    doc = read_source_map(root, map_rel)
    if doc is None:
        return None
    try:
        if (
            doc.get("schema") != SOURCE_MAP_SCHEMA
            or doc.get("sourceHash") != source_hash
            or doc.get("providerVersion") != provider_version
            or doc.get("sourceRootRelativePath") != path
        ):
            return None
        text_rel = _paths(map_rel, doc["resourceKind"], doc.get("fromOcr", False)).text
        text = ""
        if doc.get("textFile") != (posixpath.basename(text_rel) if text_rel else None):
            return None
        if text_rel is not None:
            data = read_inside(root, root / text_rel, MAX_SIDECAR_BYTES)
            if data is None:
                return None
            text = data.decode("utf-8")
            if _sha(text) != doc.get("textHash"):
                return None
        return artifact_from_source_map(doc, text)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def reusable(
    root: Path,
    path: str,
    source_hash: str,
    provider_version: str,
    owner_path: str | None,
    layout: str,
    previous_map: str | None = None,
) -> tuple[ParsedResourceArtifact, str] | None:
    """Intact sidecars of exactly these bytes, and their source map's root-relative path: where
    `layout` puts them, else where the previous build put them (`previous_map`: another owner
    note or layout), else where the other layout would (an index deleted and rebuilt without
    the layout option)."""
    places = [
        source_map_path(path, owner_path, layout),
        *([previous_map] if previous_map else []),
        *(source_map_path(path, owner_path, other) for other in LAYOUTS),
    ]
    for place in dict.fromkeys(places):
        cached = load_cached(root, place, path, source_hash, provider_version)
        if cached is not None:
            return cached, place
    return None


_UNSEEN: Any = object()


class SidecarsInPlace:
    """Whether the sidecars the last build recorded are still in place, for the files it does not parse
    again: each a regular file (not a symlink, FIFO or device, at most `MAX_SIDECAR_BYTES`) reached
    through real folders below the root. Each folder is looked at once per build (lstat); a folder
    that lists no change since the index was written (`since_ns`, its mtime: an entry added, removed
    or renamed moves the folder's mtime) vouches for its files unlooked at, so an unchanged workspace
    costs one lstat per sidecar folder; in another folder each sidecar is lstat'd. What lstat cannot
    see (bytes forged in place) the page that reads it finds (`read_source_map`, `discard`)."""

    def __init__(self, root: Path, since_ns: int | None):
        self.root, self.since_ns = str(root), since_ns
        self._folders: dict[str, int | None] = {"": -1}  # root-relative folder -> mtime (None: not real)

    def __call__(self, map_rel: str, text_rel: str | None = None) -> bool:
        return self._in_place(map_rel) and (text_rel is None or self._in_place(text_rel))

    def _folder(self, rel: str) -> int | None:
        """The mtime of real folder `rel` (every folder on the way real), None when it is not one."""
        mtime = self._folders.get(rel, _UNSEEN)
        if mtime is not _UNSEEN:
            return mtime
        mtime = None
        if self._folder(rel.rpartition("/")[0]) is not None:
            try:
                st = os.lstat(f"{self.root}/{rel}")
                mtime = st.st_mtime_ns if stat.S_ISDIR(st.st_mode) else None
            except OSError:
                pass
        self._folders[rel] = mtime
        return mtime

    def _in_place(self, rel: str) -> bool:
        folder, _, _ = rel.rpartition("/")
        mtime = self._folders.get(folder, _UNSEEN)
        if mtime is _UNSEEN:
            if "/../" in f"/{rel}/" or rel.startswith("/"):
                return False
            mtime = self._folder(folder)
        if mtime is None:
            return False
        if self.since_ns is not None and mtime <= self.since_ns and folder:
            return True  # nothing of this folder added, removed or renamed since the index was written
        try:
            st = os.lstat(f"{self.root}/{rel}")
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size <= MAX_SIDECAR_BYTES


def discard(root: Path, map_rel: str) -> None:
    """Remove the source map at `map_rel` that a page could not read (`read_source_map`: forged,
    unsealed, not a regular file), so the next build parses its file again (`SidecarsInPlace`)."""
    try:
        unlink_inside(root, root / map_rel)
    except OSError:  # reached through a symlink or a file: `SidecarsInPlace` refuses it already
        pass
