"""One page per tag and per mentioned entity, and an index of each (SPEC §8; docs/guides/obsidian.md).

A tag is a `tag` row of `evidence_link`: a `#tag` in a block, or a front matter tag (on the note's
`properties` block). `_tags/<tag>.html` lists every block carrying it, grouped by note, each linking
its anchor; tags compare case-insensitively (one page, named in lower case). `_tags/index.html` lists
every tag with its count, kept in the site state so an edit counts only its own tags again. A tag page
is written when its key changes; a tag that is gone loses its page (it was never a citation target,
so no tombstone is left). Entities are the same machinery over `mention` rows (`@Name`, target: the
entity's key; the page's title: the name as first written): `_entities/<key>.html`, `_entities/index.html`
(a `Facet` each).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnote_evidence.build.core.urls import ENTITIES_DIR, TAGS_DIR, relative_url
from mnote_evidence.build.index.schema import MENTION_LINKS, TAG_LINKS
from mnote_evidence.build.render import site_files
from mnote_evidence.build.render.note_links import entity_page, tag_page


@dataclass(frozen=True)
class Facet:
    """Names that link rows of one kind carry (tags, mentioned entities), and where their pages go."""

    links: str  # the rows' WHERE (schema.py: read through its partial index)
    folder: str
    mark: str  # shown before a name: `#`, `@`
    title: str  # of the index page
    empty: str  # what the index says when no note has one
    page: Callable[[str], str]

    @property
    def index(self) -> str:
        return f"{self.folder}/index.html"

    @property
    def where(self) -> str:
        return self.links.format(l="l.")


TAGS = Facet(TAG_LINKS, TAGS_DIR, "#", "Tags", "No note uses a tag.", tag_page)
MENTIONS = Facet(MENTION_LINKS, ENTITIES_DIR, "@", "Mentions", "No note mentions an @entity.", entity_page)
INDEX = TAGS.index


def _from(facet: Facet) -> str:
    # read through the facet's partial index, so an edit's `only` names cost their own rows, not a scan
    return (
        "FROM evidence_link l JOIN evidence_resource r USING (resource_id) "
        f"JOIN evidence_block b ON b.block_id = l.source_block_id WHERE {facet.where} AND r.status = 'ok'"
    )


def tag_entries(conn, only: list[str] | None = None, facet: Facet = TAGS) -> dict[str, list[dict[str, str]]]:
    """tag (lower case) -> [{path, block_id, text, kind, title, label}] in note path and block order;
    `only`: just the tags (as written, any case) in that list."""
    out: dict[str, list[dict[str, str]]] = {}
    seen: set[tuple[str, str]] = set()
    where, args = (
        ("", [])
        if only is None
        else (" AND lower(l.target) IN (SELECT lower(value) FROM json_each(?))", [json.dumps(only)])
    )
    for tag, path, block_id, text, kind, title, label in conn.execute(
        "SELECT lower(l.target), r.source_root_relative_path, b.block_id, b.text, b.kind, r.title, l.label "
        f"{_from(facet)}{where} ORDER BY 2, b.ordinal",
        args,
    ):
        if (tag, block_id) not in seen:
            seen.add((tag, block_id))
            out.setdefault(tag, []).append(
                {
                    "path": path,
                    "block_id": block_id,
                    "text": text,
                    "kind": kind,
                    "title": title or path,
                    "label": label or tag,
                }
            )
    return dict(sorted(out.items()))


def _key(payload: Any, salt: str) -> str:
    return hashlib.sha256(json.dumps([payload, salt], sort_keys=True).encode()).hexdigest()[:20]


def tag_counts(conn, facet: Facet = TAGS) -> dict[str, int]:
    """tag (lower case) -> how many blocks carry it (what the tag index shows), in tag order. The links of
    an `ok` note all sit in its blocks, so the links alone count them."""
    return dict(
        conn.execute(
            "SELECT lower(l.target), count(DISTINCT l.source_block_id) FROM evidence_link l JOIN "
            "evidence_resource r "
            f"USING (resource_id) WHERE {facet.where} AND r.status = 'ok' GROUP BY 1 ORDER BY 1"
        )
    )


def _counts(
    conn,
    pages: dict[str, Any],
    only: list[str] | None,
    entries: dict[str, list[dict[str, str]]],
    facet: Facet,
) -> tuple[dict[str, int], list[str] | None]:
    """Every tag's count, and the tags counted again (lower case; None: all were). The counts are those the
    state recorded with the tag index (`pages[INDEX]["counts"]`), with the tags in `only` (every tag whose
    links changed since the site was rendered) counted again from their `entries`; a tag whose blocks are
    all gone drops out. Without a recorded count or `only`, all are counted."""
    recorded = pages.get(facet.index, {}).get("counts")
    if only is None or not isinstance(recorded, dict):
        return tag_counts(conn, facet), None
    counts = dict(recorded)
    changed = [
        t
        for (t,) in conn.execute(
            "SELECT lower(value) FROM json_each(?)",
            [json.dumps(only)],
        )
    ]
    for tag in changed:
        counts.pop(tag, None)
    counts.update({tag: len(blocks) for tag, blocks in entries.items()})
    return dict(sorted(counts.items())), changed  # code point order, as SQLite's ORDER BY of UTF-8 text


def _ours(facet: Facet, page: str) -> bool:
    return page.startswith(facet.folder + "/")


def write(
    site,
    out: Path,
    pages: dict[str, Any],
    current: set[str],
    only: list[str] | None = None,
    facet: Facet = TAGS,
) -> int:
    """Write changed tag pages and the tag index; drop pages of vanished tags. Returns pages written.
    `only`: the tags whose pages may have changed (the build's `render_dirty`); None: every tag."""
    index = facet.index
    if only is not None and not only:
        current.update(p for p, e in pages.items() if e.get("tag") and _ours(facet, p))
        return 0
    tags = tag_entries(site.conn, only, facet)
    counts, changed = _counts(site.conn, pages, only, tags, facet)
    template, salt = site.env.get_template("tag.html"), site.templates_salt
    written = 0
    wanted: dict[str, str | None] = {facet.page(t): t for t in counts}
    current.update(wanted)
    current.add(index)
    todo = {facet.page(t): t for t in tags}
    todo[index] = None
    for page, tag in todo.items():
        if tag is None:
            payload: Any = [
                {"tag": t, "count": n, "url": relative_url(page, facet.page(t))} for t, n in counts.items()
            ]
        else:
            notes: dict[str, dict[str, Any]] = {}
            for e in tags[tag]:
                note = notes.setdefault(
                    e["path"],
                    {
                        "path": e["path"],
                        "title": e["title"],
                        "blocks": [],
                        "url": relative_url(page, site.page_of(e["path"])),
                    },
                )
                note["blocks"].append(
                    {**e, "url": relative_url(page, site.page_of(e["path"]), e["block_id"])}
                )
            payload = list(notes.values())
        key = _key([tag, payload, site.folders.listing_key("")], salt)  # and the explorer's listing
        if pages.get(page, {}).get("key") == key and (out / page).exists():
            continue
        name = f"{facet.mark}{tags[tag][0]['label']}" if tag else facet.title
        ctx = site._base(page, name, None) | {
            "crumbs": [],
            "file_name": name,
            "tag": tag,
            "heading": name,
            "facet": facet,
            "entries": payload,
            "index_url": relative_url(page, index),
            "explorer": site.top_explorer(page),
        }
        site_files.write_text(out, page, template.render(ctx))
        pages[page] = {"key": key, "source": None, "tag": True}
        written += 1
    # only a tag counted again can have lost its page, so an edit looks at those, not at every page
    for page in list(pages) if changed is None else [facet.page(t) for t in changed]:
        if pages.get(page, {}).get("tag") and _ours(facet, page) and page not in wanted and page != index:
            site_files.unlink(out, page)
            del pages[page]
    if index in pages:
        pages[index]["counts"] = counts
    return written
