"""Stage 3: the notes' link graph, in proportion to what changed (SPEC §2, §6).

Input: every indexable note with its links as just parsed, or `None` when it is unchanged (its links
are the index's). Output: who owns each attachment (`owner_of`), the `evidence_link` rows of each note
whose rows or link edges differ from the index's (`IndexChanges.links`, by `ResourceRow.links_hash`),
and what the site must look at again
(`render_dirty`: resources, tags, mentioned entities). When the file set and alias map are the previous
build's ("the fast way") only changed notes are resolved, and only notes linking to a rewritten or
re-owned resource have their edges recomputed, read by targeted queries; otherwise ("the whole way")
every note is resolved again. Link edges are not stored (the `evidence_link_edge` view derives them):
`_edge_type` classifies them only so that a note whose edges change type is re-rendered.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnote_evidence.build.core.ids import resource_id
from mnote_evidence.build.core.model import STATUS_OK, STATUS_STALE, LinkRow, NoteLink
from mnote_evidence.build.core.sqlite_ro import connect_ro
from mnote_evidence.build.index.link_targets import recorded_aliases, split_target
from mnote_evidence.build.index.previous import PreviousBuild
from mnote_evidence.build.index.writer import IndexChanges
from mnote_evidence.build.workspace.links import LinkResolver, Resolution, alias_map, owners
from mnote_evidence.build.workspace.scan import SourceFile

Resolved = tuple[str, NoteLink, Resolution]
_NAMED = ("tag", "mention")  # links whose names have pages of their own (render/tag_pages.py)


def _links_hash(rows: list[LinkRow], edges: list[tuple[str, str, str]]) -> str:
    """One note's links, their resolutions and its link edges (target path, type, block), as written."""
    payload = [
        [
            (
                r["source_block_id"],
                r["target"],
                r["kind"],
                r["target_path"] or "",
                r["problem"] or "",
                r.get("label") or "",
            )
            for r in rows
        ],
        sorted(edges),
    ]
    return hashlib.sha256(repr(payload).encode()).hexdigest()[:16]


class _Previous:
    """Targeted reads of the previous index's links (none when there is no compatible index)."""

    def __init__(self, db_path: Path, prev: PreviousBuild):
        self.conn = connect_ro(db_path) if prev.resources and db_path.exists() else None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    def _rows(self, sql: str, args: list[Any] = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, args).fetchall() if self.conn is not None else []

    def aliases(self) -> list[tuple[str, str]]:
        return recorded_aliases(self.conn) if self.conn is not None else []

    def links_of(self, notes: set[str]) -> dict[str, list[tuple[NoteLink, Resolution]]]:
        """note path -> its links and their recorded resolutions, in written order."""
        out: dict[str, list[tuple[NoteLink, Resolution]]] = {n: [] for n in notes}
        for r in self._rows(
            "SELECT r.source_root_relative_path, l.source_block_id, l.target, l.kind, l.target_path, "
            "l.problem, l.label "
            "FROM evidence_link l JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path IN (SELECT value FROM json_each(?)) ORDER BY l.rowid",
            [json.dumps(sorted(notes))],
        ):
            out[r[0]].append((NoteLink(r[1], r[2], r[3], r[6]), Resolution(r[4], r[5])))
        return out

    def blocks(self, ids: set[str]) -> dict[str, tuple[str, int, str, str]]:
        """block id -> (resource id, ordinal, kind, text) of the blocks with those ids, as the index has
        them."""
        return {
            r[0]: (r[1], r[2], r[3], r[4])
            for r in self._rows(
                "SELECT block_id, resource_id, ordinal, kind, text FROM evidence_block_row "
                "WHERE block_id IN (SELECT value FROM json_each(?))",
                [json.dumps(sorted(ids))],
            )
        }

    def linking(self, targets: set[str]) -> dict[str, set[str]]:
        """target path -> the notes whose links resolved to it."""
        out: dict[str, set[str]] = {}
        for note, target in self._rows(
            "SELECT DISTINCT r.source_root_relative_path, l.target_path FROM evidence_link l "
            "JOIN evidence_resource r USING (resource_id) "
            "WHERE l.target_path IN (SELECT value FROM json_each(?))",
            [json.dumps(sorted(targets))],
        ):
            out.setdefault(target, set()).add(note)
        return out


