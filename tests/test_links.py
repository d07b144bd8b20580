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


# the characters whose lower case needs care: final sigma (context), dotted capital I (two characters),
# Kelvin sign, title case, a case-ignorable combining mark, and the word-inner marks `.`, `'`, `·`
_TRICKY = ["a", "B", "Σ", "σ", "ς", "İ", "I", ".", "'", "·", "-", " ", "ß", "ǅ", "\u0345", "K", "\u212a"]


def test_names_found_by_searching_the_paths_text_are_the_name_indexs(monkeypatch):
    """A resolver finds its first `NAMES_BY_SEARCH` names in its paths' lowered text, then indexes every
    path: both give the same paths for every name, whatever the case rules of the characters."""
    from mnote_evidence.build.workspace import links

    rng = random.Random(5)
    for _ in range(200):
        paths = {
            "/".join(
                "".join(rng.choice(_TRICKY) for _ in range(rng.randint(1, 4)))
                for _ in range(rng.randint(1, 3))
            )
            + rng.choice(["", ".md", ".MD", ".pdf"])
            for _ in range(30)
        }
        bases = {posixpath.basename(p) for p in paths}
        names = bases | {b[:-3] for b in bases} | {b.upper() for b in bases} | {"Σ", "a\0b", "a/b"}
        searching, indexed = LinkResolver(paths), LinkResolver(paths)
        monkeypatch.setattr(links, "NAMES_BY_SEARCH", 10**6)
        found = {n: sorted(searching._named(n.lower())) for n in names}
        monkeypatch.setattr(links, "NAMES_BY_SEARCH", 0)
        assert found == {n: sorted(indexed._named(n.lower())) for n in names}
        assert searching._by_name is None and indexed._by_name is not None


def test_a_resolver_indexes_its_paths_only_after_many_names(monkeypatch):
    from mnote_evidence.build.workspace import links

    paths = {f"f{i}/n{i}.md" for i in range(200)}
    resolver = LinkResolver(paths)
    for i in range(links.NAMES_BY_SEARCH):
        assert resolver.resolve("x.md", f"N{i}", "wikilink").path == f"f{i}/n{i}.md"
    assert resolver._by_name is None  # a dozen names (an edit's) index no path
    assert resolver.resolve("x.md", "n150", "wikilink").path == "f150/n150.md"
    assert resolver._by_name is not None and len(resolver._by_name) == 400  # a full build's: every path, once
