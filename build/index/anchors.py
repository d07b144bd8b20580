"""The anchor map: where a block id that disappeared should now land (SPEC §4).

When a resource is re-parsed, each old block id it does not produce again is "retired" with its most
similar successor in the same resource (character-bigram Jaccard similarity within a window of nearby
ordinals, so a re-exported 3,000-block PDF stays cheap), or with none. A block the author marked `^id`
has a known successor: the new block with the same `^id` (similarity 1.0). Aliases chain: if a
successor itself retires, every alias pointing at it moves on; an id that comes back is un-retired.
The site renders each alias as an extra anchor at its successor, so citation URLs from any earlier
build still land somewhere meaningful.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from mnote_evidence.build.core.text import normalise

MIN_SIMILARITY = 0.3
WINDOW = 50  # ordinals on each side of the old position


@dataclass(frozen=True)
class OldBlock:
    block_id: str
    ordinal: int
    text: str
    anchor: str | None = None


def _grams(text: str) -> frozenset[str]:
    t = normalise(text).lower()
    return frozenset(t[i : i + 2] for i in range(len(t) - 1)) or frozenset([t])


def best_successor(old: OldBlock, new: list[OldBlock]) -> tuple[str | None, float]:
    lo, hi = max(0, old.ordinal - WINDOW), old.ordinal + WINDOW
    best: tuple[float, int, str] | None = None
    old_grams = _grams(old.text)
    for cand in new[lo : hi + 1]:
        grams = _grams(cand.text)
        score = len(old_grams & grams) / len(old_grams | grams)
        key = (score, -abs(cand.ordinal - old.ordinal), cand.block_id)
        if best is None or key > best:
            best = key
    if best is None or best[0] < MIN_SIMILARITY:
        return None, 0.0
    return best[2], round(best[0], 3)


def old_blocks(conn: sqlite3.Connection, resource_id: str) -> list[OldBlock]:
    return [
        OldBlock(*r)
        for r in conn.execute(
            "SELECT block_id, ordinal, text, anchor FROM evidence_block WHERE resource_id = ? ORDER BY "
            "ordinal",
            [resource_id],
        )
    ]


def retire(
    conn: sqlite3.Connection, resource_id: str, old: list[OldBlock], new: list[OldBlock], stamp: int
) -> None:
    """Record aliases for `old` ids missing from `new` (both in ordinal order)."""
    new_ids = {b.block_id for b in new}
    by_anchor = {b.anchor: b.block_id for b in new if b.anchor}
    conn.executemany("DELETE FROM evidence_anchor WHERE old_block_id = ?", [(i,) for i in new_ids])
    for block in old:
        if block.block_id in new_ids:
            continue
        if block.anchor in by_anchor:
            successor, score = by_anchor[block.anchor], 1.0
        else:
            successor, score = best_successor(block, new)
        conn.execute(
            "INSERT OR REPLACE INTO evidence_anchor VALUES (?, ?, ?, ?, ?)",
            [block.block_id, resource_id, successor, score, stamp],
        )
        conn.execute(
            "UPDATE evidence_anchor SET successor_block_id = ?, similarity = ? WHERE successor_block_id = ?",
            [successor, score, block.block_id],
        )
