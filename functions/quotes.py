"""Quotes shown to people and agents: a query-centred window of a block's text.

One module for text shown as evidence (the knowledge functions' cleaning
rules join it here, so there is one place that decides what a quote looks like).
"""

from __future__ import annotations

MAX_QUOTE = 280


def quote_window(text: str, terms: list[str], max_chars: int = MAX_QUOTE) -> str:
    """Up to `max_chars` of `text`, centred on the first query term found, with … at cuts."""
    text = " ".join(text.split())  # collapse whitespace; characters stay as written
    if len(text) <= max_chars:
        return text
    lower = text.lower()
    hits = [i for i in (lower.find(t.lower()) for t in terms if t) if i >= 0]
    centre = min(hits) if hits else 0
    start = max(0, min(centre - max_chars // 3, len(text) - max_chars))
    end = start + max_chars
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
