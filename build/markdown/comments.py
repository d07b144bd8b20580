"""Obsidian's private comments: `%%…%%` inline or over many lines, never shown (SPEC §3).

`blank_comments` replaces every character of each comment, its `%%` marks included, with a space,
and keeps every line break: the text keeps its length and its lines, so each block's line and char
range, the anchors and what `verify` quotes still index the note as written. As Obsidian reads it, a
`%%` inside a code span or a fenced code block is text, a comment ends at the next `%%` whatever
lies between (code fences too), and one never closed runs to the end of the note. Every reader of a
note's text (the provider, the page, the text sent to LightRAG) reads it through this, so a comment
reaches no page, block, search index, sidecar or LightRAG document.
"""

from __future__ import annotations

import re

from mnote_evidence.build.markdown.encoding import decode_note

MARK = "%%"
_FENCE = re.compile(r"[ \t>]*(`{3,}|~{3,})")  # a fence opens a line (in a quote or list too)
_CODE_OR_MARK = re.compile(r"`+|%%")


def blank_comments(text: str) -> str:
    """`text` with each comment's characters blanked (line breaks kept); the same object if it has none."""
    if MARK not in text:
        return text
    lines = text.split("\n")
    fence: str | None = None  # the open fence's marks
    in_comment = False
    for n, line in enumerate(lines):
        start = 0
        if in_comment:
            end = line.find(MARK)
            if end < 0:
                lines[n] = _blank(line)
                continue
            line = lines[n] = _blank(line[: end + 2]) + line[end + 2 :]
            in_comment, start = False, end + 2
        elif fence is not None:
            close = _FENCE.match(line)
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
                if not line[close.end() :].strip():
                    fence = None
            continue
        elif (opened := _FENCE.match(line)) is not None:
            if opened.group(1)[0] == "~" or "`" not in line[opened.end() :]:
                fence = opened.group(1)
                continue
        lines[n], in_comment = _blank_inline(line, start)
    return "\n".join(lines)


def blank_comment_bytes(data: bytes) -> bytes:
    """A note's bytes as the site offers them: its comments blanked. A UTF-8 note keeps its length (each
    byte of a comment a space: in UTF-8 a byte below 128 is always that ASCII character, so reading it
    as Latin-1 finds the same marks); another encoding gives its blanked text in UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        text = decode_note(data)[0]
        return blank_comments(text).encode("utf-8") if MARK in text else data
    return blank_comments(data.decode("latin-1")).encode("latin-1") if MARK.encode() in data else data


def _blank_inline(line: str, pos: int) -> tuple[str, bool]:
    """`line` from `pos` with its comments blanked, code spans skipped; True if a comment stays open."""
    while (hit := _CODE_OR_MARK.search(line, pos)) is not None:
        run = hit.group()
        if run != MARK:  # a code span runs to the next backtick run of the same length on the line
            close = re.compile(f"(?<!`){run}(?!`)").search(line, hit.end())
            pos = close.end() if close else hit.end()
            continue
        end = line.find(MARK, hit.end())
        if end < 0:
            return line[: hit.start()] + _blank(line[hit.start() :]), True
        line = line[: hit.start()] + " " * (end + 2 - hit.start()) + line[end + 2 :]
        pos = end + 2
    return line, False


def _blank(part: str) -> str:
    """Spaces for every character but a carriage return (a CRLF note keeps its line ends)."""
    return re.sub(r"[^\r]", " ", part)
