"""Markdown note -> HTML with an `id=<blockId>` on every evidence block.

The token stream is the provider's (`markdown_syntax`), so the n-th evidence block of `block_tokens()`
is the n-th block of the artifact: ids come from the index. Rendering rules are replaced, not post-
processed: raw HTML is escaped and shown as text (no markup from a note reaches the page); links pass
markdown-it's `validateLink` and point at generated pages, an unresolved internal one is a `broken-link`
text; alias and `^id` anchors precede their block; Obsidian's constructs (callouts, tasks, footnotes,
`<mark>`, math as MathML, front matter) render here, wikilinks, embeds and tags in `note_links.py`; an
embedded note's blocks render here too (`embedded_html`). Two steps: `compile_note` needs only the text
and blocks, so it can run where the note was parsed (`note_programs.py`); `run_program` does what
depends on the rest of the site.
Invariant: `run_program(compile_note(...))[0]` is the HTML one pass over the tokens gives, byte for byte.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from markdown_it.renderer import RendererHTML
from markdown_it.token import Token

from mnote_evidence.build.core.formats import kind_for
from mnote_evidence.build.core.ids import resource_id
from mnote_evidence.build.core.model import Block, Kind
from mnote_evidence.build.core.urls import relative_url
from mnote_evidence.build.index.link_targets import TargetBlock, split_target
from mnote_evidence.build.markdown.comments import blank_comments
from mnote_evidence.build.markdown.encoding import decode_note
from mnote_evidence.build.markdown.properties import Properties, property_links
from mnote_evidence.build.markdown.syntax import markdown_parser, parse_note
from mnote_evidence.build.parse.providers.markdown import block_tokens
from mnote_evidence.build.render.math_html import mathml
from mnote_evidence.build.render.note_links import NoteLinks, img_html, mention_html, tag_html, wikilink_html

_MARK = "\x00"  # where an operation goes: markdown-it turns every NUL of a note into U+FFFD, so never text
Program = tuple[list[str], list[list[Any]]]
_PLAIN = RendererHTML()


class BlockMismatch(RuntimeError):
    """The note's tokens do not match its indexed blocks (it changed since the index was written)."""


def _attach_ids(tokens: list[Token], blocks: list[Block], starts: list[int] | None) -> None:
    """`starts`: where each block starts in `tokens`, if the provider found them (else found here)."""
    if starts is None:
        shown = next((b.text for b in blocks if b.type == "properties"), "")
        starts = [bt.index for bt in block_tokens(tokens, lambda raw: Properties(shown))]
    if len(starts) != len(blocks):
        raise BlockMismatch(f"{len(starts)} blocks in the note, {len(blocks)} in the index")
    for start, block in zip(starts, blocks):
        block_id = block.id
        tok = tokens[start]
        if (
            tok.hidden and tok.type == "paragraph_open"
        ):  # a tight list item's paragraph renders no tag: the <li>
            i = start
            while tokens[i].type != "list_item_open":
                i -= 1
            tok = tokens[i]
        tok.attrSet("id", block_id)
        tok.attrJoin("class", "block")
        tok.meta = {**(tok.meta or {}), "block": block_id, "anchor": block.anchor}
        if block.type == "properties":  # its `key: value` lines, as indexed: the YAML is not read again
            tok.meta["properties"] = block.text


def _alias_html(token: Token, env: dict) -> str:
    """Old ids of this block, then the author's `^id`: empty spans just before it (CSS `:target + .block`).
    A block's old ids are known only to the render: a mark here, the spans when the program runs."""
    meta = token.meta or {}
    if env.get("embedded"):  # the source's anchors stay on its page: a link to each block instead
        return _op(env, "source", meta["block"]) if "block" in meta else ""
    if "block" in meta:
        return _op(env, "alias", meta["block"], meta["anchor"])
    return _spans([], meta.get("anchor"))


def _spans(aliases: list[str], anchor: str | None) -> str:
    out = "".join(f'<span class="alias" id="{html.escape(a)}"></span>' for a in aliases)
    if anchor:
        out += f'<span class="alias author-anchor" id="^{html.escape(anchor)}"></span>'
    return out


def _op(env: dict, *op: Any) -> str:
    """What depends on the rest of the site (links, old ids): recorded, `_MARK` in the static HTML."""
    env["ops"].append(list(op))
    return _MARK


