"""The one Markdown dialect: parser configuration shared by the provider and the renderer.

CommonMark + tables + front matter + wikilinks (`[[Note]]`, `[[Note|alias]]`, `[[Note#Heading]]`,
`[[Note#^id]]`, `![[image.png]]`) + Obsidian's additions: task lists, footnotes and `$`/`$$` math
(mdit-py-plugins), highlights, tags, callouts and block references (`markdown/obsidian.py`). Raw HTML
is parsed (its text is indexed) but the renderer neutralises it. A wikilink without an alias shows
`Note › Heading` for `[[Note#Heading]]`; an embed's alias ending in a size (`![[img.png|400]]`,
`|400x300`, `|caption|400`) is its `meta["size"]`, the rest its alias. Linear time on hostile input:
a wikilink's closing `]]` is looked for within `MAX_WIKILINK` characters on the same line only; past
`MAX_EMBEDS_PER_NOTE` embeds in a note, `![[…]]` is a plain wikilink; past `MAX_LINKS_PER_NOTE`
links (links, images, wikilinks and embeds together), or with a target or words longer than
`MAX_LINK_CHARS`, a link is its words as text (`markdown/limits.py`), so a reference link used many
times costs what its uses are written with.
Nothing is dropped: blocks nested past markdown-it's limit are kept as text.
"""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock, paragraph
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from mnote_evidence.build.markdown.limits import (
    MAX_EMBEDS_PER_NOTE,
    MAX_LINK_CHARS,
    MAX_LINKS_PER_NOTE,
    count,
    left_out,
)
from mnote_evidence.build.markdown.obsidian import image_size, obsidian_plugin

MAX_WIKILINK = 1000  # characters between `[[` and `]]`; longer is text, not a link


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    embed = src.startswith("![[", pos)
    start = pos + (3 if embed else 2)
    if not (embed or src.startswith("[[", pos)):
        return False
    limit = min(len(src), start + MAX_WIKILINK + 2)
    newline = src.find("\n", start, limit)
    end = src.find("]]", start, newline if newline >= 0 else limit)
    if end <= start:
        return False
    if not silent:
        raw = src[start:end]
        target, _, alias = raw.partition("|")
        size = None
        if embed and alias:
            alias, size = image_size(alias)
        token = state.push("wikilink", "", 0)
        embed = embed and count(state.env, "embeds", MAX_EMBEDS_PER_NOTE)
        token.meta = {"target": target.strip(), "alias": alias.strip(), "embed": embed, "size": size}
        token.content = alias.strip() or wikilink_label(target)
    state.pos = end + 2
    return True


def wikilink_label(target: str) -> str:
    """What `[[target]]` shows: `Note`, `Note › Heading`, `Heading` for `[[#Heading]]`."""
    name, _, fragment = target.strip().partition("#")
    parts = [p.strip() for p in [name, *fragment.split("#")] if p.strip()]
    return " › ".join(f"page {p[5:]}" if p.startswith("page=") else p for p in parts)


def wikilink_plugin(md: MarkdownIt) -> None:
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)


def _words_of(children: list[Token], start: int) -> int:
    """Characters of the words of the link whose `link_open` is `children[start]`."""
    chars, i = 0, start + 1
    while i < len(children) and children[i].type != "link_close":
        chars += len(children[i].content)
        i += 1
    return chars


def _as_text(token: Token) -> Token:
    """An image's or wikilink's words as written (its `content`), as plain text."""
    text = Token("text", "", 0)
    text.content, text.level = token.content, token.level
    return text


def _bounded_links(state: StateCore) -> None:
    """Each link, image and wikilink of the note, in order, counted against `MAX_LINKS_PER_NOTE`;
    one past it, or whose target or words pass `MAX_LINK_CHARS`, becomes its words as text (a link's
    words go on through this loop: an image inside is counted too)."""
    env = state.env
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children, out, drop_close = block.children, [], False
        for i, tok in enumerate(children):
            if tok.type == "link_open":
                drop_close = not _link_kept(env, str(tok.attrs.get("href", "")), _words_of(children, i))
                if not drop_close:
                    out.append(tok)
            elif tok.type == "link_close":
                if not drop_close:
                    out.append(tok)
                drop_close = False
            elif tok.type in ("image", "wikilink"):
                target = tok.attrs.get("src", "") if tok.type == "image" else tok.meta["target"]
                out.append(tok if _link_kept(env, str(target), len(tok.content)) else _as_text(tok))
            else:
                out.append(tok)
        block.children = out


def _link_kept(env: dict, target: str, words: int) -> bool:
    """True for a link kept as a link: its target and words short enough, and one more within the bound."""
    if len(target) > MAX_LINK_CHARS or words > MAX_LINK_CHARS:
        left_out(env, "links")
        return False
    return count(env, "links", MAX_LINKS_PER_NOTE)


def bounded_links_plugin(md: MarkdownIt) -> None:
    md.core.ruler.after("inline", "bounded_links", _bounded_links)


def keep_deep_text_plugin(md: MarkdownIt) -> None:
    """Past `maxNesting` (quotes/lists 20 deep) markdown-it skips the rest of the block, text and
    all; here those lines become plain paragraphs instead (markers kept), so no text is lost."""
    inner = md.block.tokenize

    def tokenize(state: StateBlock, start: int, end: int) -> None:
        if state.level < md.options.maxNesting:
            return inner(state, start, end)
        line = start
        while line < end:
            line = state.skipEmptyLines(line)
            if line >= end or state.sCount[line] < state.blkIndent:
                break
            if not paragraph(state, line, end, False):
                break
            line = state.line
        state.line = max(state.line, line)

    md.block.tokenize = tokenize


KEEP_PARSED = 32
_kept: dict[str, tuple[list[Token], list[int]]] = {}


def keep_parsed(text: str, tokens: list[Token], block_starts: list[int]) -> None:
    """Hold a note's tokens, and where each of its evidence blocks starts (the token index of each
    `block_tokens` entry), for the next `parse_note` of the same text. A build parses a changed note
    for the index (the provider) and, in the same process, again for its page (the renderer): the
    provider keeps what it made, so the note is parsed, and its blocks found, once."""
    while len(_kept) >= KEEP_PARSED:
        del _kept[next(iter(_kept))]
    _kept[text] = (tokens, block_starts)


def parse_note(text: str) -> tuple[list[Token], list[int] | None]:
    """A note's tokens, and where its evidence blocks start if the provider found them already: what
    `keep_parsed` holds for this text (handed out once: the renderer annotates the tokens), else a
    new parse (None: the caller finds its blocks)."""
    kept = _kept.pop(text, None)
    if kept is not None:
        return kept
    return markdown_parser().parse(text), None


@lru_cache(maxsize=1)
def markdown_parser() -> MarkdownIt:
    # `$` math as Obsidian reads it: no space inside the dollars, no digit after the closing one
    return (
        MarkdownIt("commonmark", {"tasklists": True})
        .enable("table")
        .use(front_matter_plugin)
        .use(footnote_plugin)
        .use(dollarmath_plugin, allow_space=False, allow_digits=False, double_inline=True)
        .use(wikilink_plugin)
        .use(bounded_links_plugin)
        .use(obsidian_plugin)
        .use(keep_deep_text_plugin)
    )
