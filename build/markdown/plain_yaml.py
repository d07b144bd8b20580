"""The plain front matter most notes have, read without PyYAML: same values, or None to ask PyYAML.

Most front matter is a flat mapping of plain words (`title: Meeting notes`, `tags: [a, b]`, block
lists), and importing PyYAML costs an edit more than the notes step needs. `plain_mapping` accepts
only a grammar in which YAML 1.1 (`yaml.safe_load`) can read nothing but the strings it returns:
unquoted word keys; plain scalars no implicit resolver turns into another type (no leading digit,
sign or dot, no yes/no/on/off/true/false/null/~, no `<<`, no `=`); flow and block lists of such
scalars. Anything else (quotes, comments, nesting, anchors, tags, multi-line scalars, odd characters,
a duplicate key) returns None and PyYAML reads it, errors and all.
"""

from __future__ import annotations

import re

_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?")
_ITEM = re.compile(r"( *)- +(.*)")
# characters a plain scalar may not start with: YAML indicators, and the first characters of the
# implicit resolvers' patterns (int, float, timestamp, merge, null, value)
_NOT_FIRST = frozenset("-?:,[]{}#&*!|>'\"%@`0123456789+.~<=")
# words the bool and null resolvers match in some spelling: any spelling falls back
_RESOLVED_WORDS = frozenset(("yes", "no", "true", "false", "on", "off", "null"))
# comments and flow indicators (a block scalar may hold `[]{}`; kept out) and, inside a flow list,
# the characters PyYAML ends a flow scalar at
_NOT_IN_BLOCK = frozenset("#[]{}")
_NOT_IN_FLOW = frozenset("#[]{},:?")


def _scalar(text: str, not_in: frozenset[str] = _NOT_IN_BLOCK) -> str | None:
    """`text` (already stripped of surrounding spaces) if it is a plain scalar that loads as itself.
    `str.isprintable` is stricter than PyYAML's reader (it also refuses no-break and other spaces,
    format and private-use characters) and refuses YAML's line breaks (NEL, U+2028/9) and the BOM."""
    if (
        not text
        or text[0] in _NOT_FIRST
        or text.endswith(":")
        or ": " in text
        or text.lower() in _RESOLVED_WORDS
        or not text.isprintable()
        or not not_in.isdisjoint(text)
    ):
        return None
    return text


def _flow_list(text: str) -> list[str] | None:
    inner = text[1:-1].strip(" ")
    if not inner:
        return []
    items = [_scalar(item.strip(" "), _NOT_IN_FLOW) for item in inner.split(",")]
    return None if None in items else items  # type: ignore[return-value]


def plain_mapping(raw: str) -> dict[str, str | list[str] | None] | None:
    """`raw` front matter as `yaml.safe_load` reads it, when it is plain (see above); else None."""
    if "\r" in raw or "\t" in raw:
        return None
    out: dict[str, str | list[str] | None] = {}
    lines = raw.split("\n")
    i, n = 0, len(lines)
    while i < n:
        line = lines[i].rstrip(" ")
        i += 1
        if not line:
            continue
        entry = _ENTRY.fullmatch(line)
        if entry is None:
            return None
        key, value = entry.group(1), entry.group(2)
        if key in out or key.lower() in _RESOLVED_WORDS:
            return None
        if value:
            if value[0] == "[":
                parsed = _flow_list(value) if value[-1] == "]" else None
            else:
                parsed = _scalar(value)
            if parsed is None:
                return None
            out[key] = parsed
            continue
        items: list[str] = []
        indent = None
        while i < n and lines[i].strip(" "):
            item = _ITEM.fullmatch(lines[i].rstrip(" "))
            if item is None or (indent is not None and item.group(1) != indent):
                break
            indent = item.group(1)
            parsed = _scalar(item.group(2))
            if parsed is None:
                return None
            items.append(parsed)
            i += 1
        if i < n and lines[i][:1] == " ":  # an indented line that is no item of this list: nesting
            return None
        out[key] = items if indent is not None else None
    return out