def compile_note(text: str, blocks: list[Block]) -> Program:
    """The note's HTML with the parts that depend on the rest of the site (links, wikilinks, embeds, tags,
    old ids) left as operations: (static parts, operations), one more part than operations."""
    md = markdown_parser()
    tokens, starts = parse_note(text)
    _attach_ids(tokens, blocks, starts)
    env: dict[str, Any] = {"ops": []}
    parts = _Renderer(md).render(tokens, md.options, env).split(_MARK)
    if len(parts) != len(env["ops"]) + 1:  # a NUL from elsewhere than the note's text: a bug here, said so
        raise RuntimeError(f"{len(parts) - 1} marks for {len(env['ops'])} operations in the compiled note")
    return parts, env["ops"]


def run_program(
    program: Program, note_path: str, aliases: dict[str, list[str]], links: NoteLinks, page: str
) -> tuple[str, int]:
    """A compiled note's HTML for `page`: each operation done in order (links open and close in order);
    and how many of its embeds the page's embed budget left as links (`note_links.py`)."""
    env = {"note": note_path, "resolver": links.resolver, "links": links, "page": page, "link_stack": []}
    env["embedded_html"] = embedded_html
    return _run(program, env, aliases), env.get("embeds_capped", 0)


def _run(program: Program, env: dict, aliases: dict[str, list[str]]) -> str:
    parts, ops = program
    out = [parts[0]]
    for op, part in zip(ops, parts[1:]):
        # most operations are a block's old ids and `^id` (one per block), and most blocks have neither
        if op[0] != "alias" or op[2] or op[1] in aliases:
            out.append(_RUN[op[0]](env, aliases, *op[1:]))
        out.append(part)
    return "".join(out)


def note_text(root: Path, path: str) -> str | None:
    """A note's text as the provider reads it (its comments blanked); None: unreadable."""
    try:
        return blank_comments(decode_note((root / path).read_bytes())[0])
    except OSError:
        return None


def embedded_html(env: dict, path: str, shown: list[TargetBlock]) -> str | None:
    """The blocks `shown` of the note at `path` (`LinkTargets.embed`: contiguous, the last maybe cut)
    drawn as on its own page, for the page of `env`: the same rules, without the source's ids (each
    block links its anchor on the source's page instead), its links resolved from the source note, a
    note it embeds a link. None: the note is unreadable or no longer matches its indexed blocks."""
    links: NoteLinks = env["links"]
    text = links.read_note(path)
    if text is None or links.targets is None or not shown:
        return None
    rows = links.targets.conn.execute(
        "SELECT block_id, kind, text, anchor FROM evidence_block WHERE resource_id = ? ORDER BY ordinal",
        [resource_id(path)],
    ).fetchall()
    blocks = [Block(id=r[0], type=r[1], text=r[2], anchor=r[3]) for r in rows]
    tokens = markdown_parser().parse(text)
    try:
        _attach_ids(tokens, blocks, None)
    except BlockMismatch:
        return None
    order = {b.id: i for i, b in enumerate(blocks)}
    starts = [i for i, t in enumerate(tokens) if "block" in (t.meta or {}) and t.meta["block"] in order]
    starts.sort(key=lambda i: order[tokens[i].meta["block"]])
    first, last = order.get(shown[0].block_id), order.get(shown[-1].block_id)
    if first is None or last is None:
        return None
    cut = shown[-1].text != blocks[last].text  # past MAX_EMBED_CHARS: its cut text, as indexed
    end = starts[last + 1] if last + 1 < len(starts) else len(tokens)
    if cut:
        end = starts[last]
    md = markdown_parser()
    sub = {"ops": [], "embedded": True}
    body = (
        _Renderer(md).render(_balanced(tokens, starts[first], end), md.options, sub)
        if end > starts[first]
        else ""
    )
    if cut:
        source = _op(sub, "source", shown[-1].block_id)
        body += f'<p class="embed-block">{html.escape(shown[-1].text)}{source}</p>\n'
    run_env = {
        "note": path,
        "resolver": links.resolver,
        "links": links,
        "page": env["page"],
        "link_stack": [],
        "source_page": links.page_of(path),  # also: a note embedded here is a link (no embed in an embed)
    }
    return _run((body.split(_MARK), sub["ops"]), run_env, {})


