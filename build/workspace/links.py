"""Resolve note links and decide which note owns each resource (SPEC §2).

The links are `model.NoteLink`s. They are resolved against the scanned file
set only, so a link can never name anything outside the root:
`../../etc/passwd` normalises to a path that starts with `..` and is
reported, never opened. A wikilink names a file (with or without `.md`) or,
failing that, a note's front matter alias (`aliases`, first note in path order
wins a contested alias). Tags, aliases and `@` mentions are links of a note that point at
no file: they resolve to nothing, with no problem.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass(frozen=True)
class Resolution:
    path: str | None
    problem: str | None = None  # "outside_root" | "missing" | None (external links: both None)


NAME_KINDS = ("tag", "alias", "mention")


def alias_map(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """alias (lower case) -> note path, from (note path, alias) pairs; first note in path order wins."""
    out: dict[str, str] = {}
    for note, alias in sorted((str(n), str(a)) for n, a in pairs):
        out.setdefault(alias.strip().lower(), note)
    return out


class LinkResolver:
    def __init__(self, paths: set[str], aliases: dict[str, str] | None = None):
        self.paths = paths
        self.aliases = {a: p for a, p in (aliases or {}).items() if p in paths}
        self._by_name: dict[str, list[str]] | None = None  # built on the first wikilink

    def _named(self, key: str) -> list[str]:
        """The paths whose file name, lower case, is `key` or `key` + `.md` (in no particular order)."""
        if self._by_name is None:
            self._by_name = defaultdict(list)  # unsorted: the tie-break (`_wikilink`) is a `min`
            for p in self.paths:
                name = p[p.rfind("/") + 1 :].lower()
                self._by_name[name].append(p)
                if name.endswith(".md"):
                    self._by_name[name[:-3]].append(p)
        return self._by_name.get(key, [])

    def resolve(self, note: str, target: str, kind: str) -> Resolution:
        if kind in NAME_KINDS:
            return Resolution(None)
        if kind in ("wikilink", "embed"):
            return self._wikilink(note, target)
        if not target or target.startswith("#") or _SCHEME.match(target) or target.startswith("//"):
            return Resolution(None)
        target = unquote(target.split("#", 1)[0].split("?", 1)[0])
        if not target:
            return Resolution(None)
        if target.startswith("/"):
            joined = posixpath.normpath(target.lstrip("/"))
        else:
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(note), target))
        if joined == ".." or joined.startswith("../"):
            return Resolution(None, "outside_root")
        for candidate in (joined, joined + ".md"):
            if candidate in self.paths:
                return Resolution(candidate)
        return Resolution(None, "missing")

    def _wikilink(self, note: str, target: str) -> Resolution:
        name = target.split("#", 1)[0].strip()
        if not name:
            return Resolution(None)  # [[#Heading]] points into the same note
        if "/" in name:
            hit = self.resolve(note, name, "link")
            if hit.path or hit.problem == "outside_root":
                return hit
            name = posixpath.basename(name)
        candidates = self._named(name.lower())
        if not candidates:
            alias = self.aliases.get(name.lower())
            return Resolution(alias) if alias else Resolution(None, "missing")
        if len(candidates) == 1:
            return Resolution(candidates[0])
        here = posixpath.dirname(note)
        # same folder first, then the shallowest, then alphabetical
        return Resolution(min(candidates, key=lambda p: (p.rpartition("/")[0] != here, p.count("/"), p)))


def assets_owner(resource: str, notes: set[str]) -> str | None:
    """The note `X.md` whose `X.assets/` folder holds `resource`, if that note exists."""
    parts = resource.split("/")
    for i in range(len(parts) - 1, 0, -1):
        folder = parts[i - 1]
        if folder.endswith(".assets"):
            note = "/".join(parts[: i - 1] + [folder[: -len(".assets")] + ".md"])
            if note in notes:
                return note
    return None


def owners(resources: list[str], notes: set[str], linkers: dict[str, set[str]]) -> dict[str, str | None]:
    """Owner note per resource: its `.assets` note, else the first note linking to it, else None."""
    out = {}
    for res in resources:
        owner = assets_owner(res, notes)
        if owner is None and linkers.get(res):
            owner = sorted(linkers[res])[0]
        out[res] = owner
    return out
