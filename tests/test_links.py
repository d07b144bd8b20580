"""Wikilink resolution by name (build/workspace/links.py, SPEC §2): the same folder first, then the shallowest
path, then the first in code point order; names compare without case and with `.md` optional; an
alias answers only when no file has the name. Checked on hand-made ties and against a brute-force
reading of that rule over random path sets (the resolver's name index is built without sorting)."""

from __future__ import annotations

import posixpath
import random

from mnote_evidence.build.workspace.links import LinkResolver


def _brute(paths: set[str], note: str, name: str) -> str | None:
    here = posixpath.dirname(note)
    hits = [p for p in paths if posixpath.basename(p).lower() in (name.lower(), name.lower() + ".md")]
    if not hits:
        return None
    return sorted(hits, key=lambda p: (posixpath.dirname(p) != here, p.count("/"), p))[0]


def test_a_wikilink_prefers_its_folder_then_the_shallowest_then_path_order():
    paths = {"a/x.md", "b/x.md", "b/c/x.md", "x.md", "d/X.md", "e/x.pdf", "e/y.md"}
    resolver = LinkResolver(paths, {"alias": "e/y.md", "x": "e/y.md"})
    assert resolver.resolve("b/note.md", "x", "wikilink").path == "b/x.md"  # same folder
    assert resolver.resolve("z/note.md", "x", "wikilink").path == "x.md"  # shallowest
    assert resolver.resolve("z/note.md", "X.md", "wikilink").path == "x.md"  # case, `.md` optional
    assert resolver.resolve("d/note.md", "x", "wikilink").path == "d/X.md"
    assert resolver.resolve("z/note.md", "x.pdf", "embed").path == "e/x.pdf"
    assert resolver.resolve("z/note.md", "alias", "wikilink").path == "e/y.md"  # no file of that name
    assert resolver.resolve("z/note.md", "nothing", "wikilink").problem == "missing"


def test_wikilinks_resolve_as_the_rule_reads_over_random_workspaces():
    rng = random.Random(17)
    for _ in range(40):
        folders = ["", "a/", "a/b/", "c/", "C/", "a/b/c/"]
        names = ["n.md", "N.md", "m.md", "n.pdf", "n", "o.markdown"]
        paths = {rng.choice(folders) + rng.choice(names) for _ in range(rng.randint(1, 12))}
        resolver = LinkResolver(paths)
        for note in ["x.md", "a/x.md", "a/b/x.md", "c/x.md"]:
            for name in ["n", "N.md", "m", "n.pdf", "o.markdown", "missing"]:
                assert resolver.resolve(note, name, "wikilink").path == _brute(paths, note, name), (
                    paths,
                    note,
                    name,
                )
