"""`quoteVerified` and the precision downgrade, decided here for search results, citations and
`verify_quote` (SPEC §9, §10).

What is checked where:
- at build time, per PDF text block: do the words PyMuPDF reads inside the block's box hold the
  block's words? (`build/parse/providers/pdf_boxes.py`; the answer is `evidence_block.box_holds_text`,
  and a box that fails is left out of the block's locator, whose precision becomes `page`);
- at query time, per quote: are the quote's normalised words in the block's text
  (`build/core/quote_match.py`)? For an OCR line or a DOCX paragraph the block's text is the line or the
  paragraph; for a PDF box it is the text the build found inside the box.

A quote is verified when both hold. When one fails the locator is downgraded (bbox -> page;
paragraph, line -> file) and the reason is given: `box_text_mismatch` (the build found the box
without the block's words) or `quote_not_in_block`. A box that does not hold the words is never
answered at `bbox` precision.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from typing import Any

from mnote_evidence.build.core.model import EvidenceLocator
from mnote_evidence.build.core.quote_match import match_form, quote_in
from mnote_evidence.functions.core.cleaning import clean_text

BOX_MISMATCH = "box_text_mismatch"
QUOTE_MISSING = "quote_not_in_block"
_DOWN = {"bbox": "page", "paragraph": "file", "line": "file", "block": "file"}
_BLOCK_KEYS = ("blockId", "page", "bbox", "lineRange", "charRange", "paragraphIndex")


def quote_holds(quote: str, text: str, markup: bool = True) -> bool:
    """The quote's words are in the block's text (or in that text cleaned of markup)."""
    if quote_in(quote, match_form(text)):
        return True
    return quote_in(quote, match_form(clean_text(text, markdown=False, markup=markup)))


def verdict(quote: str, text: str, box_holds_text: int | bool | None, markup: bool = True) -> str | None:
    """None when the quote is verified, else the reason it is not."""
    if box_holds_text is not None and not box_holds_text:
        return BOX_MISMATCH
    return None if quote_holds(quote, text, markup) else QUOTE_MISSING


def downgraded(loc: EvidenceLocator, reason: str | None) -> EvidenceLocator:
    """The locator at the precision its verification allows (a copy; `loc` itself when nothing changes)."""
    if reason is None or loc.get("precision") not in _DOWN and "bbox" not in loc:
        return loc
    out: Any = copy.deepcopy(loc)
    if reason == BOX_MISMATCH or out["precision"] == "bbox":
        out.pop("bbox", None)
        out["precision"] = "page" if "page" in out else "file"
    elif out["precision"] in ("paragraph", "line", "block"):
        for key in _BLOCK_KEYS:
            out.pop(key, None)
        out["precision"] = "file"
        out["openAction"]["url"] = out["openAction"]["url"].split("#", 1)[0]  # the page, base kept
    return out


def checked_locator(row: sqlite3.Row, holds: bool) -> tuple[EvidenceLocator, bool, str | None]:
    """(the block's locator, verified, reason) for a block whose text does (`holds`) or does not hold
    a quote; only the box check changes the locator here (a best match is not claimed to hold it)."""
    loc = json.loads(row["locator_json"])
    box = row["box_holds_text"]
    if box is not None and not box:
        return downgraded(loc, BOX_MISMATCH), False, BOX_MISMATCH
    return loc, holds, None if holds else QUOTE_MISSING


def mark_results(conn: sqlite3.Connection, results: list[dict]) -> None:
    """Set `quoteVerified` on evidence.search results (one indexed read for all of them) and
    downgrade the `source` of those that fail, with `diagnostics.quoteCheck` saying why."""
    ids = [r["evidenceId"] for r in results]
    if not ids:
        return
    rows = {
        bid: (text, box)
        for bid, text, box in conn.execute(
            "SELECT block_id, text, box_holds_text FROM evidence_block "
            f"WHERE block_id IN ({','.join('?' * len(ids))})",
            ids,
        )
    }
    for r in results:
        text, box = rows.get(r["evidenceId"], ("", None))
        reason = verdict(r["quote"], text, box)
        r["quoteVerified"] = reason is None
        if reason:
            r["source"] = downgraded(r["source"], reason)
            r["diagnostics"] = {"quoteCheck": reason}
