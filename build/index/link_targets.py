"""Where a link's `#fragment` lands inside its target, read from `evidence.sqlite` (SPEC §4, §8).

One module answers for the site (anchors, embeds) and the build summary (broken links):
- `#^id`: the block whose author id (`evidence_block.anchor`) is `id`; its anchor is `^id`;
- `#Heading` (or `#H1#H2`, a heading path's tail): the section with that title,
  compared case- and space-insensitively; its anchor is its first block (the heading);
- `#page=N` on a paged resource (PDF): `page-N` when the page exists.
A fragment that finds nothing is `None`: the link is broken (`broken_link` warning).
Embeds read the blocks a fragment covers: the whole resource (its footnotes too), a
heading's section with its subsections (no footnotes: they are the note's, listed last),
or the one referenced block, at most `MAX_EMBED_BLOCKS` blocks and `MAX_EMBED_CHARS` characters of
text (`markdown/limits.py`: the embed's title links the rest). `recorded_aliases` reads the alias
link rows (Obsidian `aliases:`), for the build's link plan and the renderer alike.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass

from mnote_evidence.build.core.ids import resource_id
from mnote_evidence.build.index.schema import ALIAS_LINKS, REPORT_LINKS
from mnote_evidence.build.markdown.limits import MAX_EMBED_CHARS

MAX_EMBED_BLOCKS = 40
_PAGE = re.compile(r"page=(\d+)$")


def recorded_aliases(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(note path, alias) of every alias link row the index holds, in written order (read through their
    index, evidence_link_alias, not a scan of every link row)."""
    return [
        (path, alias)
        for path, alias in conn.execute(
            "SELECT r.source_root_relative_path, l.target FROM evidence_link l "
            f"JOIN evidence_resource r USING (resource_id) WHERE {ALIAS_LINKS.format(l='l.')} ORDER BY "
            "l.rowid"
        )
    ]


@dataclass(frozen=True)
class TargetBlock:
    block_id: str
    kind: str
    text: str


