"""A note's front matter as Obsidian reads it: its properties block, title, aliases and tags (SPEC §3).

The YAML between the opening `---` lines becomes one `properties` block whose text is
one `key: value` line per property (lists joined with `, `), exactly what the page
shows; `title` names the note's page, each alias and tag becomes a link of the block
(kinds `alias`, `tag`), so they reach `evidence_link` like every other link. YAML that
does not parse, or is not a mapping, keeps its raw text as the block and gives a
`front_matter_invalid` warning (nothing is lost, nothing is guessed). YAML whose values,
aliases expanded, pass `MAX_FRONT_MATTER_CHARS` (or hold themselves), or nest past
`MAX_FRONT_MATTER_DEPTH` (deeper than PyYAML can read, too) is kept as its raw text too
(`front_matter_too_large`), measured before anything is expanded; tags past `MAX_TAGS_PER_NOTE` or
`MAX_TAG_CHARS` are counted in `dropped_tags`, not linked (`markdown/limits.py`). A `[[wikilink]]` or
an `http(s)://` URL in any other value (a string or a list's item, as Obsidian writes `related:
["[[A]]"]`) is a link of the block too (kinds `wikilink`, `link`), at most `MAX_LINKS_PER_NOTE` of
them; `property_links` finds them again in a shown line, for the page.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mnote_evidence.build.core.model import Warning_
from mnote_evidence.build.markdown.limits import (
    MAX_FRONT_MATTER_CHARS,
    MAX_FRONT_MATTER_DEPTH,
    MAX_LINK_CHARS,
    MAX_LINKS_PER_NOTE,
    MAX_TAG_CHARS,
    MAX_TAGS_PER_NOTE,
)
from mnote_evidence.build.markdown.obsidian import tag_name
from mnote_evidence.build.markdown.plain_yaml import plain_mapping
from mnote_evidence.build.markdown.syntax import wikilink_label


@dataclass
class Properties:
    text: str
    title: str | None = None
    links: list[dict[str, str]] = field(default_factory=list)
    warning: Warning_ | None = None
    dropped_tags: int = 0  # tags past the note's bounds: not links
    published: bool = True  # False: `publish: false` or `draft: true` (the note stays out of the output)


# a wikilink (`[[target]]`, `[[target|label]]`) or a URL inside a property's shown value
_PROPERTY_LINK = re.compile(r"\[\[([^\[\]|\n]+)(?:\|([^\[\]\n]*))?\]\]|https?://[^\s<>\"'\[\],]+")


def property_links(line: str) -> Iterator[tuple[int, int, dict[str, str]]]:
    """(start, end, link) of each wikilink and URL in a shown `key: value` line, in order; a link
    is {"target", "kind": `wikilink` | `link`, "label"} (a target past `MAX_LINK_CHARS` is text)."""
    at = line.find(": ")
    for m in _PROPERTY_LINK.finditer(line, at + 2 if at >= 0 else 0):
        if m.group(1) is not None:
            target = m.group(1).strip()
            link = {"target": target, "kind": "wikilink", "label": (m.group(2) or "").strip()}
            link["label"] = link["label"] or wikilink_label(target)
        else:
            target = m.group(0).rstrip(".;:!?)")
            link = {"target": target, "kind": "link", "label": target}
        if target and len(target) <= MAX_LINK_CHARS:
            yield m.start(), m.start() + len(m.group(0) if link["kind"] == "wikilink" else target), link


def _items(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value if v is not None)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_shown(v)}" for k, v in value.items())
    return "" if value is None else str(value)


def _expanded_chars(data: Any, limit: int) -> int | None:
    """About how many characters `data` shows with every alias expanded (None: past `limit`, nested
    past `MAX_FRONT_MATTER_DEPTH`, or it holds itself). Each object is measured once, so a YAML alias
    bomb costs its size, not its expansion."""
    sizes: dict[int, int] = {}
    pending: set[int] = set()

    def size(value: Any) -> int:
        if isinstance(value, (list, tuple, dict)):
            key = id(value)
            if key in sizes:
                return sizes[key]
            if key in pending or len(pending) >= MAX_FRONT_MATTER_DEPTH:
                raise OverflowError  # holds itself (no finite text), or too deep to show
            pending.add(key)
            items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            total = 0
            for item in items:
                total += size(item) + 2
                if total > limit:
                    raise OverflowError
            pending.discard(key)
            sizes[key] = total
            return total
        return len(str(value)) if value is not None else 0

    try:
        total = size(data)
    except OverflowError:
        return None
    return total if total <= limit else None


def _too_large(raw: str) -> Properties:
    return Properties(
        raw,
        warning=Warning_(
            "front_matter_too_large",
            f"front matter expands to more than {MAX_FRONT_MATTER_CHARS:,} characters or nests more than "
            f"{MAX_FRONT_MATTER_DEPTH} deep (YAML aliases, or a value that holds itself); kept as text",
        ),
    )


def read_properties(raw: str) -> Properties:
    data = plain_mapping(raw)  # PyYAML (imported only then) reads what is not plain: `plain_yaml.py`
    if data is None:
        import yaml

        try:
            data = yaml.safe_load(raw) if raw.strip() else {}
        except RecursionError:  # nested deeper than PyYAML's recursive reader can go
            return _too_large(raw)
        except yaml.YAMLError as exc:
            return Properties(
                raw,
                warning=Warning_(
                    "front_matter_invalid",
                    f"front matter is not valid YAML ({str(exc).splitlines()[0]}); kept as text",
                ),
            )
    if not isinstance(data, dict):
        return Properties(
            raw, warning=Warning_("front_matter_invalid", "front matter is not a YAML mapping; kept as text")
        )
    if _expanded_chars(data, MAX_FRONT_MATTER_CHARS) is None:
        return _too_large(raw)
    out = Properties("\n".join(f"{k}: {_shown(v)}" for k, v in data.items()))
    title = data.get("title")
    out.title = str(title).strip() or None if title is not None else None
    # Obsidian Publish's `publish: false`, Quartz's and MkDocs' `draft: true` (a quoted word too, as Quartz)
    out.published = (
        str(data.get("publish", "")).lower() != "false" and str(data.get("draft", "")).lower() != "true"
    )
    for line in out.text.split("\n"):
        if line.split(": ", 1)[0] in ("aliases", "alias", "tags", "tag"):
            continue
        for _, _, link in property_links(line):
            if len(out.links) >= MAX_LINKS_PER_NOTE:
                break
            out.links.append(link)
    for alias in _items(data.get("aliases", data.get("alias"))):
        out.links.append({"target": alias, "kind": "alias"})
    tags = 0
    for tag in _items(data.get("tags", data.get("tag"))):
        name = tag_name(tag.lstrip("#"))
        if name and (len(name) > MAX_TAG_CHARS or tags >= MAX_TAGS_PER_NOTE):
            out.dropped_tags += 1
        elif name:
            tags += 1
            out.links.append({"target": name, "kind": "tag"})
    return out
