"""Markdown note -> HTML with an `id=<blockId>` on every evidence block.

The token stream is the provider's (same parser, `build.markdown_syntax`), so
the n-th evidence block of `block_tokens()` is the n-th block of the artifact:
ids come from the index, never recomputed here. Rendering rules are replaced,
not post-processed:
- raw HTML (blocks and inline) is escaped and shown as text: no script, no
  event handler, no markup from a note ever reaches the page;
- links go through markdown-it's `validateLink` (no `javascript:`, `vbscript:`,
  `data:` except images) and are then rewritten: a link to a note or resource
  inside the workspace points at its generated page, an unresolved internal
  link is rendered as text with a `broken-link` class;
- an alias anchor (an id from an earlier build) is rendered just before its
  successor block.
"""

from __future__ import annotations

import html
from typing import Callable

from markdown_it.token import Token

from mnote_evidence.build.formats import kind_for
from mnote_evidence.build.links import LinkResolver
from mnote_evidence.build.markdown_syntax import markdown_parser
from mnote_evidence.build.model import Kind
from mnote_evidence.build.providers.markdown import block_tokens
from mnote_evidence.build.urls import copy_path, page_path, relative_url


class BlockMismatch(RuntimeError):
    """The note's tokens no longer match its indexed blocks (it changed since the index was written)."""


def _attach_ids(tokens: list[Token], block_ids: list[str], aliases: dict[str, list[str]]) -> None:
    found = block_tokens(tokens)
    if len(found) != len(block_ids):
        raise BlockMismatch(f"{len(found)} blocks in the note, {len(block_ids)} in the index")
    for bt, block_id in zip(found, block_ids):
        tok = tokens[bt.index]
        if tok.hidden:  # a tight list item's paragraph renders no tag: put the id on the <li>
            i = bt.index
            while tokens[i].type != "list_item_open":
                i -= 1
            tok = tokens[i]
        tok.attrSet("id", block_id)
        tok.attrJoin("class", "block")
        tok.meta = {**(tok.meta or {}), "aliases": aliases.get(block_id, [])}


def _alias_html(token: Token) -> str:
    meta = token.meta or {}
    return "".join(f'<span class="alias" id="{html.escape(a)}"></span>' for a in meta.get("aliases", []))


def render_note(text: str, note_path: str, block_ids: list[str], aliases: dict[str, list[str]],
                resolver: LinkResolver) -> str:
    md = markdown_parser()
    tokens = md.parse(text)
    _attach_ids(tokens, block_ids, aliases)
    env = {"note": note_path, "resolver": resolver, "page": page_path(note_path)}
    return _Renderer(md).render(tokens, md.options, env)


def _link_target(env: dict, target: str, kind: str) -> tuple[str | None, bool]:
    """(href, internal). External URLs pass through; internal ones point into the site."""
    hit = env["resolver"].resolve(env["note"], target, kind)
    if hit.path is None:
        internal = hit.problem is not None
        return (None, True) if internal else (target, False)
    if kind in ("image", "embed") and not hit.path.endswith(".md"):
        return relative_url(env["page"], copy_path(hit.path)), True  # the copied original file
    return relative_url(env["page"], page_path(hit.path)), True


class _Renderer:
    """Wraps markdown-it's renderer with our rules (a fresh one per call: no shared state)."""

    def __init__(self, md):
        self.base = md.renderer.__class__()
        for name in ("paragraph_open", "heading_open", "table_open", "list_item_open", "blockquote_open"):
            self._wrap_alias(name)
        rules = self.base.rules
        rules["fence"] = self._with_alias(rules["fence"])
        rules["code_block"] = self._with_alias(rules["code_block"])
        rules["html_block"] = self._html_block
        rules["html_inline"] = lambda tokens, idx, options, env: html.escape(tokens[idx].content)
        rules["link_open"] = self._link_open
        rules["link_close"] = self._link_close
        rules["image"] = self._image
        rules["wikilink"] = self._wikilink

    def render(self, tokens, options, env) -> str:
        env["link_stack"] = []
        return self.base.render(tokens, options, env)

    def _wrap_alias(self, name: str) -> None:
        self.base.rules[name] = self._with_alias(
            lambda tokens, idx, options, env: self.base.renderToken(tokens, idx, options, env))

    @staticmethod
    def _with_alias(rule: Callable) -> Callable:
        return lambda tokens, idx, options, env: _alias_html(tokens[idx]) + rule(tokens, idx, options, env)

    @staticmethod
    def _html_block(tokens, idx, options, env) -> str:
        tok = tokens[idx]
        ident = f' id="{html.escape(tok.attrGet("id"))}"' if tok.attrGet("id") else ""
        return f'{_alias_html(tok)}<pre class="raw-html block"{ident}>{html.escape(tok.content)}</pre>\n'

    def _link_open(self, tokens, idx, options, env) -> str:
        tok = tokens[idx]
        href, internal = _link_target(env, str(tok.attrGet("href") or ""), "link")
        env["link_stack"].append(href is not None)
        if href is None:
            return '<span class="broken-link" title="not found in this workspace">'
        tok.attrSet("href", href)
        if not internal:
            tok.attrSet("rel", "noopener noreferrer")
        return self.base.renderToken(tokens, idx, options, env)

    def _link_close(self, tokens, idx, options, env) -> str:
        return "</a>" if env["link_stack"].pop() else "</span>"

    def _image(self, tokens, idx, options, env) -> str:
        tok = tokens[idx]
        src, _ = _link_target(env, str(tok.attrGet("src") or ""), "image")
        alt = html.escape(self.base.renderInlineAsText(tok.children or [], options, env))
        if src is None:
            return f'<span class="broken-link">[{alt}]</span>'
        return f'<img src="{html.escape(src)}" alt="{alt}" loading="lazy">'

    def _wikilink(self, tokens, idx, options, env) -> str:
        tok = tokens[idx]
        kind = "embed" if tok.meta["embed"] else "wikilink"
        href, _ = _link_target(env, tok.meta["target"], kind)
        label = html.escape(tok.content)
        if href is None:
            return f'<span class="broken-link" title="no note named this">{label}</span>'
        if kind == "embed" and kind_for(tok.meta["target"]) == Kind.IMAGE:
            return f'<img src="{html.escape(href)}" alt="{label}" loading="lazy">'
        return f'<a class="wikilink" href="{html.escape(href)}">{label}</a>'
