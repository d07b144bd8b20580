"""A rendered site of the fixtures (plus hostile notes) and a real headless Chromium."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import copy_workspace, run_build

HOSTILE_NOTE = """# Hostile note

<script>window.__pwned = 1; alert("script tag")</script>

Inline <img src="x" onerror="window.__pwned = 2; alert('onerror')"> image and <b onclick="alert(1)">bold</b>.

[click me](javascript:alert('js-link')) and [data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)

<iframe src="javascript:alert('iframe')"></iframe>

A harmless paragraph that must still render.
"""


def hostile_pdf(path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), '<script>alert("pdf")</script><img src=x onerror=alert(2)>', fontsize=11)
    page.insert_text((72, 140), "Ordinary text after the markup.", fontsize=11)
    doc.save(path)


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """(workspace, out) with the site rendered; read-only for tests."""
    base = tmp_path_factory.mktemp("site")
    root = copy_workspace(base / "ws")
    (root / "Inbox/Hostile.md").write_text(HOSTILE_NOTE + "\n[evil pdf](Hostile.assets/evil.pdf)\n", "utf-8")
    (root / "Inbox/Hostile.assets").mkdir()
    hostile_pdf(root / "Inbox/Hostile.assets/evil.pdf")
    out = base / "out"
    run_build(root, out, site=True)
    return root, out


def block_id(out: Path, like: str) -> str:
    conn = sqlite3.connect(out / "evidence.sqlite")
    try:
        row = conn.execute(
            "SELECT block_id FROM evidence_block WHERE text LIKE ? ORDER BY id", [like]
        ).fetchone()
        assert row, f"no block like {like!r}"
        return row[0]
    finally:
        conn.close()
