"""Stage 5: render the static site from `evidence.sqlite` + sidecars (SPEC §8).

Incremental: every page has a key (a hash of the resource row, its backlinks and aliases, what a note
shows of its links' targets, the templates and, for a PDF, the page image settings); only pages the
build names as possibly changed (`render/dirty.py`) are keyed, and only those whose key changed are
written. PDF page images are cached by content hash and settings. A resource that disappeared leaves
a tombstone page, so old citation URLs still land. The front page (`render/front.py`) has a key too.
A resource's page is drawn by its format's page rule (`render/pages.py`), `UnknownKind` without one.
Invariants: every URL is relative (the site works from any base path and from `file://`); pages are
written atomically, synced in batches, all before the state file records them.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import shutil
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnote_evidence import __version__
from mnote_evidence.build.core.assets import asset_dir
from mnote_evidence.build.core.defaults import DEFAULT_MAX_PAGE_IMAGES
from mnote_evidence.build.core.errors import UnknownKind
from mnote_evidence.build.core.formats import format_for
from mnote_evidence.build.core.fsutil import commit_pending, in_durable_batch
from mnote_evidence.build.core.headers import HEADERS_FILE, PAGE_CSP, headers_file
from mnote_evidence.build.core.model import KIND_MARKDOWN, KIND_PDF, STATUS_OK, STATUS_STALE
from mnote_evidence.build.core.progress import OnProgress, Stage, StageProgress
from mnote_evidence.build.core.urls import (
    MOVED_PAGES_DIR,
    STATIC_DIR,
    URL_SCHEME,
    Pages,
    folder_page,
    is_reserved,
    relative_url,
)
from mnote_evidence.build.index.link_targets import LinkTargets, recorded_aliases
from mnote_evidence.build.parse.sidecars import artifact_from_source_map, discard, read_source_map
from mnote_evidence.build.render import (
    copies,
    data,
    dirty,
    page_images,
    page_pool,
    search_index,
    site_files,
    tag_pages,
)
from mnote_evidence.build.render import (
    state as site_state,
)
from mnote_evidence.build.render.backlinks import Sentences, items_html
from mnote_evidence.build.render.explorer import Folders, folder_of
from mnote_evidence.build.render.front import INDEX, FrontPage, same_tree, tree
from mnote_evidence.build.render.note_html import note_text
from mnote_evidence.build.render.note_links import NoteLinks
from mnote_evidence.build.render.note_map import NoteMap
from mnote_evidence.build.render.note_programs import PROGRAMS_DIR
from mnote_evidence.build.workspace.links import LinkResolver, alias_map

# Jinja and the page rules load where pages are drawn, not for a render with nothing to do
if TYPE_CHECKING:
    from jinja2 import Environment

STATE_FILE = site_state.STATE_FILE
_TREE_MARK = "\0mnote-front-tree\0"  # where `render_index` puts the tree's HTML


@dataclass
class RenderOptions:
    jobs: int = 1
    images: page_images.PageImageSettings = field(default_factory=page_images.PageImageSettings)
    max_page_images: int = DEFAULT_MAX_PAGE_IMAGES
    ask: bool = False  # a knowledge server is configured (the build's LightRAG URL): link the Ask page
    # sources the build left out (`.mnoteignore`, `publish: false`): their pages go, with no tombstone
    excluded: frozenset[str] = frozenset()
    # the largest file of the static search index (`render/search_index.py`)
    search_file_bytes: int = search_index.DEFAULT_MAX_FILE_BYTES


@dataclass
class RenderReport:
    pages_written: int = 0
    pages_unchanged: int = 0
    tag_pages: int = 0
    folder_pages: int = 0  # `_folders/…/index.html` written (`render/explorer.py`)
    page_images: int = 0
    images_removed: int = 0
    tombstones: int = 0
    front_page_written: bool = False  # index.html: only when what it shows changed (`render/front.py`)
    search: search_index.SearchIndexReport = field(default_factory=search_index.SearchIndexReport)
    seconds: float = 0.0
    problems: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)


def _templates_dir() -> Path:
    return asset_dir("site_templates")


def _environment() -> Environment:
    from mnote_evidence.build.render.templates import environment

    return environment(_templates_dir())


class _Site:
    def __init__(
        self,
        root: Path,
        out: Path,
        db_path: Path,
        options: RenderOptions,
        from_build: data.FromBuild | None = None,
        state: dict[str, Any] | None = None,
    ):
        self.root, self.out, self.db_path, self.options = root, out, db_path, options
        self.programs: Path | None = out / PROGRAMS_DIR
        self.conn = data.connect_ro(db_path)
        self.env = _environment()
        self.report = RenderReport()
        self.resources, again = data.read_resources(self.conn, from_build)
        self.by_path = {r.path: r for r in self.resources}
        self.same_tree = from_build is not None and same_tree(len(from_build.rows), again, self.by_path)
        # rows written since the build's read with changed page fields: keyed where drawn, backlinks read once
        self.rows_changed = {
            p
            for p, old in (again or {}).items()
            if p in self.by_path
            and (old is None or data.page_fields(old) != data.page_fields(self.by_path[p]))
        }
        aliases = (
            from_build.aliases
            if from_build and from_build.aliases is not None
            else alias_map(recorded_aliases(self.conn))
        )
        self.resolver = _resolver(
            {r.path for r in self.resources if r.status != STATUS_STALE},
            aliases,
            from_build.resolver if from_build else None,
        )
        self.page_of = Pages(r.path for r in self.resources)
        self.note_links = NoteLinks(
            self.resolver,
            LinkTargets(self.conn),
            self._page_image,
            self.page_of,
            self.page_of.copy,
            lambda path: note_text(root, path),
        )
        # the collisions depend on the paths alone: those the state recorded for the same paths stand
        self.paths_key = _paths_key(self.resources)
        if state and state.get("paths_key") == self.paths_key and isinstance(state.get("collisions"), list):
            self.report.problems.extend(state["collisions"])
        else:
            self._collisions()
        self.meta = dict(self.conn.execute("SELECT key, value FROM build_meta").fetchall())
        from mnote_evidence.build.render.pages import RULES

        self.rules = dict(RULES)  # replaceable per site, like markdown-it-py's renderer rules
        self.sentences = Sentences(self.conn)

    def _collisions(self) -> None:
        """Report sources placed away from their usual URL: moved by the placement (`urls.Pages`:
        `page_collision`, `name_too_long`) or by a reserved name."""
        moves: dict[str, list[dict[str, str]]] = {}
        for problem in self.page_of.problems:
            moves.setdefault(problem["path"], []).append(problem)
        for r in self.resources:
            page = self.page_of(r.path)
            self.report.problems.extend(moves.get(r.path, ()))
            if page.startswith(f"{MOVED_PAGES_DIR}/") and r.path not in self.page_of.moved:
                self.report.problems.append(
                    {
                        "path": r.path,
                        "code": "reserved_name",
                        "message": (
                            f"its usual page would be a file the build generates; its page is {page}"
                        ),
                    }
                )
            if is_reserved(r.path):
                self.report.problems.append(
                    {
                        "path": r.path,
                        "code": "reserved_name",
                        "message": (
                            "its name is one the build generates; its copy in the site is "
                            f"{self.page_of.copy(r.path)}"
                        ),
                    }
                )

    @cached_property
    def folders(self) -> Folders:
        return Folders(self.resources)

    def top_explorer(self, page: str) -> dict[str, Any]:
        """The explorer of the top folder, for pages that lie in no folder (tag pages, the Ask page)."""
        return self.folders.explorer(page, "", None, self.page_of)

    def _base(self, page: str, title: str, source_path: str | None, explorer: bool = False) -> dict[str, Any]:
        """Header and head of every page: the workspace's name links home, then the folders (each to its
        folder page), then the file; with `explorer`, the explorer of the folder `source_path` lies in
        (`render/explorer.py`)."""
        parts = (source_path or page).split("/")
        crumbs = []
        for i, name in enumerate(parts[:-1]):
            folder = "/".join(parts[: i + 1])
            url = relative_url(page, folder_page(folder)) if folder in self.folders else None
            crumbs.append({"name": name, "url": url})
        return {
            "title": title,
            "page": page,
            "crumbs": crumbs,
            "file_name": parts[-1],
            "explorer": self.folders.explorer(page, folder_of(source_path), source_path, self.page_of)
            if explorer and source_path is not None
            else None,
            "static": relative_url(page, STATIC_DIR),
            "home": relative_url(page, INDEX),
            "ask_url": relative_url(page, "ask.html") if self.options.ask else None,
            "workspace": self.meta.get("workspace_name", "workspace"),
            "csp": PAGE_CSP,
        }

    def _resource_context(
        self, res: data.Resource, page: str, backlinks: list[data.Backlink], aliases: list[data.Alias]
    ) -> dict[str, Any]:
        ctx = self._base(page, posixpath.basename(res.path), res.path, explorer=True)
        owner = self.by_path.get(res.owner) if res.owner and res.owner != res.path else None
        ctx.update(
            {
                "res": res,
                "source_url": relative_url(page, self.page_of.copy(res.path))
                if self._copyable(res)
                else None,
                "owner": {"path": owner.path, "url": relative_url(page, self.page_of(owner.path))}
                if owner
                else None,
                "outline": data.section_tree(self.conn, res.resource_id),
                "backlinks": [
                    {
                        "path": b.from_path,
                        "name": self._title_of(b.from_path),
                        "folder": posixpath.dirname(b.from_path),
                        "text": b.text,
                        "sentence": sentence,
                        "url": relative_url(page, self.page_of(b.from_path), b.block_id),
                    }
                    for b, sentence in zip(backlinks, self.sentences.snippets(backlinks, res.path))
                ],
                "removed_aliases": [a.old_id for a in aliases if a.successor is None],
                "aliases": _aliases_by_successor(aliases),
            }
        )
        ctx["backlinks_html"] = items_html(ctx["backlinks"])
        return ctx

    def _page_image(self, path: str, page: int) -> str | None:
        """Site path of a PDF page's image (None: no such page, or past the page-image cap)."""
        res = self.by_path.get(path)
        if (
            res is None
            or res.kind != KIND_PDF
            or res.status != STATUS_OK
            or not res.source_hash
            or not 1 <= page <= min(res.page_count or 0, self.options.max_page_images)
        ):
            return None
        settings = self.options.images
        return (
            f"{page_images.image_folder(res.source_hash, settings)}/{page_images.image_name(page, settings)}"
        )

    def _title_of(self, path: str) -> str:
        """A resource's title as the provider chose it (front matter, first heading), else its file name."""
        res = self.by_path.get(path)
        return (res.title if res is not None and res.title else None) or posixpath.basename(path)

    def _copyable(self, res: data.Resource) -> bool:
        return bool(res.source_hash) and res.status != STATUS_STALE

    def render_resource(self, res: data.Resource) -> str:
        return self._render(
            res, data.backlinks(self.conn, res.resource_id), data.aliases(self.conn, res.resource_id)
        )

    def render_keyed(self, res: data.Resource, salt: list[Any]) -> tuple[str, str]:
        """The page and its key (`_page_key` with `salt`), reading the backlinks and aliases once for both:
        a page with no key to compare (a full build's) is keyed where it is rendered."""
        backlinks, aliases = (
            data.backlinks(self.conn, res.resource_id),
            data.aliases(self.conn, res.resource_id),
        )
        key = _page_key(self, res, salt, data.fingerprint_of(backlinks, aliases))
        return self._render(res, backlinks, aliases), key

    def _render(self, res: data.Resource, backlinks: list[data.Backlink], aliases: list[data.Alias]) -> str:
        page = self.page_of(res.path)
        ctx = self._resource_context(res, page, backlinks, aliases)
        artifact = self._artifact(res)
        if artifact is None:  # recorded error, unsupported file, unreadable sidecar: say so
            return self.env.get_template("problem.html").render(ctx)
        fmt = format_for(res.path)
        rule = self.rules.get(fmt.page) if fmt and fmt.kind == res.kind else None
        if rule is None:
            raise UnknownKind(res.path, res.kind, fmt.page if fmt else None)
        return rule(self, res, ctx, artifact, page)

    def _artifact(self, res: data.Resource):
        if res.status not in (STATUS_OK, STATUS_STALE) or not res.source_map_path:
            return None
        doc = read_source_map(self.root, res.source_map_path)  # as this installation wrote it, or None
        if doc is None:  # removed, so the next build parses the file again and writes it anew
            discard(self.root, res.source_map_path)
            self.report.problems.append(
                {
                    "path": res.path,
                    "code": "sidecar_missing",
                    "message": "source map not readable; the next build parses the file again",
                }
            )
            return None
        if res.kind == KIND_MARKDOWN:  # (a note has no pages) its blocks built only if needed
            return NoteMap(doc)
        return artifact_from_source_map(doc, "")

    def render_tombstone(self, page: str, source: str) -> str:
        ctx = self._base(page, posixpath.basename(source), source)
        return self.env.get_template("tombstone.html").render(ctx)

    def _tree_html(self, front: FrontPage) -> str:
        """The file tree's HTML, most of the front page: kept in the state store and rendered again
        only when `front.tree_key()` changes (and the templates: the salt)."""
        key = f"{front.tree_key()}|{self.templates_salt}"
        html = site_state.cached(self.out, "front_tree", key)
        if html is None:
            html = self.env.get_template("_tree.html").render(tree=tree(front.resources, self.page_of))
            site_state.cache(self.out, "front_tree", key, html)
        return html

    def render_index(self, front: FrontPage) -> str:
        """The front page: the home note (links relative to index.html) beside the tree, or the tree."""
        ctx = self._base(INDEX, self.meta.get("workspace_name", "Workspace"), None) | front.context(
            self.page_of
        )
        ctx.update(
            {
                "file_name": None,
                "body": None,
                "tags_url": relative_url(INDEX, tag_pages.INDEX),
                "mentions_url": relative_url(INDEX, tag_pages.MENTIONS.index),
            }
        )
        if front.note is not None:
            body, title = self._home_note(front)
            ctx["body"] = body
            if title is not None:
                ctx["title"] = title
        return _with_tree(self.env.get_template("index.html"), ctx, self._tree_html(front))

    def _home_note(self, front: FrontPage) -> tuple[str | None, str | None]:
        """The home note's body (links relative to index.html) and title (None: unreadable, the page's
        default), kept in the state store with the note's page key, which changes whenever its body or title
        could: every edit changes the front page, and compiling the home note again would cost the most."""
        key = f"{front.note_key}|{self.templates_salt}" if front.note_key else None
        try:
            kept = json.loads(site_state.cached(self.out, "front_note", key) or "null") if key else None
            if kept:
                return kept["body"], kept["title"]
        except (ValueError, KeyError, TypeError):
            pass
        from mnote_evidence.build.render.pages import note_body, note_title

        artifact = self._artifact(front.note)
        if artifact is None:
            return None, None
        known = len(self.report.problems)
        body = note_body(
            self,
            front.note,
            artifact,
            INDEX,
            _aliases_by_successor(data.aliases(self.conn, front.note.resource_id)),
        )
        if any(p in self.report.problems[:known] for p in self.report.problems[known:]):
            del self.report.problems[known:]  # already reported by the note's own page
        title = note_title(front.note, artifact)
        if key and body is not None:
            site_state.cache(self.out, "front_note", key, json.dumps({"body": body, "title": title}))
        return body, title


