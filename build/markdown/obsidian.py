"""Obsidian's additions to the one Markdown dialect (SPEC §3; docs/guides/obsidian.md).

markdown-it-py and mdit-py-plugins supply task lists, footnotes and `$`/`$$` math; this module adds
the rules they lack, as markdown-it rules (never post-processing of HTML):
- `==highlight==` -> `mark_open` / `mark_close` (its closing `==` looked for within `MAX_SPAN`);
- `#tag` (after a space or at a line's start; letters, digits, `_`, `-`, `/`; not all digits) -> a
  `tag` token (never in code spans, after `\\#`, or a heading's own `#` marks); a tag longer than
  `MAX_TAG_CHARS`, or past `MAX_TAGS_PER_NOTE` in the note, stays text (`markdown/limits.py`);
- `@Name` (letters, digits, `_`; `-`, `.` and `'` inside) and `@"Two Words"` (closing quote on the
  same line) -> a `mention` token naming an entity (`ids.entity_key`), under the same conditions and
  bounds as a tag: after a space, a line's start or an opening bracket or quote, so `a@b.c` and a URL's
  `/@name` are text, and never in code;
- callouts `> [!type] Title` (foldable: `-` collapsed, `+` open): `meta["callout"]` on the blockquote,
  the marker line a `callout_title_open` / inline / `callout_title_close` triple;
- ` ^id` at the end of a paragraph or list item: stripped, recorded as `meta["anchor"]`;
- `![alt|400](img.png)`, `![alt|400x300](img.png)`: the size leaves the alt text, recorded as
  `meta["size"]` ([width, height or None]; `![[img.png|400]]` is read with wikilinks, `syntax.py`);
- a footnote defined but never referenced is kept (mdit-py-plugins drops it), without a back-link.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from mnote_evidence.build.core.ids import entity_key
from mnote_evidence.build.markdown.limits import MAX_TAG_CHARS, MAX_TAGS_PER_NOTE, count, left_out, within

MAX_SPAN = 1000
TAG = re.compile(r"#([\w\-/]+)")
MENTION = re.compile(rf"""@(?:"([^"\n]{{1,{MAX_TAG_CHARS}}})"|(\w+(?:[-.']\w+)*))""")
CALLOUT = re.compile(r"\[!([\w-]+)\]([+-]?)[ \t]*(.*)")
BLOCK_REF = re.compile(r"(?:^|[ \t])\^([A-Za-z0-9-]+)[ \t]*$")
# `|400`, `|400x300` ending an alt or alias
SIZE = re.compile(r"(?:^|\|)[ \t]*(\d{1,5})(?:x(\d{1,5}))?[ \t]*$")


def image_size(words: str) -> tuple[str, list[int | None] | None]:
    """(`words` without a trailing size, [width, height or None]) as Obsidian reads `alt|400x300`;
    no size: (`words`, None). Words that are only a size (`400`) leave nothing."""
    match = SIZE.search(words)
    if not match:
        return words, None
    height = match.group(2)
    return words[: match.start()].rstrip(), [int(match.group(1)), int(height) if height else None]


def _highlight_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("==", pos) or pos + 2 >= state.posMax or src[pos + 2] in " \t\n=":
        return False
    end = src.find("==", pos + 2, min(state.posMax, pos + 2 + MAX_SPAN))
    if end < 0 or src[end - 1] in " \t\n":
        return False
    if not silent:
        state.push("mark_open", "mark", 1).markup = "=="
        old_max = state.posMax
        state.pos, state.posMax = pos + 2, end
        state.md.inline.tokenize(state)
        state.posMax = old_max
        state.push("mark_close", "mark", -1).markup = "=="
    state.pos = end + 2
    return True


def tag_name(raw: str) -> str | None:
    """The tag a `#word` names (None: not a tag, e.g. `#123` or `#/`)."""
    name = raw.rstrip("/")
    if not name or name.startswith("/") or name.replace("/", "").isdigit():
        return None
    return name


def _starts_name(src: str, pos: int, mark: str) -> bool:
    """`mark` at `pos` opens a tag or mention: at a line's start, after a space, an opening bracket or
    a quote."""
    return src[pos] == mark and (pos == 0 or src[pos - 1].isspace() or src[pos - 1] in "([{\"'")


def _tag_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not _starts_name(src, pos, "#"):
        return False
    match = TAG.match(src, pos, state.posMax)
    name = tag_name(match.group(1)) if match else None
    if name is None:
        return False
    if silent:  # a look-ahead (a link's label): the answer the real pass gives, counting nothing
        return len(name) <= MAX_TAG_CHARS and within(state.env, "tags", MAX_TAGS_PER_NOTE)
    if len(name) > MAX_TAG_CHARS:
        left_out(state.env, "tags")
        return False
    if not count(state.env, "tags", MAX_TAGS_PER_NOTE):
        return False
    token = state.push("tag", "", 0)
    token.meta = {"tag": name}
    token.content = "#" + name
    state.pos = pos + 1 + len(name)
    return True


