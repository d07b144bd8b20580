"""TeX -> MathML for notes' `$…$` and `$$…$$` math, with no client JavaScript.

latex2mathml builds the MathML tree; it is serialised here with every text and attribute value
escaped (latex2mathml's own `convert()` un-escapes its output, so `\\text{<b>}` would reach the page as
markup). TeX it cannot read is shown as code (`math-error`), never dropped. The TeX source stays in
the block text for search and in the MathML as an `application/x-tex` annotation. latex2mathml and
`xml.etree` are imported by the first formula rendered, not by every build that renders the site.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element


def mathml(tex: str, display: bool = False) -> str:
    from xml.etree.ElementTree import tostring

    from latex2mathml.converter import convert_to_element

    mode = "block" if display else "inline"
    try:
        math = convert_to_element(tex, display=mode)
    except Exception:  # latex2mathml raises many types on malformed TeX; the source is shown instead
        return f'<code class="math-error" title="TeX this site cannot render">{html.escape(tex)}</code>'
    for el in math.iter():
        el.text = html.unescape(el.text) if el.text else el.text
        el.tail = html.unescape(el.tail) if el.tail else el.tail
        for key, value in el.attrib.items():
            el.attrib[key] = html.unescape(value)
    _annotate(math, tex)
    return tostring(math, encoding="unicode")


def _annotate(math: Element, tex: str) -> None:
    """Wrap the content in <semantics> with the TeX source as an annotation (not displayed)."""
    from xml.etree.ElementTree import SubElement

    children = list(math)
    for child in children:
        math.remove(child)
    semantics = SubElement(math, "semantics")
    row = SubElement(semantics, "mrow")
    row.extend(children)
    SubElement(semantics, "annotation", {"encoding": "application/x-tex"}).text = tex