def _with_tree(template: Any, ctx: dict[str, Any], tree_html: str) -> str:
    """`template` rendered with `tree_html` as its `tree_html`. The tree goes in after the template (Jinja's
    `escape` would copy so large a Markup twice). The page shows the tree once, so exactly one mark is its
    place (with a second one, written in the home note, the tree goes through the template)."""
    from markupsafe import Markup

    html = template.render(ctx | {"tree_html": Markup(_TREE_MARK)})
    if html.count(_TREE_MARK) == 1:
        return html.replace(_TREE_MARK, tree_html)
    return template.render(ctx | {"tree_html": Markup(tree_html)})


def _write_front_page(site: _Site, front: FrontPage) -> None:
    """index.html drawn before any other page and committed at once (what it reports of the home note is
    reported again by the render itself)."""
    known = len(site.report.problems)
    site.out.mkdir(parents=True, exist_ok=True)  # the state store caches the tree there
    site_files.write_text(site.out, INDEX, site.render_index(front))
    del site.report.problems[known:]
    commit_pending()


def _listing_recorded(state: dict[str, Any], pages: dict[str, Any], folder: str) -> str | None:
    if not folder:
        return state.get("root_listing")
    entry = pages.get(folder_page(folder))
    return entry.get("listing") if isinstance(entry, dict) else None