def split_target(target: str) -> tuple[str, str]:
    """`Note#Heading` -> (`Note`, `Heading`); `Note#H1#H2` -> (`Note`, `H1#H2`)."""
    name, _, fragment = target.partition("#")
    return name.strip(), fragment.strip()


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class LinkTargets:
    """Fragment lookups over one open `evidence.sqlite` connection."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def anchor(self, path: str, fragment: str) -> str | None:
        """The anchor `fragment` lands on in `path`'s page (None: nothing there)."""
        rid = resource_id(path)
        if fragment.startswith("^"):
            hit = self.conn.execute(
                "SELECT 1 FROM evidence_block WHERE resource_id = ? AND anchor = ?", [rid, fragment[1:]]
            ).fetchone()
            return fragment if hit else None
        page = _PAGE.match(fragment)
        if page:
            row = self.conn.execute(
                "SELECT page_count FROM evidence_resource WHERE resource_id = ?", [rid]
            ).fetchone()
            n = int(page.group(1))
            return f"page-{n}" if row and row[0] and 1 <= n <= row[0] else None
        section = self._section(rid, fragment)
        return section[1] if section else None

    def _section(self, rid: str, fragment: str) -> tuple[str, str, int] | None:
        """(section id, first block id, level) of the heading a fragment names."""
        wanted = [_norm(p) for p in fragment.split("#") if p.strip()]
        if not wanted:
            return None
        for sid, path_json, level in self.conn.execute(
            "SELECT section_id, path_json, level FROM evidence_section WHERE resource_id = ? ORDER BY rowid",
            [rid],
        ):
            path = [_norm(p) for p in json.loads(path_json)]
            if path[-len(wanted) :] == wanted:
                first = self.conn.execute(
                    "SELECT block_id FROM evidence_block_row WHERE resource_id = ? "
                    "AND section_id = ? ORDER BY ordinal LIMIT 1",
                    [rid, sid],
                ).fetchone()
                if first:
                    return sid, first[0], level
        return None

    def embed(self, path: str, fragment: str) -> list[TargetBlock] | None:
        """The blocks an embed `![[path#fragment]]` shows (None: the fragment finds nothing)."""
        rid = resource_id(path)
        rows = "SELECT block_id, kind, text, ordinal FROM evidence_block WHERE resource_id = ? "
        if fragment.startswith("^"):
            found = self.conn.execute(rows + "AND anchor = ?", [rid, fragment[1:]]).fetchall()
            return _within_chars([TargetBlock(*r[:3]) for r in found]) or None
        start, level = 0, None
        if fragment:
            section = self._section(rid, fragment)
            if section is None:
                return None
            start = self.conn.execute(
                "SELECT ordinal FROM evidence_block WHERE block_id = ?", [section[1]]
            ).fetchone()[0]
            level = section[2]
        out: list[TargetBlock] = []
        chars = 0
        for block_id, kind, text, ordinal in self.conn.execute(
            rows + "AND ordinal >= ? AND kind != 'properties' AND (? OR kind != 'footnote') ORDER BY ordinal",
            [rid, start, level is None],
        ):
            if level is not None and ordinal > start and kind == "heading" and self._level(block_id) <= level:
                break
            out.append(TargetBlock(block_id, kind, text))
            chars += len(text)
            if len(out) >= MAX_EMBED_BLOCKS or chars >= MAX_EMBED_CHARS:
                break
        return _within_chars(out)

    def _level(self, block_id: str) -> int:
        row = self.conn.execute(
            "SELECT s.level FROM evidence_block b JOIN evidence_section s "
            "ON s.section_id = b.section_id WHERE b.block_id = ?",
            [block_id],
        ).fetchone()
        return row[0] if row else 1

    # the links `broken` and `outside_root` report, read through evidence_link_report (same WHERE); ties keep
    # the written order
    REPORT_LINKS_SQL = (
        "SELECT r.source_root_relative_path, l.target, l.kind, l.target_path, l.problem "
        "FROM evidence_link l JOIN evidence_resource r USING (resource_id) "
        f"WHERE {REPORT_LINKS.format(l='l.')} ORDER BY 1, 2, l.rowid"
    )

    def report_links(self) -> list[tuple[str, str, str, str | None, str | None]]:
        """(note path, target, kind, target path, problem) of every link `broken` or `outside_root` may
        report, by note and target."""
        return self.conn.execute(self.REPORT_LINKS_SQL).fetchall()

    def broken(
        self, rows: list[tuple[str, str, str, str | None, str | None]] | None = None
    ) -> list[dict[str, str]]:
        """A `broken_link` warning per note link whose target or fragment finds nothing (`rows`: what
        `report_links` returned, if the caller has read them)."""
        out = []
        for path, target, kind, target_path, problem in self.report_links() if rows is None else rows:
            if problem == "missing":
                out.append(
                    {
                        "path": path,
                        "code": "broken_link",
                        "target": target,
                        "message": f"{kind} '{target}' finds nothing in the workspace",
                    }
                )
                continue
            if kind not in ("wikilink", "embed") or "#" not in target:  # an outside_root link, reported apart
                continue
            name, fragment = split_target(target)
            target_path = target_path or (None if name else path)  # `[[#Heading]]`: this note
            if target_path and fragment and self.anchor(target_path, fragment) is None:
                out.append(
                    {
                        "path": path,
                        "code": "broken_link",
                        "target": target,
                        "message": f"{kind} '{target}': {target_path} has no '#{fragment}'",
                    }
                )
        return out


def _within_chars(blocks: list[TargetBlock]) -> list[TargetBlock]:
    """`blocks` up to `MAX_EMBED_CHARS` characters of text in all: the last one shown is cut (`…`)."""
    out, left = [], MAX_EMBED_CHARS
    for b in blocks:
        if left <= 0:
            break
        out.append(b if len(b.text) <= left else TargetBlock(b.block_id, b.kind, b.text[:left] + "…"))
        left -= len(b.text)
    return out
