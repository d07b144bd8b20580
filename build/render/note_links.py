"""A note's wikilinks, embeds and tags as HTML (SPEC §8; docs/guides/obsidian.md).

- `[[Note]]`, `[[Note#Heading]]`, `[[Note#^id]]` link the note's page, its heading's or its marked
  block's anchor; the label is the block text's (`Note › Heading`).
- `![[Note]]` (with `#Heading` or `#^id`) embeds the target's indexed blocks (at most
  `MAX_EMBED_BLOCKS`), drawn as on the target's page (`note_html.embedded_html`; its indexed text
  when the note cannot be read again) under a title linking the source block, while the page's
  embedded text stays within `MAX_EMBEDDED_CHARS_PER_NOTE` (`env["embed_left"]`; a later embed is
  a wikilink, counted in `env["embeds_capped"]`); a note embedded in an embedded note is a link;
  `![[image.png]]` shows the image, `![[doc.pdf#page=3]]` that page's image (a link past the
  page-image cap).
- A target or fragment that finds nothing: a `broken-link` span with a visible `missing` marker.
- `#tag` links the tag's page (`tag_page`), `@Name` its entity's page (`entity_page`).
Every URL is relative (`core.urls.relative_url`); nothing here needs JavaScript.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Callable
from dataclasses import dataclass

from mnote_evidence.build.core.formats import kind_for
from mnote_evidence.build.core.model import Kind
from mnote_evidence.build.core.urls import ENTITIES_DIR, TAGS_DIR, copy_path, page_path, relative_url
from mnote_evidence.build.index.link_targets import LinkTargets, split_target
from mnote_evidence.build.markdown.limits import MAX_EMBEDDED_CHARS_PER_NOTE
from mnote_evidence.build.workspace.links import LinkResolver

_UNSAFE_IN_NAME = re.compile(r"[^\w-]+")  # \w is Unicode: 中文 and café stay as they are
_NAME_BYTES = 120  # of a tag page's file name, in UTF-8: file systems allow 255


def tag_page(tag: str) -> str:
    """Site file of a tag's page: `_tags/<tag, lower case>.html` (nested tags nest folders, `name_page`)."""
    return name_page(TAGS_DIR, tag)


def entity_page(entity: str) -> str:
    """Site file of an entity's page (`entity`: its key, `ids.entity_key`): `_entities/<key>.html`."""
    return name_page(ENTITIES_DIR, entity)


def name_page(folder: str, tag: str) -> str:
    """Site file of a tag's or entity's page: `<folder>/<name, lower case>.html`, `/` nesting folders.

    A tag comes from the author (front matter takes any string), so each `/`-part becomes a safe
    file name: letters, digits, `_` and `-` stay; a part holding anything else (`..`, `<`, `"`, a
    space, nothing) or longer than `_NAME_BYTES` is cleaned (and cut) and given a short hash of the
    original, so distinct tags keep distinct pages and no page lands outside `_tags/` or has a name a
    file system or static host refuses. The name `index` is hashed too: `<folder>/index.html` is the
    folder's index."""
    parts = []
    whole = tag.lower()
    for part in whole.split("/"):
        safe = _UNSAFE_IN_NAME.sub("-", part).strip("-")
        if safe != part or not safe or len(safe.encode("utf-8")) > _NAME_BYTES or whole == "index":
            safe = f"{safe[:32] or 'tag'}-{hashlib.sha1(part.encode('utf-8')).hexdigest()[:8]}"
        parts.append(safe)
    return f"{folder}/{'/'.join(parts)}.html"


@dataclass
class NoteLinks:
    """What a note's links are resolved against: the file set, the index, PDF page images."""

    resolver: LinkResolver
    targets: LinkTargets | None = None  # None: no index to look fragments up in (they land on the page)
    page_image: Callable[[str, int], str | None] = lambda path, page: None
    page_of: Callable[[str], str] = page_path  # a source's page in this site (`urls.Pages`)
    copy_of: Callable[[str], str] = copy_path  # and its copy (`urls.Pages.copy`)
    read_note: Callable[[str], str | None] = lambda path: None  # a note's text (None: embeds show its index)