def _with_changed_folders(
    site: _Site, state: dict[str, Any], pages: dict[str, Any], todo: list[data.Resource]
) -> list[data.Resource]:
    """`todo` with the resources of every folder whose listing changed since the last render (a title,
    a file added or removed), in path order: their explorers show that listing."""
    folders = site.folders
    changed = {
        f for f in ["", *folders.names] if _listing_recorded(state, pages, f) != folders.listing_key(f)
    }
    extra = folders.in_folders(changed) - {r.path for r in todo}
    if not extra:
        return todo
    wanted = extra | {r.path for r in todo}
    return [r for r in site.resources if r.path in wanted]


def _folder_pages(site: _Site, pages: dict[str, Any], current: set[str], same_paths: bool) -> int:
    """Write the folder pages whose key changed (`render/explorer.py`); with other paths than the last
    render's, drop the pages of folders that are gone. Returns how many were written."""
    written, wanted = 0, set()
    template = None
    for folder in site.folders.names:
        page = folder_page(folder)
        wanted.add(page)
        listing = site.folders.listing_key(folder)
        key = hashlib.sha256(f"{listing}|{site.templates_salt}".encode()).hexdigest()[:20]
        entry = pages.get(page)
        if isinstance(entry, dict) and entry.get("key") == key and (site.out / page).is_file():
            continue
        template = template or site.env.get_template("folder.html")
        ctx = site._base(page, posixpath.basename(folder), folder)
        ctx["explorer"] = site.folders.explorer(page, folder, None, site.page_of)
        ctx.update(site.folders.folder_context(page, folder, site.page_of))
        html = template.render(ctx)
        if _write(site, None, page, lambda html=html: html):
            pages[page] = {"key": key, "source": None, "folder": folder, "listing": listing}
            written += 1
    current.update(wanted)
    if not same_paths:
        for page, entry in list(pages.items()):
            if isinstance(entry, dict) and entry.get("folder") is not None and page not in wanted:
                site_files.unlink(site.out, page)
                del pages[page]
    return written