@dataclass
class LinkStage:
    """The link graph of one build: `owner_of` first (attachments are screened with it), then `record`."""

    prev: PreviousBuild
    links: dict[str, list[NoteLink] | None]  # every indexable note; None = unchanged
    resolved: list[Resolved] = field(default_factory=list)
    owner_of: dict[str, str | None] = field(default_factory=dict)
    fast: bool = False
    resolver: LinkResolver | None = None  # built when a note changed; the renderer may reuse it
    # alias -> note of the link rows this build writes: the renderer's alias map, without a scan
    aliases: dict[str, str] = field(default_factory=dict)
    _reader: _Previous | None = None
    _changed: set[str] = field(default_factory=set)

    @classmethod
    def plan(
        cls,
        db_path: Path,
        prev: PreviousBuild,
        files: list[SourceFile],
        links: dict[str, list[NoteLink] | None],
        others: list[str],
    ) -> LinkStage:
        stage = cls(prev, links)
        stage._reader = _Previous(db_path, prev)
        try:
            stage._resolve(stage._reader, files, others)
        except BaseException:
            stage._reader.close()
            raise
        return stage

    def _resolve(self, old: _Previous, files: list[SourceFile], others: list[str]) -> None:
        present = {f.path for f in files if not f.refused}
        before = {p for p, r in self.prev.resources.items() if r.status != STATUS_STALE and r.source_hash}
        changed = {n for n, found in self.links.items() if found is not None}
        old_aliases = old.aliases()
        aliases = alias_map(
            [(n, t) for n, t in old_aliases if n in self.links and n not in changed]
            + [(n, link.target) for n in changed for link in self.links[n] if link.kind == "alias"]
        )
        self.aliases = aliases
        self.fast = old.conn is not None and present == before and aliases == alias_map(old_aliases)
        if not self.fast:  # every note resolved again: read the unchanged ones' links
            for note, found in old.links_of(set(self.links) - changed).items():
                self.links[note] = [link for link, _ in found]
            changed = set(self.links)
        if changed:  # (building a resolver indexes every path: not for a build with no note changed)
            resolver = self.resolver = LinkResolver(present, aliases)
            self.resolved = [
                (note, link, resolver.resolve(note, link.target, link.kind))
                for note in sorted(changed)
                for link in self.links[note]
            ]
        linkers: dict[str, set[str]] = {}
        if self.fast:
            for target, notes in old.linking(set(others)).items():
                linkers[target] = {n for n in notes if n in self.links and n not in changed}
        for note, _, hit in self.resolved:
            if hit.path:
                linkers.setdefault(hit.path, set()).add(note)
        self.owner_of = owners(others, set(self.links), linkers)
        self._changed = changed

    def record(self, changes: IndexChanges) -> None:
        """Put into `changes` the link rows and edges that differ, and `render_dirty` into its meta."""
        try:
            self._record(changes)
        finally:
            self._reader.close()

    def _quiet(self, same_links: dict[str, list[LinkRow]], changes: IndexChanges) -> set[str]:
        """Of the rewritten notes whose link rows (and edges) are the index's, those whose title and linking
        blocks (id, order, kind, text: each block holding a link or tag) are too, the note `ok` before and
        after: all that another page shows of a note (a backlink: the block's text, the link's label, the
        note's title; a tag page: its tagged blocks), so those pages are not looked at again."""
        updates = {u.row.path: u for u in changes.updates if u.row.path in same_links}
        wanted: dict[str, dict[str, tuple[str, int, str, str]]] = {}
        for note, rows in same_links.items():
            update, prev = updates.get(note), self.prev.resources[note]
            if (
                update is None
                or update.artifact is None
                or update.row.status != STATUS_OK
                or prev.status != STATUS_OK
                or update.row.title != prev.title
            ):
                continue
            ids = {r["source_block_id"] for r in rows}
            rid = update.row.resource_id
            wanted[note] = {
                b.id: (rid, i, b.type, b.text) for i, b in enumerate(update.artifact.blocks) if b.id in ids
            }
        if not wanted:
            return set()
        before = self._reader.blocks({b for blocks in wanted.values() for b in blocks})
        return {
            note
            for note, blocks in wanted.items()
            if all(before.get(b) == v for b, v in blocks.items())
            and len(blocks) == len({r["source_block_id"] for r in same_links[note]})
        }

    def _edge_type(self, note: str, target: str, notes: set[str]) -> str:
        """A link edge's type, as the `evidence_link_edge` view computes it (schema.py `LINK_TYPE_SQL`)."""
        return (
            "markdown_links_to"
            if target in notes
            else "document_contains_resource"
            if self.owner_of.get(target) == note
            else "resource_refers_to"
        )

    def _record(self, changes: IndexChanges) -> None:
        notes = set(self.links)
        rewritten = {u.row.path for u in changes.updates}
        path_of = {r.resource_id: p for p, r in self.prev.resources.items()}
        gone = {path_of[rid] for rid in (*changes.stale, *changes.removed) if rid in path_of}
        owner_moved = {
            p
            for p, owner in self.owner_of.items()
            if p in self.prev.resources and self.prev.resources[p].owner != owner
        }
        touched = rewritten | gone | owner_moved
        by_note: dict[str, list[tuple[NoteLink, Resolution]]] = {n: [] for n in self._changed}
        for note, link, hit in self.resolved:
            by_note[note].append((link, hit))
        linking_touched: set[str] = set()
        if self.fast:
            for found in self._reader.linking(touched).values():
                linking_touched |= found
            regroup = {n for n in linking_touched if n in notes and n not in by_note}
            by_note.update(self._reader.links_of(regroup))
        dirty_pages, dirty_tags = set(touched), set()
        same_links: dict[str, list[LinkRow]] = {}
        for note in sorted(by_note):
            rows: list[LinkRow] = []
            edges: list[tuple[str, str, str]] = []
            note_id = resource_id(note)
            for link, hit in by_note[note]:
                rows.append(
                    {
                        "resource_id": note_id,
                        "source_block_id": link.source_block_id,
                        "target": link.target,
                        "kind": link.kind,
                        "target_path": hit.path,
                        "problem": hit.problem,
                        "label": link.label,
                    }
                )
                if hit.path and hit.path != note:
                    edges.append((hit.path, self._edge_type(note, hit.path, notes), link.source_block_id))
            digest = _links_hash(rows, edges)
            prev = self.prev.resources.get(note)
            if note in rewritten or prev is None or prev.links_hash != digest:
                changes.links[note_id] = (rows, digest)
                dirty_pages.add(note)
                if prev is not None and prev.links_hash == digest:
                    same_links[note] = rows  # its targets and tags: below, unless what they show is unchanged
                    continue
                dirty_pages |= {r["target_path"] for r in rows if r["target_path"]}
                dirty_tags |= {(r["kind"], r["target"]) for r in rows if r["kind"] in _NAMED}
        quiet = self._quiet(same_links, changes)
        for note, rows in same_links.items():
            if note not in quiet:
                dirty_pages |= {r["target_path"] for r in rows if r["target_path"]}
                dirty_tags |= {(r["kind"], r["target"]) for r in rows if r["kind"] in _NAMED}
        for path in self.prev.resources.keys() - notes:
            prev = self.prev.resources[path]
            if prev.links_hash is not None:
                changes.links[prev.resource_id] = ([], None)
        # what the old rows of rewritten notes pointed at (their backlinks and tags change too)
        old_rows = self._reader.links_of({path_of[rid] for rid in changes.links if rid in path_of} - quiet)
        for found in old_rows.values():
            dirty_pages |= {hit.path for _, hit in found if hit.path}
            dirty_tags |= {(link.kind, link.target) for link, _ in found if link.kind in _NAMED}
        dirty_pages |= {path_of[rid] for rid in changes.links if rid in path_of}
        # a note linking to a rewritten resource shows something of it only through an embed or a `#fragment`
        # (`render/dirty.shown_of_targets`: a plain link shows its URL); one whose rows changed is above
        dirty_pages |= {
            n
            for n in linking_touched
            if n not in by_note
            or any(
                hit.path in touched and (link.kind == "embed" or split_target(link.target)[1])
                for link, hit in by_note[n]
            )
        }
        dirty_pages |= {note for note, _, hit in self.resolved if hit.path in touched}
        changes.meta["render_dirty"] = {
            "since": self.prev.meta.get("built_at_ms"),
            "resources": sorted(dirty_pages),
            "tags": sorted(t for kind, t in dirty_tags if kind == "tag"),
            "mentions": sorted(t for kind, t in dirty_tags if kind == "mention"),
        }