def _missing(label: str, why: str) -> str:
    return (
        f'<span class="broken-link" title="{html.escape(why)}">{label}'
        f'<span class="missing-marker"> (missing)</span></span>'
    )


def tag_html(env: dict, tag: str, shown: str) -> str:
    href = relative_url(env["page"], tag_page(tag))
    return f'<a class="tag" href="{html.escape(href)}">{html.escape(shown)}</a>'


def mention_html(env: dict, entity: str, shown: str) -> str:
    href = relative_url(env["page"], entity_page(entity))
    return f'<a class="mention" href="{html.escape(href)}">{html.escape(shown)}</a>'


def img_html(src: str, alt: str, size: list[int | None] | None = None) -> str:
    """An `<img>` of `src` (a URL) with `alt` (HTML already), sized as the note asks (`|400x300`)."""
    width, height = size or (None, None)
    sized = (f' width="{width}"' if width else "") + (f' height="{height}"' if height else "")
    return f'<img src="{html.escape(src)}" alt="{alt}"{sized} loading="lazy">'


def wikilink_html(
    env: dict, target: str, label: str, embed: bool, size: list[int | None] | None = None
) -> str:
    links: NoteLinks = env["links"]
    label = html.escape(label)
    name, fragment = split_target(target)
    hit = links.resolver.resolve(env["note"], target, "embed" if embed else "wikilink")
    path = hit.path if name else env["note"]
    if path is None:
        return _missing(label, "no note or file named this in the workspace")
    anchor = None
    if fragment and links.targets is not None:
        anchor = links.targets.anchor(path, fragment)
        if anchor is None:
            return _missing(label, f"{path} has nothing at #{fragment}")
    href = relative_url(env["page"], links.page_of(path), anchor)
    if not embed:
        return f'<a class="wikilink" href="{html.escape(href)}">{label}</a>'
    kind = kind_for(path)
    if kind == Kind.IMAGE:
        src = relative_url(env["page"], links.copy_of(path))
        return f'<a class="embed embed-image" href="{html.escape(href)}">{img_html(src, label, size)}</a>'

    if kind == Kind.PDF:
        number = int(anchor[5:]) if anchor and anchor.startswith("page-") else 1
        image = links.page_image(path, number)
        if image:
            src = relative_url(env["page"], image)
            return f'<a class="embed embed-pdf" href="{html.escape(href)}">{img_html(src, label, size)}</a>'

        return f'<a class="wikilink" href="{html.escape(href)}">{label}</a>'
    if kind == Kind.MARKDOWN and links.targets is not None:
        return _embed_note(env, path, fragment, href, label)
    if kind != Kind.MARKDOWN:  # any other file: its copy (served inert when a browser would run it)
        href = relative_url(env["page"], links.copy_of(path))
    return f'<a class="wikilink" href="{html.escape(href)}">{label}</a>'


def _embed_note(env: dict, path: str, fragment: str, href: str, label: str) -> str:
    """The embedded blocks drawn as on their page (`env["embedded_html"]`), else as their indexed text;
    a link when the page's embed budget is spent, or inside an embed (`source_page`)."""
    link = f'<a class="wikilink" href="{html.escape(href)}">{label}</a>'
    if "source_page" in env:
        return link
    blocks = env["links"].targets.embed(path, fragment) or []
    size = sum(len(b.text) for b in blocks)
    left = env.get("embed_left", MAX_EMBEDDED_CHARS_PER_NOTE)
    if size > left:  # the page's embed budget is spent: this one links what it names
        env["embeds_capped"] = env.get("embeds_capped", 0) + 1
        return link
    env["embed_left"] = left - size
    parts = [f'<div class="embed embed-note"><a class="embed-title" href="{html.escape(href)}">{label}</a>']
    drawn = env["embedded_html"](env, path, blocks) if "embedded_html" in env else None
    if drawn is not None:
        parts.append(drawn)
    else:
        page = env["links"].page_of(path)
        for b in blocks:
            url = relative_url(env["page"], page, b.block_id)
            parts.append(
                f'<p class="embed-block embed-{html.escape(b.kind)}">{html.escape(b.text)} '
                f'<a class="embed-source" href="{html.escape(url)}" title="open this block">↗</a></p>'
            )
    parts.append("</div><!-- embed -->")
    return "".join(parts)
