"""Decode a note's bytes to text, whatever editor wrote it (SPEC §3, "bad input loses nothing").

First that applies: 1. a byte-order mark (UTF-32 LE/BE, UTF-8, UTF-16 LE/BE); 2. UTF-8; 3. a detector
(charset-normalizer) over the whole file, with a `non_utf8_text` warning naming the encoding; among
candidates as clean as the best (within `_CHAOS_MARGIN`) the encodings notes are written in win
(`_PREFERRED`); 4. UTF-8 with U+FFFD replacement, the warning saying how many characters.
Invariant: text is never silently replaced; any decoding other than UTF-8/BOM leaves a warning.
"""

from __future__ import annotations

import codecs

from mnote_evidence.build.core.model import Warning_

_BOMS = (  # UTF-32 before UTF-16: the UTF-32 LE mark begins with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_PREFERRED = ("gb18030", "gbk", "gb2312", "big5", "shift_jis", "cp932", "cp1252")
_CHAOS_MARGIN = 0.1


def decode_note(data: bytes) -> tuple[str, list[Warning_]]:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _strict_or_replaced(data[len(bom) :], encoding, f"{encoding} (byte-order mark)")
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    detected = _detect(data)
    if detected:
        text = data.decode(detected)
        return text, [
            Warning_(
                "non_utf8_text",
                f"not valid UTF-8 (byte {first_bad}); decoded as {detected} "
                "(detected). Re-save the note as UTF-8 to be sure of it.",
            )
        ]
    return _strict_or_replaced(data, "utf-8", "UTF-8")


def _strict_or_replaced(data: bytes, encoding: str, label: str) -> tuple[str, list[Warning_]]:
    try:
        return data.decode(encoding), []
    except UnicodeDecodeError:
        text = data.decode(encoding, errors="replace")
        count = text.count("\ufffd") - data.decode(encoding, errors="ignore").count("\ufffd")
        return text, [
            Warning_(
                "non_utf8_text",
                f"not valid {label} and no other encoding fits; {count} "
                "undecodable character(s) were replaced with U+FFFD. Re-save the note as UTF-8.",
            )
        ]


def _detect(data: bytes) -> str | None:
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        return None
    best = min(m.chaos for m in matches)
    close = [m.encoding for m in matches if m.chaos <= best + _CHAOS_MARGIN]
    for encoding in _PREFERRED:
        if encoding in close:
            return encoding
    return min(matches, key=lambda m: m.chaos).encoding
