"""The site's Jinja environment (SPEC §8): the templates of `site_templates/`, autoescaped, strict.

Imported where a page is drawn (`render/site.py`): a render with nothing to do loads neither Jinja nor
the Markdown renderer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined

_DICT_ATTRS = frozenset(dir(dict))


class SiteEnvironment(Environment):
    def getattr(self, obj: Any, attribute: str) -> Any:
        """`x.name` as Jinja reads it, a plain dict's item looked up first when `name` is no attribute of
        dicts (so the same value): Jinja tries the attribute first, and the AttributeError it raises and
        catches for a dict's key was a third of the backlinks panel's rendering and most of the tag pages'."""
        if type(obj) is dict and attribute not in _DICT_ATTRS:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


def environment(folder: Path) -> Environment:
    """The environment of the templates in `folder`."""
    # compiled templates are cached per user (Jinja's bytecode cache, by source checksum); no auto_reload: the
    # templates are hashed once per render, not stat'ed at every get_template
    env = SiteEnvironment(
        loader=FileSystemLoader(folder),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
        bytecode_cache=FileSystemBytecodeCache(),
    )
    env.filters["pct"] = lambda v: f"{v:.4f}".rstrip("0").rstrip(".")
    return env
