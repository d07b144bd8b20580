"""Text for a terminal: control characters shown, never obeyed (docs/security.md).

Notes, file names and LightRAG answers may hold escape sequences: OSC 52 writes the clipboard, CSI
clears the screen or moves the cursor, bidi overrides reorder what is read. `printable` shows every
C0 control but newline and tab, DEL, every C1 control (U+0080-U+009F) and the bidi overrides and
isolates (U+202A-U+202E, U+2066-U+2069) as a visible escape (`\\x1b`, `\\u202e`), as git and less
do; `json_text` writes JSON with the same characters as `\\u` escapes, so it parses to the same value.
Every CLI command writes document text through one of the two (`build/cli/common.py: echo`).
"""

from __future__ import annotations

import json
import re
from typing import Any

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _shown(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with each control character (but newline and tab) written as a visible escape."""
    return _UNSAFE.sub(_shown, text)


def json_text(value: Any) -> str:
    """`value` as indented JSON, non-ASCII kept, with no control character left raw: json escapes C0;
    DEL, C1 and the bidi controls become `\\u` escapes too (outside strings JSON is ASCII, so every
    such character is inside a string, where the escape means the same character)."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