def _balanced(tokens: list[Token], start: int, end: int) -> list[Token]:
    """`tokens[start:end]` as a whole: from the list item a block opens (inside its list), without the
    containers the next block opens or closes of containers opened before, the rest closed."""
    if tokens[start].type == "paragraph_open" and start and tokens[start - 1].type == "list_item_open":
        start -= 1
    while end > start and tokens[end - 1].nesting == 1:  # what the next block opens
        end -= 1
    stack: list[Token] = []
    item = tokens[start]
    if item.type == "list_item_open":  # an item alone: inside its own kind of list
        parent = next(
            (t for t in reversed(tokens[:start]) if t.nesting == 1 and t.level == item.level - 1), None
        )
        if parent is not None:
            opened = Token(parent.type, parent.tag, 1)
            if parent.type == "ordered_list_open" and item.info.isdigit():
                opened.attrSet("start", item.info)
            opened.level = parent.level
            stack.append(opened)
    out = list(stack)
    for tok in tokens[start:end]:
        if tok.nesting == -1:
            if stack:
                stack.pop()
                out.append(tok)
            continue  # it closes what opened before the embedded blocks
        if tok.nesting == 1:
            stack.append(tok)
        out.append(tok)
    for tok in reversed(stack):
        closed = Token(tok.type[: -len("_open")] + "_close", tok.tag, -1)
        closed.hidden, closed.level = tok.hidden, tok.level
        out.append(closed)
    return out


def _run_link_open(env: dict, aliases: dict, target: str, attrs: dict) -> str:
    href, internal = _link_target(env, target, "link")
    env["link_stack"].append(href is not None)
    if href is None:
        return '<span class="broken-link" title="not found in this workspace">'
    tok = Token("link_open", "a", 1, attrs=dict(attrs))
    tok.attrSet("href", href)
    if not internal:
        tok.attrSet("rel", "noopener noreferrer")
    return _PLAIN.renderToken([tok], 0, markdown_parser().options, env)


def _run_image(env: dict, aliases: dict, target: str, alt: str, size: list[int | None] | None) -> str:
    src, _ = _link_target(env, target, "image")
    if src is None:
        return f'<span class="broken-link">[{alt}]</span>'
    return _linked_image(env, target, "image", img_html(src, alt, size))


_RUN: dict[str, Callable[..., str]] = {
    "alias": lambda env, aliases, block_id, anchor: _spans(aliases.get(block_id, []), anchor),
    "source": lambda env, aliases, block_id: (
        '<a class="embed-source" title="open this block" '
        f'href="{html.escape(relative_url(env["page"], env["source_page"], block_id))}">↗</a>'
    ),
    "link_open": _run_link_open,
    "link_close": lambda env, aliases: "</a>" if env["link_stack"].pop() else "</span>",
    "image": _run_image,
    "wikilink": lambda env, aliases, *link: wikilink_html(env, *link),
    "tag": lambda env, aliases, tag, shown: tag_html(env, tag, shown),
    "mention": lambda env, aliases, entity, shown: mention_html(env, entity, shown),
    "text": lambda env, aliases, text: text,
}


def _link_target(env: dict, target: str, kind: str) -> tuple[str | None, bool]:
    """(href, internal). External URLs pass through; internal ones point into the site."""
    hit = env["resolver"].resolve(env["note"], target, kind)
    if hit.path is None:
        internal = hit.problem is not None
        return (None, True) if internal else (target, False)
    if kind in ("image", "embed") and not hit.path.endswith(".md"):
        return relative_url(env["page"], env["links"].copy_of(hit.path)), True
    return relative_url(env["page"], env["links"].page_of(hit.path)), True


def _linked_image(env: dict, target: str, kind: str, img: str) -> str:
    """An image of the workspace links to its own page: the picture with its recognised (OCR) text."""
    hit = env["resolver"].resolve(env["note"], target, kind)
    if hit.path is None or env["link_stack"]:  # not ours, or already inside a link (no nested <a>)
        return img
    href = relative_url(env["page"], env["links"].page_of(hit.path))
    return (
        f'<a class="image-link" href="{html.escape(href)}" '
        f'title="Open the image with its recognised text">{img}</a>'
    )


