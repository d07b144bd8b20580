"""The documentation works in any clone: every relative link in README.md and docs/*.md leads to a
file git tracks (a folder holding tracked files), and a `#fragment` to one of that page's headings."""

from __future__ import annotations

import posixpath
import re
import subprocess
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt

from tests.conftest import REPO

MD = MarkdownIt("commonmark")


def tracked() -> set[str]:
    proc = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True)
    if proc.returncode != 0:
        pytest.skip("not a git checkout: nothing says which files are tracked")
    return {p for p in proc.stdout.decode("utf-8").split("\0") if p}


def documents() -> list[str]:
    return ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))]


def links(text: str) -> list[str]:
    found = []
    for token in MD.parse(text):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(child.attrGet("href"))
            elif child.type == "image":
                found.append(child.attrGet("src"))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    tokens = MD.parse(text)
    return {
        slug(tokens[i + 1].content.replace("`", "")) for i, t in enumerate(tokens) if t.type == "heading_open"
    }


def test_the_contract_is_in_the_repository():
    assert "docs/SPEC.md" in documents() and "docs/SPEC.md" in tracked()
    assert "../shared" not in (REPO / "README.md").read_text("utf-8")


@pytest.mark.parametrize("doc", documents())
def test_every_relative_link_resolves_to_a_tracked_file(doc):
    files = tracked()
    folders = {posixpath.dirname(f) for f in files}
    folders |= {posixpath.dirname(d) for d in folders}
    text = (REPO / doc).read_text("utf-8")
    checked, broken = 0, []
    for href in links(text):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc:  # http(s), mailto: not ours to check offline
            continue
        target = (
            posixpath.normpath(posixpath.join(posixpath.dirname(doc), unquote(parts.path)))
            if parts.path
            else doc
        )
        checked += 1
        if target.startswith("../") or (target not in files and target.rstrip("/") not in folders):
            broken.append(f"{href}: {target} is not a tracked file")
        elif (
            parts.fragment
            and target.endswith(".md")
            and parts.fragment not in anchors((REPO / target).read_text("utf-8"))
        ):
            broken.append(f"{href}: no heading #{parts.fragment} in {target}")
    assert not broken, f"{doc}: " + "; ".join(broken)
    if doc == "README.md":
        assert checked >= 2  # the contract and the schemas, at least
