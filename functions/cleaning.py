"""All text shown as evidence is cleaned here, and only here (SPEC §10).

- `<equation ...>E = mc^2</equation>`: the formula is kept, the tags dropped;
- `<drawing .../>` elements are dropped;
- broken or partial tags (`<equation format="lat`, `</equa` at a chunk edge) are stripped;
- common LaTeX commands become readable text (`\\frac{a}{b}` -> `a/b`, `\\gamma` -> `γ`,
  `\\sqrt{x}` -> `√(x)`, `^2` stays);
- Markdown syntax becomes its text: `[label](url)` -> label, `![alt](x.png)` -> alt,
  `[[Note|alias]]` -> alias, heading markers and `**`/`__` emphasis dropped (a note's chunk is
  its raw Markdown);
- whitespace collapses.
The query's own terms are never removed: only markup is.
`quote_window` then cuts a query-centred window out of cleaned text.
"""

from __future__ import annotations

import re

MAX_QUOTE = 280

_EQUATION = re.compile(r"<equation\b[^>]*>(.*?)</equation\s*>", re.S | re.I)
_DRAWING = re.compile(r"<drawing\b[^>]*?/?>(?:.*?</drawing\s*>)?", re.S | re.I)
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s+[^<>]*?)?/?>")
_PARTIAL_TAG_START = re.compile(r"^[^<>]*?>")  # "...mat="latex">x" at a chunk's start
_PARTIAL_TAG_END = re.compile(r"</?[A-Za-z][^<>]*$")  # "<equation format=" at a chunk's end
_IMAGE_MD = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_WIKILINK = re.compile(r"!?\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|([^\]]+))?\]\]")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.M)
_EMPHASIS = re.compile(r"\*\*|__")

GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "theta": "θ", "lambda": "λ",
         "mu": "μ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "omega": "ω", "Delta": "Δ",
         "Sigma": "Σ", "Omega": "Ω", "infty": "∞", "cdot": "·", "times": "×", "leq": "≤", "geq": "≥",
         "neq": "≠", "approx": "≈", "pm": "±", "rightarrow": "→", "to": "→"}


def _group(x: str) -> str:
    """Parenthesise a fraction part unless it is one token or one √(...)."""
    x = x.strip()
    return x if re.fullmatch(r"[\w.^]+|√\([^()]*\)", x) else f"({x})"


def latex_to_text(expr: str) -> str:
    out = expr
    for _ in range(3):  # nested fractions and roots, innermost first
        out = re.sub(r"\\sqrt\s*\{([^{}]*)\}", r"√(\1)", out)
        out = re.sub(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", lambda m: f"{_group(m.group(1))}/{_group(m.group(2))}", out)
    out = re.sub(r"\\(?:text|mathrm|mathbf|mathit|operatorname)\s*\{([^{}]*)\}", r"\1", out)
    out = re.sub(r"\\([A-Za-z]+)", lambda m: GREEK.get(m.group(1), m.group(1)), out)
    return out.replace("{", "").replace("}", "").replace("\\,", " ").replace("\\", "")


def clean_text(text: str) -> str:
    """Markup out, formulas readable, whitespace collapsed."""
    out = _EQUATION.sub(lambda m: " " + latex_to_text(m.group(1)) + " ", text or "")
    out = _DRAWING.sub(" ", out)
    out = _MD_IMAGE.sub(lambda m: m.group(1), out)
    out = _MD_LINK.sub(lambda m: m.group(1), out)
    out = _WIKILINK.sub(lambda m: m.group(2) or m.group(1), out)
    out = _EMPHASIS.sub("", _HEADING.sub("", out))
    out = _TAG.sub(" ", out)
    out = _PARTIAL_TAG_END.sub(" ", out)
    if "<" not in out.split(">", 1)[0]:
        out = _PARTIAL_TAG_START.sub(" ", out, count=1) if re.match(r'^[^<>]*"\s*/?>', out) else out
    return " ".join(out.split())


def is_image_placeholder(text: str) -> bool:
    """A quote that is only an image reference (`# x.png` + `![](x.png)`): not evidence."""
    rest = _IMAGE_MD.sub(" ", text or "")
    rest = re.sub(r"^#+\s*\S+\.(png|jpe?g|webp|gif|bmp|tiff?)\s*$", " ", rest.strip(), flags=re.I | re.M)
    return bool(_IMAGE_MD.search(text or "")) and not rest.strip()


def quote_window(text: str, terms: list[str], max_chars: int = MAX_QUOTE) -> str:
    """Up to `max_chars` of `text`, centred on the first query term found, with … at cuts."""
    text = " ".join(text.split())  # collapse whitespace; characters stay as written
    if len(text) <= max_chars:
        return text
    lower = text.lower()
    hits = [i for i in (lower.find(t.lower()) for t in terms if t) if i >= 0]
    centre = min(hits) if hits else 0
    start = max(0, min(centre - max_chars // 3, len(text) - max_chars))
    end = start + max_chars
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