def _mention_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not _starts_name(src, pos, "@"):
        return False
    match = MENTION.match(src, pos, state.posMax)
    name = (match.group(1) or match.group(2) or "").strip() if match else ""
    if not entity_key(name):
        return False
    if silent:
        return within(state.env, "tags", MAX_TAGS_PER_NOTE)
    if not count(state.env, "tags", MAX_TAGS_PER_NOTE):
        return False
    token = state.push("mention", "", 0)
    token.meta = {"entity": entity_key(name), "name": name}
    token.content = "@" + name
    state.pos = match.end()
    return True


def _inline(content: str, line_map: list[int], level: int) -> Token:
    token = Token("inline", "", 0)
    token.content, token.map, token.level, token.children = content, line_map, level, []
    return token


def _callouts(state: StateCore) -> None:
    tokens = state.tokens
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if (
            tok.type == "blockquote_open"
            and i + 2 < len(tokens)
            and tokens[i + 1].type == "paragraph_open"
            and tokens[i + 1].map
        ):
            first, _, rest = tokens[i + 2].content.partition("\n")
            match = CALLOUT.fullmatch(first.strip())
            if match:
                kind, fold, title = match.group(1).lower(), match.group(2), match.group(3).strip()
                tok.meta = {**(tok.meta or {}), "callout": kind, "fold": fold}
                para, inline, line = tokens[i + 1], tokens[i + 2], tokens[i + 1].map[0]
                title_tokens = [
                    Token("callout_title_open", "p", 1),
                    _inline(title or kind.capitalize(), [line, line + 1], para.level + 1),
                    Token("callout_title_close", "p", -1),
                ]
                title_tokens[0].map, title_tokens[0].level = [line, line + 1], para.level
                title_tokens[2].level = para.level
                if rest.strip():
                    para.map = [line + 1, para.map[1]]
                    inline.content, inline.map = rest, para.map
                    tokens[i + 1 : i + 1] = title_tokens
                else:  # the marker line is the whole paragraph: it becomes the title
                    tokens[i + 1 : i + 4] = title_tokens
        i += 1


def _strip_block_ref(children: list[Token]) -> str | None:
    """Remove a trailing ` ^id` from an inline token's children; return the id."""
    if not children or children[-1].type != "text":
        return None
    last = children[-1]
    match = BLOCK_REF.search(last.content)
    if not match:
        return None
    head = last.content[: match.start()]
    before = children[:-1]
    if not head.strip():
        if before and before[-1].type in ("softbreak", "hardbreak"):
            before = before[:-1]
        if not before:
            return None  # a paragraph that is only `^id` stays text
        children[:] = before
    else:
        last.content = head.rstrip()
    return match.group(1)


def _block_refs(state: StateCore) -> None:
    tokens = state.tokens
    for i, tok in enumerate(tokens):
        if tok.type == "inline" and i > 0 and tokens[i - 1].type == "paragraph_open":
            anchor = _strip_block_ref(tok.children or [])
            if anchor:
                tokens[i - 1].meta = {**(tokens[i - 1].meta or {}), "anchor": anchor}


def _image_sizes(state: StateCore) -> None:
    for tok in state.tokens:
        for child in tok.children or [] if tok.type == "inline" else []:
            if child.type != "image" or "|" not in child.content:
                continue
            words, size = image_size(child.content)
            last = (child.children or [None])[-1]
            if size is None or last is None or last.type != "text" or "|" not in last.content:
                continue
            last.content = last.content[: last.content.rindex("|")].rstrip()
            child.content, child.meta = words, {**(child.meta or {}), "size": size}


def _orphan_footnotes(state: StateCore) -> None:
    data = state.env.get("footnotes") or {}
    for key, ref in sorted(data.get("refs", {}).items()):
        if ref < 0:
            footnotes = data.setdefault("list", {})
            data["refs"][key] = len(footnotes)
            footnotes[len(footnotes)] = {"label": key[1:], "count": 0}


def _orphan_backrefs(state: StateCore) -> None:
    data = state.env.get("footnotes") or {}
    orphans = {i for i, f in data.get("list", {}).items() if f.get("count") == 0}
    if orphans:
        state.tokens = [
            t for t in state.tokens if not (t.type == "footnote_anchor" and t.meta["id"] in orphans)
        ]


def obsidian_plugin(md: MarkdownIt) -> None:
    """Use after `footnote_plugin` (its unreferenced definitions are kept here)."""
    md.inline.ruler.before("emphasis", "mark", _highlight_rule)
    md.inline.ruler.push("tag", _tag_rule)
    md.inline.ruler.push("mention", _mention_rule)
    md.core.ruler.after("block", "callouts", _callouts)
    md.core.ruler.after("inline", "block_refs", _block_refs)
    md.core.ruler.after("inline", "image_sizes", _image_sizes)
    md.core.ruler.before("footnote_tail", "footnote_orphans", _orphan_footnotes)
    md.core.ruler.after("footnote_tail", "footnote_orphan_backrefs", _orphan_backrefs)
