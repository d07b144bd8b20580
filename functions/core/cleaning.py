"""All text shown as evidence is cleaned here, and only here (SPEC §10).

Cleaning removes known markup, never text:
- `<equation ...>E = mc^2</equation>`: the formula is kept, the tags dropped;
- `<drawing .../>` elements are dropped; HTML comments too. Our PDF page markers (`<!-- page 3 -->`)
  go from every text, also when cut at a chunk's edge;
- HTML elements the providers emit (MinerU tables, `<br>`, `<sup>`; raw HTML in notes) lose their tags:
  a known element name that is void (`<br>`), carries attributes, or has its matching open/close
  tag in the text. Anything else in angle brackets is text: `<MIME>/packages`, `index <m> selects`;
- broken or partial tags of those known elements at a chunk edge (`<equation format="lat`) are stripped;
- common LaTeX commands inside equations become readable text (`\\frac{a}{b}` -> `a/b`, `\\gamma` -> `γ`,
  `\\sqrt{x}` -> `√(x)`, `^2` stays);
- with `markdown=True` (raw Markdown: a note's chunk), Markdown syntax becomes its text: `[label](url)` ->
  label, `![alt](x.png)` -> alt, `[[Note|alias]]` -> alias, heading markers and `**x**`/`__x__` emphasis
  (only well-formed pairs: `** a**b` is text). Block text is already rendered and is cleaned without it;
- whitespace collapses.
The query's own terms are never removed: only markup is.
`quote_window` then cuts a query-centred window out of cleaned text, at word boundaries.
"""

from __future__ import annotations

import re

from mnote_evidence.build.core.formats import suffixes
from mnote_evidence.build.core.model import Kind
from mnote_evidence.build.core.text import is_cjk

MAX_QUOTE = 280

_EQUATION = re.compile(r"<equation\b[^>]*>(.*?)</equation\s*>", re.S | re.I)
_DRAWING = re.compile(r"<drawing\b[^>]*?/?>(?:.*?</drawing\s*>)?", re.S | re.I)
HTML_ELEMENTS = frozenset(
    """
a abbr b blockquote br caption center cite code col colgroup dd del details dfn div dl dt em figcaption
figure font h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q s samp small span strike strong sub
summary sup table tbody td tfoot th thead tr tt u ul var equation drawing
""".split()
)
_VOID = frozenset({"br", "hr", "img", "wbr", "col"})
_TAG = re.compile(r"<(/?)([A-Za-z][\w:-]*)(\s+[^<>]*?)?\s*(/?)>")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
# Our page markers (build/parse/providers/pdf.py), also cut at a chunk's edges: "ge 3 -->", "<!-- pa"
_PAGE_MARKER = re.compile(
    r"<!-- page \d+ -->"
    r"|^\s*(?:(?:<?!)?-?-? ?)?(?:(?:(?:p?a)?g)?e ?)?\d* ?-->"
    r"|<(?:!(?:-(?:-(?: (?:p(?:a(?:g(?:e(?: \d*)?)?)?)?)?)?)?)?)?$"
)
_PARTIAL_COMMENT = re.compile(r"<!--(?:(?!-->).)*$|^(?:(?!<!--).)*?-->", re.S)
_PARTIAL_TAG_START = re.compile(r"^[^<>]*?>")  # "...mat="latex">x" at a chunk's start
_KNOWN = "|".join(sorted(HTML_ELEMENTS, key=len, reverse=True))
_PARTIAL_TAG_END = re.compile(rf"</?(?:{_KNOWN})(?:[\s/][^<>]*)?$", re.I)  # "<equation format=" at the end
_IMAGE_MD = re.compile(r"!\[[^\]]*\]\([^)]*\)")
# `# name.png`: the heading an image document carries (registered image suffixes, plus .gif from elsewhere)
_IMAGE_HEADING = re.compile(
    r"^#+\s*\S+(?:{})\s*$".format("|".join(re.escape(s) for s in (*suffixes(Kind.IMAGE), ".gif"))),
    re.I | re.M,
)
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_WIKILINK = re.compile(r"!?\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|([^\]]+))?\]\]")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.M)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_UNDERSCORE_BOLD = re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")

GREEK = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "theta": "θ",
    "lambda": "λ",
    "mu": "μ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "phi": "φ",
    "omega": "ω",
    "Delta": "Δ",
    "Sigma": "Σ",
    "Omega": "Ω",
    "infty": "∞",
    "cdot": "·",
    "times": "×",
    "leq": "≤",
    "geq": "≥",
    "neq": "≠",
    "approx": "≈",
    "pm": "±",
    "rightarrow": "→",
    "to": "→",
}


