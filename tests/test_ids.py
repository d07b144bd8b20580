"""Content-addressed ids."""

from __future__ import annotations

import base64
import hashlib

import pytest

from mnote_evidence.build.core.ids import BlockIdAllocator, short_hash


@pytest.mark.parametrize("parts", [("a",), ("docs/x.md", "paragraph", "吡咯烷"), ("",), ("x" * 10000,)])
@pytest.mark.parametrize("length", [10, 12, 16])
def test_short_hash_is_the_base32_prefix_of_sha256(parts, length):
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    assert short_hash(*parts, length=length) == base64.b32encode(digest).decode().lower()[:length]


def test_block_ids_depend_on_path_kind_normalised_text_and_repeat():
    ids = BlockIdAllocator("a.md")
    first = ids("paragraph", "Hello  world")
    assert ids("paragraph", "Hello world") == first + "-2"  # whitespace is normalised: a repeat
    assert ids("heading", "Hello world") != first
    assert BlockIdAllocator("b.md")("paragraph", "Hello world") != first
