"""A note's front matter as Obsidian reads it: its properties block, title, aliases and tags (SPEC §3).

The YAML between the opening `---` lines becomes one `properties` block whose text is
one `key: value` line per property (lists joined with `, `), exactly what the page
shows; `title` names the note's page, each alias and tag becomes a link of the block
(kinds `alias`, `tag`), so they reach `evidence_link` like every other link. YAML that
does not parse, or is not a mapping, keeps its raw text as the block and gives a
`front_matter_invalid` warning (nothing is lost, nothing is guessed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnote_evidence.build.core.model import Warning_
from mnote_evidence.build.markdown.obsidian import tag_name
from mnote_evidence.build.markdown.plain_yaml import plain_mapping


@dataclass
class Properties:
    text: str
    title: str | None = None
    links: list[dict[str, str]] = field(default_factory=list)
    warning: Warning_ | None = None


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


def read_properties(raw: str) -> Properties:
    data = plain_mapping(raw)  # PyYAML (imported only then) reads what is not plain: `plain_yaml.py`
    if data is None:
        import yaml

        try:
            data = yaml.safe_load(raw) if raw.strip() else {}
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
    out = Properties("\n".join(f"{k}: {_shown(v)}" for k, v in data.items()))
    title = data.get("title")
    out.title = str(title).strip() or None if title is not None else None
    for alias in _items(data.get("aliases", data.get("alias"))):
        out.links.append({"target": alias, "kind": "alias"})
    for tag in _items(data.get("tags", data.get("tag"))):
        name = tag_name(tag.lstrip("#"))
        if name:
            out.links.append({"target": name, "kind": "tag"})
    return out