def _paths_key(resources: list[data.Resource]) -> str:
    """Every resource path, in order, and this code's version: what `_Site._collisions` depends on."""
    return hashlib.sha256("\0".join([__version__, *(r.path for r in resources)]).encode()).hexdigest()[:20]


def _resolver(paths: set[str], aliases: dict[str, str], built: LinkResolver | None) -> LinkResolver:
    """The build's resolver when it resolves exactly as one over `paths` and `aliases` would
    (same paths, same aliases among them), else a new one (indexing 10,000 paths costs 0.05 s)."""
    if (
        built is not None
        and built.paths == paths
        and built.aliases == {a: p for a, p in aliases.items() if p in paths}
    ):
        return built
    return LinkResolver(paths, aliases)


def _aliases_by_successor(aliases: list[data.Alias]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for a in aliases:
        if a.successor:
            out.setdefault(a.successor, []).append(a.old_id)
    return out


def page_salt(templates_hash: str, ask: bool, moved: Mapping[str, str]) -> list[Any]:
    """What every page's key holds beside its own inputs: the templates and the URL scheme (a new
    scheme moves links and copies), the header's Ask link, and the pages and copies the placement
    moved (`urls.Pages.moves`: a move changes the links to that page or copy on any page)."""
    return [f"{templates_hash}|{URL_SCHEME}", ask, [list(item) for item in sorted(moved.items())]]


def _page_key(site: _Site, res: data.Resource, salt: list[Any], fingerprint: list[Any] | None = None) -> str:
    """`fingerprint`: `data.dependency_fingerprint` of `res`, when read already."""
    extra = (
        fingerprint if fingerprint is not None else data.dependency_fingerprint(site.conn, res.resource_id)
    )
    extra.append([site._title_of(b["from_path"]) for b in extra[0]])
    extra.append(site.folders.listing_key(folder_of(res.path)))  # what its explorer shows
    if res.kind == KIND_MARKDOWN:
        extra.append(dirty.shown_of_targets(site, res))
        if site.conn.execute(
            "SELECT 1 FROM evidence_link l JOIN evidence_resource t ON t.source_root_relative_path "
            "= l.target_path WHERE l.resource_id = ? AND l.kind = 'embed' AND t.kind = ?",
            [res.resource_id, KIND_PDF],
        ).fetchone():
            extra += [site.options.images.tag, site.options.max_page_images]
    if res.kind == KIND_PDF and res.status in (STATUS_OK, STATUS_STALE):
        extra += [site.options.images.tag, site.options.max_page_images]
    return data.page_key(res, extra + salt)


def _clear_the_way(site: _Site, pages: dict[str, Any], current: set[str]) -> None:
    """Remove the pages and tombstones an earlier render wrote where this site places another file
    or a folder (`urls.Pages.is_free`: a folder `spec.pdf.html/` where the page of `spec.pdf` was),
    before anything is written: their entries go with them (no tombstone can stand there)."""
    for page, entry in list(pages.items()):
        if (
            page in current
            or (isinstance(entry, dict) and (entry.get("tag") or entry.get("folder") is not None))
            or site.page_of.is_free(page)
        ):
            continue
        del pages[page]
        if not site.page_of.shares_file(page):  # else it may be that file, in another case
            site_files.unlink(site.out, page)


def _copy(site: _Site, folders: copies.Folders, path: str) -> None:
    """The source's copy in the site (`copies.copy_source` at its placement); what stands in its way
    is recorded (`site_files.not_written`)."""
    try:
        copies.drop_active_copy(site.out, path, site.page_of)
        copies.copy_source(site.root, site.out, path, folders, site.page_of.copy(path))
    except OSError as exc:
        problem = site_files.not_written(site.out, path, site.page_of.copy(path), exc)
        if problem is None:
            raise
        site.report.problems.append(problem)


def _write(site: _Site, source: str | None, page: str, html: Any) -> bool:
    """Write `html()` at site path `page`; what stands in its way is recorded, and False returned."""
    try:
        site_files.write_text(site.out, page, html())
        return True
    except OSError as exc:
        problem = site_files.not_written(site.out, source, page, exc)
        if problem is None:
            raise
        site.report.problems.append(problem)
        return False


def _load_state(out: Path) -> dict[str, Any]:
    return site_state.load(out)


def capped_warnings(resources: list[data.Resource], cap: int) -> list[dict[str, str]]:
    """A `page_images_capped` warning for each PDF with more pages than get an image."""
    return [
        {
            "path": res.path,
            "code": "page_images_capped",
            "message": f"rendered page images for pages 1-{cap} of {res.page_count} only; later pages are "
            f"listed with their text and anchors, without an image (raise the cap with "
            f"--max-page-images, BuildOptions.max_page_images)",
        }
        for res in resources
        if res.kind == KIND_PDF and res.status == STATUS_OK and res.page_count > cap
    ]


def _unchanged_site(
    db_path: Path,
    options: RenderOptions,
    on_progress: OnProgress | None,
    started: float,
    collisions: list[dict[str, str]],
) -> RenderReport:
    """The report of a render with nothing to do (what `render_site` would report, without its work)."""
    conn = data.connect_ro(db_path)
    try:
        resources = [
            data.Resource.from_sql(r)
            for r in conn.execute(
                "SELECT * FROM evidence_resource WHERE kind = ? AND status = ? AND page_count > ? "
                "ORDER BY source_root_relative_path",
                [KIND_PDF, STATUS_OK, options.max_page_images],
            )
        ]
        total = conn.execute("SELECT count(*) FROM evidence_resource").fetchone()[0]
    finally:
        conn.close()
    report = RenderReport(
        pages_unchanged=total,
        warnings=capped_warnings(resources, options.max_page_images),
        problems=list(collisions),
    )
    StageProgress(on_progress, Stage.RENDER, total).finish()
    StageProgress(on_progress, Stage.PAGE_IMAGES, 0)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


@in_durable_batch  # pages are synced together, and before the state file that records them
def render_site(
    root: Path,
    out: Path,
    db_path: Path,
    options: RenderOptions | None = None,
    on_progress: OnProgress | None = None,
    from_build: data.FromBuild | None = None,
) -> RenderReport:
    """Render (incrementally) the site for `db_path` into `out`; progress: stages render, page_images.

    Only the pages the build named (`dirty.dirty_since`) are keyed again, and of those only pages whose
    key changed are written; source copies and page images are checked for those only. Any other start
    (no state, other templates or settings, a site older than the previous build) keys every page."""
    started = time.perf_counter()
    options = options or RenderOptions()
    root = root.resolve()
    state = site_state.load_head(out)  # the base's page entries are read below, when there is work
    if not state:  # none, or not this installation's (shipped in a workspace): nothing of it is used
        site_state.discard(out)
    templates_hash, templates_signed = site_state.templates_hash(_templates_dir(), state)
    scheme = f"{templates_hash}|{URL_SCHEME}"
    stamp = [dirty.built_at(db_path), scheme, options.images.tag, options.max_page_images, options.ask]
    stamp.append(options.search_file_bytes)
    if state.get("stamp") == stamp and (out / INDEX).exists() and (out / search_index.MANIFEST).exists():
        shutil.rmtree(out / PROGRAMS_DIR, ignore_errors=True)
        report = _unchanged_site(db_path, options, on_progress, started, state.get("collisions", []))
        report.search = search_index.SearchIndexReport.unchanged(state.get("search"))
        return report
    state = site_state.with_pages(out, state)
    site = _Site(root, out, db_path, options, from_build, state)
    collisions = list(site.report.problems)  # told again by a render with nothing to do
    try:
        site.templates_salt = f"{scheme}|ask={options.ask}"
        had_front = (out / INDEX).exists()
        if not had_front:  # first of all, so a render stopped half way leaves a front page
            _write_front_page(site, FrontPage.of(site.resources, lambda note: None, options.ask))
        site.report.warnings = capped_warnings(site.resources, options.max_page_images)
        salt = page_salt(templates_hash, options.ask, site.page_of.moves)
        moved = salt[-1]
        pages: dict[str, Any] = state.get("pages", {})
        since = (
            dirty.dirty_since(site.meta, state, stamp)
            if had_front and state.get("moved", []) == moved
            else None
        )
        todo = (
            site.resources
            if since is None
            else [site.by_path[p] for p in since["resources"] if p in site.by_path]
        )
        if since is not None:  # the pages of a folder whose listing changed show it in their explorer
            todo = _with_changed_folders(site, state, pages, todo)
        # the search index needs only the database: a large one is written beside the pages
        finish_search = search_index.start(
            out,
            db_path,
            options.search_file_bytes,
            search_index.SearchIndexReport.unchanged(state.get("search")),
            # an excluded source leaves nothing behind: the index is written whole
            None if since is None or options.excluded else since["resources"],
            options.jobs,
        )
        rendering = StageProgress(on_progress, Stage.RENDER, len(todo))
        image_jobs = []
        # the pages that stay (the rest get tombstones): with the last render's paths, only tag pages can go
        same_paths = state.get("paths_key") == site.paths_key
        current = set() if same_paths else {site.page_of(res.path) for res in site.resources}
        if not same_paths:
            _clear_the_way(site, pages, current)
        keys: dict[str, str] = {}
        unkeyed: set[str] = set()
        folders = copies.Folders()

        # each changed page is handed on as soon as it is keyed, so the pool renders while the rest are keyed
        def changed():
            for res in todo:
                page = site.page_of(res.path)
                compared = page in pages and res.path not in site.rows_changed and (out / page).is_file()
                key = keys[res.path] = _page_key(site, res, salt) if compared else None
                if site._copyable(res):
                    _copy(site, folders, res.path)
                    copies.copy_pictures(site.root, site.out, res.path, res.source_hash or "")
                if res.kind == KIND_PDF and res.status == STATUS_OK and res.page_count:
                    folder = page_images.image_folder(res.source_hash, options.images)
                    missing = page_images.missing_pages(
                        out, folder, min(res.page_count, options.max_page_images), options.images
                    )
                    if missing:
                        image_jobs.append(
                            page_images.PageImageJob(
                                str(root / res.path), str(out / folder), missing, options.images, str(out)
                            )
                        )
                if compared and site_state.entry_key(pages[page]) == key:
                    site.report.pages_unchanged += 1
                    rendering.advance()
                else:
                    if key is None:
                        unkeyed.add(res.path)
                    pages[page] = site_state.page_entry(key or "", res.path)
                    site.report.pages_written += 1
                    yield res.path

        keyed = page_pool.write_pages(
            site,
            changed(),
            options.jobs,
            rendering.advance,
            distinct=len({site.page_of(r.path) for r in todo}) == len(todo),
            salt=salt,
            unkeyed=unkeyed,
        )
        for res in todo:  # in order: of two sources sharing a page, the last one written holds it
            if res.path in unkeyed:
                keys[res.path] = keyed[res.path]
                if pages[site.page_of(res.path)] == site_state.page_entry("", res.path):
                    pages[site.page_of(res.path)] = site_state.page_entry(keyed[res.path], res.path)
        for problem in site.report.problems:  # a page drawn without its sidecar is drawn again next time
            if problem["code"] == "sidecar_missing" and problem["path"] in site.by_path:
                pages[site.page_of(problem["path"])] = site_state.page_entry("", problem["path"])
        if since is not None:
            site.report.pages_unchanged += len(site.resources) - len(todo)
        tags = site_state.tag_entries(pages)
        had_tags = set(tags)
        # tag pages show the top folder's explorer: a change of its listing draws every one again
        top_changed = state.get("root_listing") != site.folders.listing_key("")
        for facet, dirty_names in ((tag_pages.TAGS, "tags"), (tag_pages.MENTIONS, "mentions")):
            only = None if since is None or top_changed else since.get(dirty_names, [])
            site.report.tag_pages += tag_pages.write(site, out, tags, current, only, facet)
        site_state.merge_tags(pages, had_tags, tags)
        site.report.folder_pages = _folder_pages(site, pages, current, same_paths)
        for page, entry in [] if same_paths else list(pages.items()):
            if page not in current and site_state.entry_key(entry) != site_state.TOMBSTONE:
                source = site_state.entry_source(entry)
                if source in options.excluded:  # its page and its copy (when nothing else stands there)
                    for gone in {page, site.page_of.copy(source)}:
                        if gone == page or site.page_of.is_free(gone):
                            site_files.unlink(out, gone)
                    del pages[page]
                    continue
                if _write(
                    site, source, page, lambda page=page, source=source: site.render_tombstone(page, source)
                ):
                    pages[page] = site_state.tombstone(source)
                    site.report.tombstones += 1
        rendering.finish()
        imaging = StageProgress(on_progress, Stage.PAGE_IMAGES, sum(len(job.pages) for job in image_jobs))
        site.report.page_images = page_images.render_all(image_jobs, options.jobs, imaging.advance)
        imaging.finish()
        if since is None:  # other settings leave stale images only when the stamp changed: a full pass
            site.report.images_removed = page_images.remove_stale(out, options.images)
        # the state's tree key holds if the site came from the previous build and no row of the tree changed
        recorded_tree = state.get("tree") if since is not None and site.same_tree else None
        front = FrontPage.of(
            site.resources,
            lambda note: keys.get(note.path) or site_state.entry_key(pages.get(site.page_of(note.path))),
            options.ask,
            recorded_tree if isinstance(recorded_tree, str) else None,
        )
        front_key = front.key(salt)
        if state.get("front") != front_key or not had_front:
            site_files.write_text(out, INDEX, site.render_index(front))
            site.report.front_page_written = True
        if (
            since is None
            or top_changed
            or not (out / "ask.html").exists()
            or not site_files.is_real_folder(out, STATIC_DIR)
        ):
            site_files.write_text(
                out,
                "ask.html",
                site.env.get_template("ask.html").render(
                    site._base("ask.html", "Ask", None)
                    | {"file_name": "Ask", "explorer": site.top_explorer("ask.html")}
                ),
            )
            copies.copy_static(_templates_dir(), out)
            site_files.write_text(out, HEADERS_FILE, headers_file())
        site.report.search = finish_search()
        commit_pending()
        site_state.save(
            out,
            {
                "stamp": stamp,
                "front": front_key,
                "tree": front.tree_key(),
                "ask": options.ask,
                "collisions": collisions,
                "paths_key": site.paths_key,
                "moved": moved,
                "templates": templates_signed,
                "root_listing": site.folders.listing_key(""),
                "search": asdict(site.report.search),
            },
            pages,
            state,
        )
    finally:
        site.conn.close()
        shutil.rmtree(out / PROGRAMS_DIR, ignore_errors=True)
        site.report.seconds = round(time.perf_counter() - started, 3)
    return site.report
