"""Markdown notes via markdown-it-py tokens (SPEC §3).

One block per heading, paragraph, list-item paragraph (`task` for a task-list item), blockquote and
callout paragraph, callout title, footnote paragraph, display math (`math`, its TeX), table, code
block, raw HTML block and front matter (`properties`); each with its 1-based inclusive line range and
the char range of those lines. Headings form the section tree; footnote blocks come last, in no
section. Links, images, wikilinks, embeds, tags, `@` mentions and aliases are kept on the block they
appear in, so every graph edge has a source block. Inline math stays as `$TeX$`, a footnote reference
as `[n]`; an author's `^id` is the block's `anchor`. The title is the front matter `title`, else the
first heading.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from markdown_it.token import Token

from mnote_evidence.build.core.ids import BlockIdAllocator
from mnote_evidence.build.core.model import (
    KIND_MARKDOWN,
    UNPUBLISHED,
    Block,
    ParsedResourceArtifact,
    ProviderError,
    Warning_,
)
from mnote_evidence.build.core.text import join_lines
from mnote_evidence.build.markdown.comments import blank_comments
from mnote_evidence.build.markdown.encoding import decode_note
from mnote_evidence.build.markdown.limits import (
    MAX_EMBEDS_PER_NOTE,
    MAX_LINK_CHARS,
    MAX_LINKS_PER_NOTE,
    MAX_TAG_CHARS,
    MAX_TAGS_PER_NOTE,
    left_out_count,
)
from mnote_evidence.build.markdown.properties import Properties, read_properties
from mnote_evidence.build.markdown.syntax import keep_parsed, markdown_parser
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.sections import SectionTree

REVISION = "8"  # bumped when the same bytes would parse differently


@dataclass
class BlockToken:
    """A token that opens an evidence block (the renderer uses the same list)."""

    index: int
    type: str
    text: str
    line_range: list[int]
    links: list[dict[str, str]]
    anchor: str | None = None
    note: str | None = None
    properties: Properties | None = None  # front matter, read once (its YAML parse is costly)


def inline_text(token: Token) -> tuple[str, list[dict[str, str]]]:
    """Plain text and links of one inline token. A link's `label` is its words as written (a
    wikilink's shown text, a Markdown link's text and code spans; none when it has no words):
    the backlinks panel marks them in the linking sentence (`render/backlinks.py`)."""
    parts: list[str] = []
    links: list[dict[str, str]] = []
    open_link: dict[str, str] | None = None
    words: list[str] = []
    for child in token.children or []:
        ctype = child.type
        if ctype == "text" or ctype == "code_inline":
            parts.append(child.content)
            if open_link is not None:
                words.append(child.content)
        elif ctype == "tag":
            parts.append(child.content)
            links.append({"target": child.meta["tag"], "kind": "tag"})
        elif ctype == "mention":  # target: the entity's key; label: the name as written
            parts.append(child.content)
            links.append({"target": child.meta["entity"], "kind": "mention", "label": child.meta["name"]})
        elif ctype == "math_inline":
            parts.append(f"${child.content}$")
        elif ctype == "math_inline_double":
            parts.append(f"$${child.content}$$")
        elif ctype == "footnote_ref":
            parts.append(footnote_label(child))
        elif ctype == "softbreak" or ctype == "hardbreak":
            parts.append("\n")
        elif ctype == "image":
            parts.append(child.content)
            links.append({"target": str(child.attrs.get("src", "")), "kind": "image"})
        elif ctype == "link_open":
            open_link, words = {"target": str(child.attrs.get("href", "")), "kind": "link"}, []
            links.append(open_link)
        elif ctype == "link_close" and open_link is not None:
            if "".join(words).strip():
                open_link["label"] = "".join(words)
            open_link = None
        elif ctype == "wikilink":
            parts.append(child.content)
            kind = "embed" if child.meta["embed"] else "wikilink"
            links.append({"target": child.meta["target"], "kind": kind, "label": child.content})
    text = "".join(parts)
    # one line (most paragraphs): what `join_lines` makes of it, without splitting
    return text.strip() if "\n" not in text else join_lines(text.split("\n")), links


def footnote_label(token: Token) -> str:
    """What a footnote reference shows (as mdit-py-plugins renders it): `[n]`."""
    return f"[{token.meta['id'] + 1}]"


# what `block_tokens` does with a token, by type (any other type: nothing)
_OPEN, _CLOSE, _TEXT, _RAW, _FRONT, _TABLE = range(6)
_CONTAINERS = {"list_item_open": "list_item", "blockquote_open": "quote", "footnote_open": "footnote"}
_ACTIONS = {
    **dict.fromkeys(_CONTAINERS, _OPEN),
    **dict.fromkeys(("list_item_close", "blockquote_close", "footnote_close"), _CLOSE),
    **dict.fromkeys(("heading_open", "paragraph_open", "callout_title_open"), _TEXT),
    **dict.fromkeys(("fence", "code_block", "html_block", "math_block"), _RAW),
    "front_matter": _FRONT,
    "table_open": _TABLE,
}
_RAW_KINDS = {"fence": "code", "code_block": "code", "html_block": "html", "math_block": "math"}


def _container(stack: list[Token]) -> str:
    """What holds a paragraph: the innermost container (`stack` holds only containers' openings)."""
    if not stack:
        return "paragraph"
    tok = stack[-1]
    kind = _CONTAINERS[tok.type]
    return "callout" if kind == "quote" and (tok.meta or {}).get("callout") else kind


def _paragraph(tokens: list[Token], i: int, stack: list[Token]) -> BlockToken:
    tok = tokens[i]
    text, links = inline_text(tokens[i + 1])
    kind, note = _container(stack), None
    if tok.type == "heading_open":
        kind = "heading"
    elif tok.type == "callout_title_open":
        kind = "callout_title"
    elif (
        kind == "list_item"
        and tokens[i - 1].type == "list_item_open"
        and "checked" in (tokens[i - 1].meta or {})
    ):
        kind, text = "task", ("[x] " if tokens[i - 1].meta["checked"] else "[ ] ") + text
    elif kind == "footnote":
        note = f"footnote {footnote_label(stack[-1])}"
    anchor = (tok.meta or {}).get("anchor")
    return BlockToken(i, kind, text, [tok.map[0] + 1, tok.map[1]], links, anchor, note)


def block_tokens(
    tokens: list[Token], front_matter: Callable[[str], Properties] = read_properties
) -> list[BlockToken]:
    """The evidence blocks of a token stream, in document order (footnotes last, as shown).
    `front_matter` reads the properties block (the renderer passes what the index holds: the
    YAML is read once, by the provider)."""
    out: list[BlockToken] = []
    stack: list[Token] = []
    i = 0
    actions = _ACTIONS
    while i < len(tokens):
        tok = tokens[i]
        action = actions.get(tok.type)
        if action is None:
            pass
        elif action == _OPEN:
            stack.append(tok)
        elif action == _CLOSE:
            stack.pop()
        elif not tok.map:
            pass
        elif action == _TEXT:
            out.append(_paragraph(tokens, i, stack))
        elif action == _RAW:
            kind = _RAW_KINDS[tok.type]
            text = tok.content.strip() if kind == "math" else tok.content.rstrip("\n")
            out.append(BlockToken(i, kind, text, [tok.map[0] + 1, tok.map[1]], []))
        elif action == _FRONT:
            props = front_matter(tok.content)
            out.append(
                BlockToken(
                    i, "properties", props.text, [tok.map[0] + 1, tok.map[1]], props.links, properties=props
                )
            )
        else:
            i = _table_block(tokens, i, out)
        i += 1
    return [b for b in out if b.text.strip()]


def _table_block(tokens: list[Token], start: int, out: list[BlockToken]) -> int:
    rows: list[list[str]] = []
    links: list[dict[str, str]] = []
    i = start
    while tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "tr_open":
            rows.append([])
        elif tok.type == "inline":
            text, cell_links = inline_text(tok)
            rows[-1].append(text)
            links.extend(cell_links)
        i += 1
    span = tokens[start].map or [0, 0]
    out.append(
        BlockToken(start, "table", "\n".join(" | ".join(r) for r in rows), [span[0] + 1, span[1]], links)
    )
    return i


def _capped(tags: int, embeds: int, links: int) -> list[Warning_]:
    """The warnings of a note's tags, embeds and links past their bounds (`markdown/limits.py`)."""
    out = []
    if tags:
        out.append(
            Warning_(
                "tags_capped",
                f"{tags} tags are kept as text, not linked: a note has at most {MAX_TAGS_PER_NOTE:,} tags "
                f"(in its text, and in its front matter) of at most {MAX_TAG_CHARS} characters",
            )
        )
    if embeds:
        out.append(
            Warning_(
                "embeds_capped",
                f"{embeds} embeds are shown as links: a note shows at most {MAX_EMBEDS_PER_NOTE} embeds",
            )
        )
    if links:
        out.append(
            Warning_(
                "links_capped",
                f"{links:,} links are kept as text: a note has at most {MAX_LINKS_PER_NOTE:,} links "
                f"(links, images, wikilinks and embeds), each target and its words of at most "
                f"{MAX_LINK_CHARS:,} characters",
            )
        )
    return out


def _line_offsets(text: str) -> list[int]:
    """Start offset of every line, split on "\n" exactly as markdown-it counts lines."""
    offsets = [0]
    pos = text.find("\n")
    while pos >= 0:
        offsets.append(pos + 1)
        pos = text.find("\n", pos + 1)
    offsets.append(len(text))
    return offsets


class MarkdownProvider:
    name = "markdown-it-py"
    kind = KIND_MARKDOWN

    def __init__(self, ocr: OcrSettings | None = None):
        pass

    def version(self) -> str:
        import markdown_it

        return f"{markdown_it.__version__}+m{REVISION}"

    def parse(self, item: ParseInput) -> ParsedResourceArtifact:
        try:
            data = item.full_path.read_bytes()
        except OSError as exc:
            raise ProviderError("unreadable", f"cannot read note: {exc.strerror}") from exc
        text, warnings = decode_note(data)
        return self.parse_text(item.path, item.source_hash, text, warnings)

    def parse_text(
        self, path: str, source_hash: str, text: str, warnings: list[Warning_] | None = None
    ) -> ParsedResourceArtifact:
        text = blank_comments(text)
        env: dict = {}
        tokens = markdown_parser().parse(text, env)
        offsets = _line_offsets(text)
        new_block_id = BlockIdAllocator(path)
        tree = SectionTree(path)
        blocks: list[Block] = []
        warnings = list(warnings or [])
        title = None
        anchors: set[str] = set()
        found = block_tokens(tokens)
        if found and found[0].properties is not None and not found[0].properties.published:
            raise ProviderError(UNPUBLISHED, "publish: false or draft: true: left out of the output")
        keep_parsed(text, tokens, [bt.index for bt in found])
        dropped_tags = left_out_count(env, "tags")
        for bt in found:
            if bt.properties is not None:
                props = bt.properties
                title = props.title
                dropped_tags += props.dropped_tags
                if props.warning:
                    warnings.append(props.warning)
            if bt.anchor in anchors:
                warnings.append(
                    Warning_(
                        "duplicate_block_anchor",
                        f"^{bt.anchor} marks more than one block "
                        f"(line {bt.line_range[0]}); links land on the first",
                    )
                )
                bt.anchor = None
            elif bt.anchor:
                anchors.add(bt.anchor)
            if bt.type == "heading":
                tree.open(int(tokens[bt.index].tag[1]), bt.text)
            first, last = bt.line_range
            start, end = offsets[first - 1], offsets[min(last, len(offsets) - 1)]
            while end > start and text[end - 1] in "\r\n":
                end -= 1
            block = Block(
                id=new_block_id(bt.type, bt.text),
                type=bt.type,
                text=bt.text,
                line_range=bt.line_range,
                char_range=[start, end],
                links=bt.links,
                note=bt.note,
                anchor=bt.anchor,
            )
            # footnotes are listed after the last section but belong to none of them (not to the last)
            blocks.append(block if bt.type == "footnote" else tree.add(block))
        warnings += _capped(dropped_tags, left_out_count(env, "embeds"), left_out_count(env, "links"))
        warnings += tree.warnings
        if title is None:
            title = next((b.text for b in blocks if b.type == "heading"), None)
        return ParsedResourceArtifact(
            kind=KIND_MARKDOWN,
            provider=self.name,
            provider_version=self.version(),
            source_path=path,
            source_hash=source_hash,
            text=text,
            blocks=blocks,
            sections=tree.sections,
            warnings=warnings,
            title=title,
        )