def _property_html(line: str, env: dict) -> str:
    """One `key: value` line of the properties block: its wikilinks and URLs linked (as in the text),
    the rest escaped; a line with a YAML "\\0" is kept as it is, out of the static parts."""
    if _MARK in line:
        return _op(env, "text", html.escape(line))
    out, at = [], 0
    for start, end, link in property_links(line):
        out.append(html.escape(line[at:start]))
        if link["kind"] == "wikilink":
            out.append(_op(env, "wikilink", link["target"], link["label"], False, None))
        else:
            out += [
                _op(env, "link_open", link["target"], {"class": "external", "href": link["target"]}),
                html.escape(link["label"]),
                _op(env, "link_close"),
            ]
        at = end
    return "".join(out) + html.escape(line[at:])


def _embeds_note(tok: Token) -> bool:
    """An embed that may be a note (a Markdown file, or a name without a known suffix)."""
    if tok.type != "wikilink" or not tok.meta.get("embed"):
        return False
    return kind_for(split_target(tok.meta["target"])[0]) in (Kind.MARKDOWN, Kind.OTHER)


class _Renderer:
    """Wraps markdown-it's renderer with our rules (a fresh one per call: no shared state)."""

    def __init__(self, md):
        self.base = md.renderer.__class__()
        self.base.rules.update(md.renderer.rules)
        for name in ("paragraph_open", "heading_open", "table_open", "list_item_open"):
            self._wrap_alias(name)
        rules = self.base.rules
        rules["blockquote_open"] = self._with_alias(self._quote_open)
        rules["blockquote_close"] = self._quote_close
        rules["callout_title_open"] = self._with_alias(self._title_open)
        rules["callout_title_close"] = lambda tokens, idx, options, env: f"</{env['title_tag']}>\n"
        rules["math_inline"] = lambda tokens, idx, options, env: mathml(tokens[idx].content)
        rules["math_inline_double"] = lambda tokens, idx, options, env: mathml(tokens[idx].content, True)
        rules["math_block"] = self._math_block
        rules["front_matter"] = self._properties
        rules["tag"] = lambda tokens, idx, options, env: _op(
            env, "tag", tokens[idx].meta["tag"], tokens[idx].content
        )
        rules["mention"] = lambda tokens, idx, options, env: _op(
            env, "mention", tokens[idx].meta["entity"], tokens[idx].content
        )
        rules["fence"] = self._with_alias(rules["fence"])
        rules["code_block"] = self._with_alias(rules["code_block"])
        rules["html_block"] = self._html_block
        rules["html_inline"] = lambda tokens, idx, options, env: html.escape(tokens[idx].content)
        rules["link_open"] = self._link_open
        rules["link_close"] = self._link_close
        rules["image"] = self._image
        rules["wikilink"] = self._wikilink
        for name in ("paragraph_open", "paragraph_close"):
            rules[name] = self._host(rules.get(name) or self.base.renderToken)
        for name in ("footnote_ref", "footnote_open", "footnote_anchor"):
            rules[name] = self._footnote(name, rules[name])

    def render(self, tokens, options, env) -> str:
        env["quote_stack"] = []
        if env.get("embedded"):  # the blocks of another note: its ids stay on its page
            for tok in tokens:
                if tok.attrs.pop("id", None) is not None:
                    tok.attrSet("class", str(tok.attrGet("class")).replace("block", "embed-block"))
        return self.base.render(tokens, options, env)

    @staticmethod
    def _host(rule: Callable) -> Callable:
        """A paragraph holding a note embed is a `<div>`: the embedded blocks are blocks (no `<p>`
        holds them)."""

        def render(tokens, idx, options, env) -> str:
            tok = tokens[idx]
            inline = tokens[idx + 1] if tok.nesting == 1 else tokens[idx - 1]
            if not tok.hidden and inline.type == "inline" and any(map(_embeds_note, inline.children or [])):
                tok.tag = "div"
            return rule(tokens, idx, options, env)

        return render

    @staticmethod
    def _footnote(name: str, rule: Callable) -> Callable:
        """In an embedded note, its footnotes as text: their ids and back-links are its own page's."""

        def render(tokens, idx, options, env) -> str:
            if not env.get("embedded"):
                return rule(tokens, idx, options, env)
            if name == "footnote_anchor":
                return ""
            if name == "footnote_open":
                return '<li class="footnote-item">'
            return f'<sup class="footnote-ref">[{tokens[idx].meta["id"] + 1}]</sup>'

        return render

    def _wrap_alias(self, name: str) -> None:
        inner = self.base.rules.get(name) or (
            lambda tokens, idx, options, env: self.base.renderToken(tokens, idx, options, env)
        )
        if name != "list_item_open":
            self.base.rules[name] = self._with_alias(inner)
            return

        def inside(tokens, idx, options, env) -> str:  # <ul> holds only <li>: anchors go inside it
            out = inner(tokens, idx, options, env)
            cut = out.index(">") + 1
            return out[:cut] + _alias_html(tokens[idx], env) + out[cut:]

        self.base.rules[name] = inside

    def _quote_open(self, tokens, idx, options, env) -> str:
        meta = tokens[idx].meta or {}
        kind = meta.get("callout")
        if not kind:
            env["quote_stack"].append(("blockquote", ""))
            return self.base.renderToken(tokens, idx, options, env)
        tag = "details" if meta["fold"] else "div"
        env["quote_stack"].append((tag, kind))
        opened = " open" if meta["fold"] == "+" else ""
        kind = html.escape(kind)
        return f'<{tag} class="callout callout-{kind}" data-callout="{kind}"{opened}>\n'

    @staticmethod
    def _quote_close(tokens, idx, options, env) -> str:
        return f"</{env['quote_stack'].pop()[0]}>\n"

    def _title_open(self, tokens, idx, options, env) -> str:
        tok = tokens[idx]
        env["title_tag"] = "summary" if env["quote_stack"] and env["quote_stack"][-1][0] == "details" else "p"
        tok.tag = env["title_tag"]
        tok.attrJoin("class", "callout-title")
        return self.base.renderToken(tokens, idx, options, env)

    @staticmethod
    def _math_block(tokens, idx, options, env) -> str:
        tok = tokens[idx]
        ident = f' id="{html.escape(tok.attrGet("id"))}"' if tok.attrGet("id") else ""
        return (
            f'{_alias_html(tok, env)}<div class="math block"{ident}>'
            f"{mathml(tok.content.strip(), True)}</div>\n"
        )

    @staticmethod
    def _properties(tokens, idx, options, env) -> str:
        tok = tokens[idx]
        if not tok.attrGet("id"):
            return ""
        alias = _alias_html(tok, env)  # its operation first: operations run in the order of their marks
        rows = "".join(f"<li>{_property_html(line, env)}</li>" for line in tok.meta["properties"].split("\n"))
        return f'{alias}<ul class="properties block" id="{html.escape(tok.attrGet("id"))}">{rows}</ul>\n'

    @staticmethod
    def _with_alias(rule: Callable) -> Callable:
        return lambda tokens, idx, options, env: (
            _alias_html(tokens[idx], env) + rule(tokens, idx, options, env)
        )

    @staticmethod
    def _html_block(tokens, idx, options, env) -> str:
        tok = tokens[idx]
        ident = f' id="{html.escape(tok.attrGet("id"))}"' if tok.attrGet("id") else ""
        return f'{_alias_html(tok, env)}<pre class="raw-html block"{ident}>{html.escape(tok.content)}</pre>\n'

    @staticmethod
    def _link_open(tokens, idx, options, env) -> str:
        tok = tokens[idx]
        return _op(env, "link_open", str(tok.attrGet("href") or ""), dict(tok.attrs))

    @staticmethod
    def _link_close(tokens, idx, options, env) -> str:
        return _op(env, "link_close")

    def _image(self, tokens, idx, options, env) -> str:
        tok = tokens[idx]
        alt = html.escape(self.base.renderInlineAsText(tok.children or [], options, env))
        return _op(env, "image", str(tok.attrGet("src") or ""), alt, (tok.meta or {}).get("size"))

    @staticmethod
    def _wikilink(tokens, idx, options, env) -> str:
        tok = tokens[idx]
        return _op(env, "wikilink", tok.meta["target"], tok.content, tok.meta["embed"], tok.meta.get("size"))
