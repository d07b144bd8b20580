"""What a render must look at again, and what a note's page shows of other files (SPEC §8).

- `dirty_since`: the build names in `build_meta.render_dirty` the resources and tags whose pages may
  show something different since the build before it (`index/linkgraph.py`); a site rendered from
  that build, with the same templates and settings, re-keys only those; any other re-keys every page.
- `shown_of_targets`: the part of a note's page key that comes from its links' targets: each link's
  resolution, where a `#fragment` lands, an embedded note's blocks and a hash of their markup (they are
  drawn from it), an embedded PDF page's image.
Invariant: a page key changes whenever the page's HTML would (tests/render/test_incremental_render.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mnote_evidence.build.core.formats import kind_for
from mnote_evidence.build.core.model import KIND_MARKDOWN, KIND_PDF
from mnote_evidence.build.core.model import ResourceRow as Resource
from mnote_evidence.build.core.sqlite_ro import connect_ro
from mnote_evidence.build.index.link_targets import split_target
from mnote_evidence.build.workspace.links import NAME_KINDS


def built_at(db_path: Path) -> str | None:
    conn = connect_ro(db_path)
    try:
        row = conn.execute("SELECT value FROM build_meta WHERE key = 'built_at_ms'").fetchone()
        return row[0] if row else None
    finally:
        conn.close()


def dirty_since(meta: dict[str, str], state: dict[str, Any], stamp: list[Any]) -> dict[str, Any] | None:
    """What to look at again: the build's `render_dirty` (resources, tags) when the site in `out` was
    rendered from the build just before it with the same templates and settings; None: everything."""
    previous = state.get("stamp")
    try:
        dirty = json.loads(meta.get("render_dirty") or "null")
    except ValueError:
        return None
    if not isinstance(dirty, dict) or not isinstance(previous, list) or previous[1:] != stamp[1:]:
        return None
    if dirty.get("since") is None or previous[0] != dirty["since"]:
        return None
    return dirty


def _markup_hash(site, path: str, block_ids: list[str]) -> str | None:
    """A hash of the markup an embed draws (the note's text from its first shown block to its last): an
    edit elsewhere in the note leaves the embedding page alone."""
    if not block_ids:
        return None
    marks = ",".join("?" * len(block_ids))
    start, end = site.conn.execute(
        f"SELECT min(char_start), max(char_end) FROM evidence_block_row WHERE block_id IN ({marks})",
        block_ids,
    ).fetchone()
    text = site.note_links.read_note(path)
    if text is None or start is None:
        return None
    return hashlib.sha256(text[start:end].encode("utf-8", "surrogatepass")).hexdigest()


def shown_of_targets(site, res: Resource) -> list[Any]:
    """What a note's page shows of the files it links to (`render/note_links.py`): each link's
    resolution, where a `#fragment` lands, an embedded note's blocks, an embedded PDF page's image.
    A plain link shows only the target's URL, so an edit of the target leaves this page's key alone."""
    targets = site.note_links.targets
    shown: list[Any] = []
    for target, kind, path, problem in site.conn.execute(
        "SELECT target, kind, target_path, problem FROM evidence_link WHERE resource_id = ? ORDER BY rowid",
        [res.resource_id],
    ):
        item: list[Any] = [target, kind, path, problem]
        fragment = split_target(target)[1]
        if path and targets is not None and kind not in NAME_KINDS:
            anchor = targets.anchor(path, fragment) if fragment else None
            item.append(anchor)
            if kind == "embed" and kind_for(path) == KIND_MARKDOWN:
                blocks = targets.embed(path, fragment) or []
                item.append([(b.block_id, b.kind, b.text) for b in blocks])
                item.append(_markup_hash(site, path, [b.block_id for b in blocks]))
            elif kind == "embed" and kind_for(path) == KIND_PDF:
                item.append(
                    site._page_image(path, int(anchor[5:]) if anchor and anchor.startswith("page-") else 1)
                )
        shown.append(item)
    return shown
