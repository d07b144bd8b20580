"""Backlinks as a reader sees them: the sentence of the linking block that holds the link (SPEC §8).

A backlink is an edge into a resource (`data.backlinks`: the linking block and its text). The panel
shows the sentence around the link with the link's words marked: its label as the Markdown provider
kept it (`evidence_link.label`), so nothing is parsed again. Without a label, or one not in the text,
the block's text is shortened instead: the panel never fails.
Invariants: the text shown is a slice of the indexed block text, never re-derived from the source;
each linking note's labels are read once per page (`Sentences`). The items are drawn here
(`items_html`, cheaper than in Jinja), the panel around them by `_resource_side.html`.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from markupsafe import Markup, escape

from mnote_evidence.build.core.ids import resource_id
from mnote_evidence.build.render import data

MAX_CHARS = 220
# a sentence ends after . ! ? followed by space, after a CJK full stop / ! / ?, or at a line break
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")


@dataclass
class Snippet:
    before: str
    mark: str
    after: str


def sentence_around(text: str, label: str) -> Snippet:
    """The sentence of `text` holding the first occurrence of `label`, the label split out."""
    at = _find(text, label)
    if at < 0:
        return Snippet(_cut(text.strip(), 0, MAX_CHARS), "", "")
    start, end = 0, len(text)
    for m in _SENTENCE_END.finditer(text):
        if m.end() <= at:
            start = m.end()
        elif m.start() >= at + len(label):
            end = m.start()
            break
    before, after = text[start:at], text[at + len(label) : end]
    room = max(MAX_CHARS - len(label), 40) // 2
    if len(before) > room:
        before = "…" + before[len(before) - room :].lstrip()
    if len(after) > room:
        after = after[:room].rstrip() + "…"
    return Snippet(before.lstrip(), label, after.rstrip())


def _find(text: str, label: str) -> int:
    """Where `label` stands as words of its own (not inside a longer word), else its first occurrence."""
    if not label:
        return -1
    # `(?<!\w)label(?!\w)` without a pattern per label (thousands overflow `re`'s cache); `\w`: isalnum() or _
    at = first = text.find(label)
    while at >= 0:
        if not _word(text[at - 1 : at]) and not _word(text[at + len(label) : at + len(label) + 1]):
            return at
        at = text.find(label, at + 1)
    return first


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _cut(text: str, start: int, limit: int) -> str:
    return text[start : start + limit].rstrip() + ("…" if len(text) - start > limit else "")


class Sentences:
    """Linking sentences for a page's backlinks, with one indexed query per page: the labels of every link
    to the page's resource (`evidence_link` by `target_path`), whichever notes hold them. (Reading each
    linking note's links instead cost a 10,000-note render a query per backlink's note in each worker.)"""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def _labels_to(self, target_path: str) -> dict[tuple[str, str], list[str]]:
        """(linking resource id, block id) -> the labels of its links to `target_path`, in the note's
        order."""
        found: dict[tuple[str, str], list[str]] = {}
        for from_id, block_id, label in self.conn.execute(
            "SELECT resource_id, source_block_id, label FROM evidence_link WHERE target_path = ? "
            "AND label IS NOT NULL ORDER BY rowid",
            [target_path],
        ):
            found.setdefault((from_id, block_id), []).append(label)
        return found

    def snippets(self, links: list[data.Backlink], target_path: str) -> list[Snippet]:
        """The sentence of each backlink into `target_path`, its link's words marked."""
        if not links:
            return []
        labels = self._labels_to(target_path)
        return [
            _snippet(link, labels.get((resource_id(link.from_path), link.block_id), [])) for link in links
        ]


def _snippet(link: data.Backlink, found: list[str]) -> Snippet:
    label = next((w for w in found if w in link.text), "")
    return sentence_around(link.text, label)


def items_html(items: list[dict]) -> Markup:
    """The backlinks panel's `<li>`s (each backlink's page, title, folder and sentence, its words marked),
    every value escaped as the template's autoescape would."""
    out = []
    for b in items:
        s: Snippet = b["sentence"]
        folder = f' <small class="muted">{escape(b["folder"])}</small>' if b["folder"] else ""
        mark = f"<mark>{escape(s.mark)}</mark>" if s.mark else ""
        out.append(
            f'<li><a href="{escape(b["url"])}">{escape(b["name"])}</a>{folder}    '
            f"<q>{escape(s.before)}{mark}{escape(s.after)}</q></li>"
        )
    return Markup("".join(out))
