"""TeX -> MathML for notes' `$…$` and `$$…$$` math, with no client JavaScript.

latex2mathml builds the MathML tree; it is serialised here with every text and attribute value
escaped (latex2mathml's own `convert()` un-escapes its output, so `\\text{<b>}` would reach the page as
markup). TeX it cannot read is shown as code (`math-error`), never dropped. The TeX source stays in
the block text for search and in the MathML as an `application/x-tex` annotation. latex2mathml and
`xml.etree` are imported by the first formula rendered, not by every build that renders the site.
Whatever the TeX, the MathML written is allowlisted (`_allowed`): presentation elements only (any
other becomes `mrow`), attributes by name with a value check each: no `style`, `class`, `id` or event
handler, an `href` only to http(s) or a relative URL (no backslash, no control character), lengths
within `MAX_LENGTH_EM`, colours as names or hex. A formula styles nothing outside itself and reaches
no script, other scheme or other host.
"""

from __future__ import annotations

import html
import re
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
        _allowed(el)
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


# MathML Core's presentation elements (and `semantics`/`annotation`, written by `_annotate`)
_ELEMENTS = frozenset(
    "math mrow mi mn mo mtext ms mspace msub msup msubsup munder mover munderover mfrac msqrt mroot "
    "mstyle merror mpadded mphantom mfenced menclose mtable mtr mtd mlabeledtr mmultiscripts "
    "mprescripts none semantics annotation".split()
)
MAX_LENGTH_EM = 20  # wider or taller than this (a page's width at most) is dropped: `\rule{1000cm}{1cm}`
_EM = {"": 1, "em": 1, "ex": 0.5, "mu": 1 / 18, "px": 1 / 16, "pt": 0.1, "pc": 1.2, "bp": 0.1}
_EM |= {"mm": 0.285, "cm": 2.85, "in": 7.23, "%": 0.01}
_LENGTH = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))(em|ex|mu|px|pt|pc|bp|mm|cm|in|%)?")
_TOKEN = re.compile(r"[A-Za-z0-9 .+-]{0,64}")  # enumerated values: `true`, `box`, `center left`, `bold`
_COLOUR = re.compile(r"#[0-9A-Fa-f]{3,8}|[A-Za-z]{1,32}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_LENGTHS = frozenset(
    "width height depth lspace rspace voffset minsize maxsize mathsize linethickness "
    "rowspacing columnspacing framespacing".split()
)
_TOKENS = frozenset(
    "display displaystyle scriptlevel mathvariant fence stretchy separator accent accentunder largeop "
    "movablelimits symmetric form notation columnalign rowalign columnlines rowlines frame linebreak "
    "align rowspan columnspan".split()
)


def _length_ok(value: str) -> bool:
    """Each space-separated length is a name (`thin`) or a number (`.5em`, `3pt`) within MAX_LENGTH_EM."""
    for part in value.split():
        m = _LENGTH.fullmatch(part)
        if m is None:
            if not _TOKEN.fullmatch(part) or any(c.isdigit() for c in part):
                return False
            continue  # a named length: `thin`, `thickmathspace`
        if abs(float(m.group(1))) * _EM[m.group(2) or ""] > MAX_LENGTH_EM:
            return False
    return True


def _href_ok(value: str) -> bool:
    """http(s) or relative, with no backslash (a browser reads `\\host` and `/\\host` as `//host`) and
    no control character (browsers drop some before reading a scheme or a host)."""
    if "\\" in value or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value):
        return False
    bare = value.replace(" ", "")
    scheme = _SCHEME.match(bare)
    return (scheme is None and not bare.startswith("//")) or (
        scheme is not None and scheme.group(0).lower() in ("http:", "https:")
    )


def _value_ok(name: str, value: str, tag: str) -> bool:
    if name in _LENGTHS:
        return _length_ok(value)
    if name in _TOKENS:
        return bool(_TOKEN.fullmatch(value))
    if name in ("mathcolor", "mathbackground"):
        return bool(_COLOUR.fullmatch(value))
    if name == "href":
        return _href_ok(value)
    if name == "xmlns":
        return tag == "math" and value == "http://www.w3.org/1998/Math/MathML"
    if name == "encoding":
        return tag == "annotation" and bool(_TOKEN.fullmatch(value.replace("/", "")))
    return False  # style, class, id, on*, and every name not listed


def _allowed(el: Element) -> None:
    """Keep only allowlisted MathML: another element becomes `mrow` (its content stays), another
    attribute or a value that fails its check is dropped."""
    if el.tag not in _ELEMENTS:
        el.tag = "mrow"
    for name, value in list(el.attrib.items()):
        value = html.unescape(value)
        if _value_ok(name, value, el.tag):
            el.attrib[name] = value
        else:
            del el.attrib[name]
