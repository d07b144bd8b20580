"""Content-addressed identifiers (SPEC §4).

A block id is a short hash of (resource path, block kind, normalised text); a
repeat of the same text in the same resource gets an occurrence suffix. Editing
one paragraph therefore changes that block's id only.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections import Counter
from functools import lru_cache

from mnote_evidence.build.core.text import normalise

# 12 base32 chars = 60 bits: ~4e-7 chance of any collision among 1M blocks.
_ID_CHARS = 12


_B32 = "abcdefghijklmnopqrstuvwxyz234567"
_PAIRS = [a + b for a in _B32 for b in _B32]
_SHIFTS = tuple(70 - 10 * i for i in range(8))


def short_hash(*parts: str, length: int = _ID_CHARS) -> str:
    """First `length` (even, <= 16) chars of the lower-case base32 of sha256(parts joined by US).

    Same characters as `base64.b32encode(digest)[:length].lower()`, computed with a pair table
    (b32encode is pure Python, slow on long documents)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    bits = int.from_bytes(digest[:10], "big")
    return "".join([_PAIRS[(bits >> shift) & 1023] for shift in _SHIFTS[: length // 2]])


@lru_cache(maxsize=65536)
def resource_id(path: str) -> str:
    return "r-" + short_hash("resource", path)


class BlockIdAllocator:
    """Hands out block ids for one resource, adding `-2`, `-3`... for repeats."""

    def __init__(self, resource_path: str):
        self._path = resource_path
        self._seen: Counter[str] = Counter()

    def __call__(self, kind: str, text: str) -> str:
        base = "b-" + short_hash(self._path, kind, normalise(text))
        self._seen[base] += 1
        n = self._seen[base]
        return base if n == 1 else f"{base}-{n}"


class SectionIdAllocator:
    def __init__(self, resource_path: str):
        self._path = resource_path
        self._seen: Counter[str] = Counter()

    def __call__(self, path: list[str]) -> str:
        base = "s-" + short_hash(self._path, *path, length=10)
        self._seen[base] += 1
        n = self._seen[base]
        return base if n == 1 else f"{base}-{n}"


def edge_id(from_id: str, to_id: str, edge_type: str, source_block_id: str) -> str:
    return "e-" + short_hash(from_id, to_id, edge_type, source_block_id, length=16)


ENTITY_PREFIX = "entity:"


def entity_key(name: str) -> str:
    """An entity's name as compared: NFKC, case-folded, whitespace runs as one space (`@"Ada  LOVELACE"`
    and `@"Ada Lovelace"` name one entity; LightRAG's entity names compare the same way)."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def entity_id(name: str) -> str:
    """The stable id of the entity node a name stands for: `entity:<entity_key>`."""
    return ENTITY_PREFIX + entity_key(name)