def _group(x: str) -> str:
    """Parenthesise a fraction part unless it is one token or one √(...)."""
    x = x.strip()
    return x if re.fullmatch(r"[\w.^]+|√\([^()]*\)", x) else f"({x})"


def latex_to_text(expr: str) -> str:
    out = expr
    for _ in range(3):  # nested fractions and roots, innermost first
        out = re.sub(r"\\sqrt\s*\{([^{}]*)\}", r"√(\1)", out)
        out = re.sub(
            r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}",
            lambda m: f"{_group(m.group(1))}/{_group(m.group(2))}",
            out,
        )
    out = re.sub(r"\\(?:text|mathrm|mathbf|mathit|operatorname)\s*\{([^{}]*)\}", r"\1", out)
    out = re.sub(r"\\([A-Za-z]+)", lambda m: GREEK.get(m.group(1), m.group(1)), out)
    return out.replace("{", "").replace("}", "").replace("\\,", " ").replace("\\", "")


def _strip_tags(text: str) -> str:
    """Drop the tags of known elements (see the module docstring); other angle-bracket text stays."""
    names = {m.group(2).lower(): set() for m in _TAG.finditer(text)}
    for m in _TAG.finditer(text):
        names[m.group(2).lower()].add("close" if m.group(1) else "open")

    def tag(m: re.Match) -> str:
        name = m.group(2).lower()
        if name not in HTML_ELEMENTS:
            return m.group(0)
        if name in _VOID or m.group(3) or m.group(4) or len(names[name]) == 2:
            return " "
        return m.group(0)  # `<p>` alone, never closed: a placeholder in prose, not markup

    return _TAG.sub(tag, text)


def clean_text(text: str, markdown: bool = True, markup: bool = True) -> str:
    """Markup out, formulas readable, whitespace collapsed (Markdown syntax too when `markdown`).

    `markup=False` is for text whose provider emits no markup (PyMuPDF, python-docx, the local OCR
    engine): there every angle bracket is text (`<a><b/></a>` in a spec is quoted XML) and only our
    own page markers go."""
    out = _PAGE_MARKER.sub(" ", text or "")
    if not markup:
        return " ".join(out.split())
    out = _EQUATION.sub(lambda m: " " + latex_to_text(m.group(1)) + " ", out)
    out = _DRAWING.sub(" ", out)
    out = _PARTIAL_COMMENT.sub(" ", _COMMENT.sub(" ", out))
    if markdown:
        out = _MD_IMAGE.sub(lambda m: m.group(1), out)
        out = _MD_LINK.sub(lambda m: m.group(1), out)
        out = _WIKILINK.sub(lambda m: m.group(2) or m.group(1), out)
        out = _HEADING.sub("", out)
        out = _UNDERSCORE_BOLD.sub(r"\1", _BOLD.sub(r"\1", out))
    out = _strip_tags(out)
    out = _PARTIAL_TAG_END.sub(" ", out)
    if "<" not in out.split(">", 1)[0]:
        out = _PARTIAL_TAG_START.sub(" ", out, count=1) if re.match(r'^[^<>]*"\s*/?>', out) else out
    return " ".join(out.split())


def is_image_placeholder(text: str) -> bool:
    """A quote that is only an image reference (`# x.png` + `![](x.png)`): not evidence."""
    rest = _IMAGE_MD.sub(" ", text or "")
    rest = _IMAGE_HEADING.sub(" ", rest.strip())
    return bool(_IMAGE_MD.search(text or "")) and not rest.strip()


def quote_window(text: str, terms: list[str], max_chars: int = MAX_QUOTE, centre: int | None = None) -> str:
    """Up to `max_chars` of `text`, centred on `centre` (an offset in the whitespace-collapsed text) or on
    the first query term found, cut at word boundaries, with … at cuts."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    if centre is None:
        lower = text.lower()
        hits = [i for i in (lower.find(t.lower()) for t in terms if t) if i >= 0]
        centre = min(hits) if hits else 0
    start = max(0, min(centre - max_chars // 3, len(text) - max_chars))
    end = start + max_chars
    if start and text[start - 1] != " " and not is_cjk(text[start]):
        cut = text.find(" ", start, centre if centre > start else start + 20)
        start = cut + 1 if cut >= 0 else start
    if end < len(text) and text[end] != " " and not is_cjk(text[end - 1]):
        cut = text.rfind(" ", max(start, end - 20), end)
        end = cut if cut > start else end
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
