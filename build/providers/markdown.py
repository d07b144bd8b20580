"""Markdown notes via markdown-it-py tokens (SPEC §3).

One block per heading, paragraph, list-item paragraph, blockquote paragraph,
table, code block and raw HTML block; each with its 1-based inclusive line
range and the char range of those lines in the note. Headings form the section
tree. Links, images and wikilinks are kept on the block they appear in, so every
graph edge has a source block.
"""

from __future__ import annotations

from dataclasses import dataclass

from markdown_it.token import Token

from mnote_evidence.build.ids import BlockIdAllocator
from mnote_evidence.build.markdown_syntax import markdown_parser
from mnote_evidence.build.model import KIND_MARKDOWN, Block, ParsedResourceArtifact, ProviderError, Warning_
from mnote_evidence.build.ocr.settings import OcrSettings
from mnote_evidence.build.providers.base import ParseInput
from mnote_evidence.build.providers.encoding import decode_note
from mnote_evidence.build.sections import SectionTree
from mnote_evidence.build.text import join_lines

REVISION = "2"  # 2: notes in UTF-16/32 and legacy encodings are decoded (providers/encoding.py)


@dataclass
class BlockToken:
    """A token that opens an evidence block (the renderer uses the same list)."""

    index: int  # position in the token stream
    type: str
    text: str
    line_range: list[int]
    links: list[dict[str, str]]


def inline_text(token: Token) -> tuple[str, list[dict[str, str]]]:
    """Plain text and links of one inline token."""
    parts: list[str] = []
    links: list[dict[str, str]] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)
            links.append({"target": str(child.attrs.get("src", "")), "kind": "image"})
        elif child.type == "link_open":
            links.append({"target": str(child.attrs.get("href", "")), "kind": "link"})
        elif child.type == "wikilink":
            parts.append(child.content)
            kind = "embed" if child.meta["embed"] else "wikilink"
            links.append({"target": child.meta["target"], "kind": kind})
    return join_lines("".join(parts).split("\n")), links


def _container(stack: list[str]) -> str:
    for tag in reversed(stack):
        if tag == "list_item_open":
            return "list_item"
        if tag == "blockquote_open":
            return "quote"
    return "paragraph"


def block_tokens(tokens: list[Token]) -> list[BlockToken]:
    """The evidence blocks of a token stream, in document order."""
    out: list[BlockToken] = []
    stack: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type in ("list_item_open", "blockquote_open"):
            stack.append(tok.type)
        elif tok.type in ("list_item_close", "blockquote_close"):
            stack.pop()
        elif tok.type in ("heading_open", "paragraph_open") and tok.map:
            text, links = inline_text(tokens[i + 1])
            kind = "heading" if tok.type == "heading_open" else _container(stack)
            out.append(BlockToken(i, kind, text, [tok.map[0] + 1, tok.map[1]], links))
        elif tok.type in ("fence", "code_block", "html_block") and tok.map:
            kind = "html" if tok.type == "html_block" else "code"
            out.append(BlockToken(i, kind, tok.content.rstrip("\n"), [tok.map[0] + 1, tok.map[1]], []))
        elif tok.type == "table_open" and tok.map:
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
    out.append(BlockToken(start, "table", "\n".join(" | ".join(r) for r in rows),
                          [span[0] + 1, span[1]], links))
    return i


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
        pass  # text comes from the file itself: no OCR

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

    def parse_text(self, path: str, source_hash: str, text: str,
                   warnings: list[Warning_] | None = None) -> ParsedResourceArtifact:
        tokens = markdown_parser().parse(text)
        offsets = _line_offsets(text)
        new_block_id = BlockIdAllocator(path)
        tree = SectionTree(path)
        blocks: list[Block] = []
        for bt in block_tokens(tokens):
            if bt.type == "heading":
                tree.open(int(tokens[bt.index].tag[1]), bt.text)
            first, last = bt.line_range
            start, end = offsets[first - 1], offsets[min(last, len(offsets) - 1)]
            while end > start and text[end - 1] in "\r\n":
                end -= 1
            blocks.append(tree.add(Block(
                id=new_block_id(bt.type, bt.text),
                type=bt.type,
                text=bt.text,
                line_range=bt.line_range,
                char_range=[start, end],
                links=bt.links,
            )))
        return ParsedResourceArtifact(
            kind=KIND_MARKDOWN, provider=self.name, provider_version=self.version(),
            source_path=path, source_hash=source_hash, text=text, blocks=blocks,
            sections=tree.sections, warnings=warnings or [],
        )
