"""What one note may expand to (SPEC §3): bounds checked before the cost, each a recorded warning.

A note's bytes are bounded by `--max-file-mb`; these bound what a few bytes can turn into. Past a
bound the rest stays as written (YAML as its raw text, a tag or an embed as plain text or a link), so
nothing is lost and the rest of the note is indexed and shown:

- `MAX_FRONT_MATTER_CHARS` (100,000): front matter whose values, aliases expanded, are longer, or
  nested more than `MAX_FRONT_MATTER_DEPTH` (64) lists and mappings deep, is kept as its raw text
  (`front_matter_too_large`);
- `MAX_TAGS_PER_NOTE` (1,000, in the text and in the front matter each) and `MAX_TAG_CHARS` (100):
  a later or longer tag stays text (`tags_capped`);
- `MAX_EMBEDS_PER_NOTE` (250): a later `![[…]]` is a plain wikilink (`embeds_capped`);
- `MAX_EMBED_CHARS` (20,000): an embed shows its target's blocks up to this much text (its title links
  the rest);
- `MAX_EMBEDDED_CHARS_PER_NOTE` (1,000,000): a page shows at most this much embedded text in all; a
  later embed links what it names (the render's `embeds_capped`, `render/note_links.py`);
- `MAX_LINKS_PER_NOTE` (10,000: links, images, wikilinks and embeds together) and `MAX_LINK_CHARS`
  (2,000, a target and a link's words each): a later or longer link is its words as text
  (`links_capped`), so a reference link used many times cannot multiply its URL.

The counts live in the parse's markdown-it `env` (`count`), so the index and the page, which parse
the same text with the same rules, agree on every tag, embed and link.
"""

from __future__ import annotations

MAX_FRONT_MATTER_CHARS = 100_000
MAX_FRONT_MATTER_DEPTH = 64
MAX_TAGS_PER_NOTE = 1000
MAX_TAG_CHARS = 100
MAX_EMBEDS_PER_NOTE = 250
MAX_EMBED_CHARS = 20_000
MAX_EMBEDDED_CHARS_PER_NOTE = 1_000_000
MAX_LINKS_PER_NOTE = 10_000
MAX_LINK_CHARS = 2_000

_SEEN, _PAST = "mnote_seen", "mnote_past"  # env keys: what a parse counted, and what it left out


def count(env: dict, what: str, limit: int) -> bool:
    """Count one more `what` of this parse; False (and counted as left out) once past `limit`."""
    seen = env.setdefault(_SEEN, {})
    seen[what] = seen.get(what, 0) + 1
    if seen[what] <= limit:
        return True
    left_out(env, what)
    return False


def within(env: dict, what: str, limit: int) -> bool:
    """True when one more `what` would still be within `limit` (nothing is counted)."""
    return env.get(_SEEN, {}).get(what, 0) < limit


def left_out(env: dict, what: str) -> None:
    past = env.setdefault(_PAST, {})
    past[what] = past.get(what, 0) + 1


def left_out_count(env: dict, what: str) -> int:
    """How many `what` this parse left out."""
    return env.get(_PAST, {}).get(what, 0)
