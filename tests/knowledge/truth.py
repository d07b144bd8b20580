"""Citation truth, checked independently of the mapper (SPEC §10).

Shared by the test suite and bench/citation_truth.py.

For each citation of a real `knowledge.query` answer, against the sidecars on disk (not the index):
- quote in block: every word of `displayQuote` is in the cited block's text (the source map's block);
- block in chunk: the block's charRange overlaps the chunk's span in the ingested text (found
  here with `str.find` in the sidecar text, its page furniture blanked as ingest does) and every
  word shown is in the chunk;
- never furniture: no cited or highlighted block has the source map's role `furniture`;
- regions in chunk: each highlighted block has at least half of its charRange inside that span;
- box holds text: for a PDF box, PyMuPDF's `page.get_textbox(bbox)` holds every word shown;
- precision not overstated: the unit `locatorPrecision` names holds every word shown, read from the
  original file by another reader: `bbox` the box (above; inside the image for an OCR'd image), `page` the
  PDF page's text, `paragraph` python-docx's body paragraph `paragraphIndex`, `line` the file's lines
  `lineRange`, `block` the cited block alone (no paragraph number, page or box claimed); the citation's
  `source` states the same precision;
- no page markers in any quote.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from mnote_evidence.build.core.text import CJK_RUN

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Comparable words: NFKC, lower-cased; CJK runs as bigrams (a quote window may cut a run)."""
    out = []
    for w in _WORD.findall(unicodedata.normalize("NFKC", text).lower()):
        if CJK_RUN.fullmatch(w) and len(w) > 1:
            out.extend(w[i : i + 2] for i in range(len(w) - 1))
        else:
            out.append(w)
    return out


def edge_trimmed(quote: str) -> list[str]:
    """Words of a quote; a word cut by a `…` edge may be partial, so it counts if it is a prefix/suffix."""
    return words(quote.replace("…", " "))


def share_in(quote: str, text: str) -> float:
    """Share of the quote's words found among the text's words (a word cut at a `…` edge, or a lone
    CJK character, may be part of a longer word there)."""
    got = edge_trimmed(quote)
    if not got:
        return 0.0
    have = set(words(text))
    flat = unicodedata.normalize("NFKC", text).lower()
    cut = {0, len(got) - 1} if "…" in quote else set()
    return sum(w in have or ((i in cut or len(w) == 1) and w in flat) for i, w in enumerate(got)) / len(got)


@dataclass
class Resource:
    text: str  # what was sent to LightRAG
    blocks: dict[str, dict]  # block id -> source-map block (with page)
    pdf: Path | None


def load_resource(root: Path, conn, path: str, cache: dict) -> Resource:
    if path not in cache:
        kind, artifact, source_map = conn.execute(
            "SELECT kind, artifact_path, source_map_path FROM evidence_resource "
            "WHERE source_root_relative_path = ?",
            [path],
        ).fetchone()
        raw = (root / (artifact or path)).read_bytes()
        text = raw.decode("utf-8-sig", errors="replace")
        doc = json.loads((root / source_map).read_text("utf-8"))
        blocks = {}
        for page in doc.get("pages", []):
            for b in page.get("blocks", []):
                blocks[b["id"]] = {**b, "page": page.get("page")}
        for b in doc.get("blocks", []):
            blocks[b["id"]] = b
        for b in blocks.values():  # what LightRAG received: page furniture blanked, offsets unchanged
            if b.get("role") == "furniture" and b.get("charRange"):
                a, z = b["charRange"]
                text = text[:a] + " " * (z - a) + text[z:]
        cache[path] = Resource(text, blocks, root / path if kind == "pdf" else None)
    return cache[path]


@dataclass
class Tally:
    citations: int = 0
    located: int = 0
    with_block: int = 0
    quote_in_block: int = 0  # every word
    quote_share: list[float] = field(default_factory=list)
    block_in_chunk: int = 0
    regions: int = 0
    regions_in_chunk: int = 0
    boxes: int = 0
    furniture: int = 0  # cited or highlighted blocks that are page furniture (must stay 0)
    boxes_hold_text: int = 0
    precision_held: int = 0  # of with_block: the unit the precision names holds the quote
    page_markers: int = 0
    failures: list[str] = field(default_factory=list)

    def rates(self) -> dict[str, float | int]:
        def pct(a: int, b: int) -> float:
            return round(100.0 * a / b, 1) if b else 100.0

        return {
            "citations": self.citations,
            "withBlock": self.with_block,
            "chunksLocatedPct": pct(self.located, self.citations),
            "quoteFullyInBlockPct": pct(self.quote_in_block, self.with_block),
            "blockInChunkPct": pct(self.block_in_chunk, self.with_block),
            "regions": self.regions,
            "regionsInChunkPct": pct(self.regions_in_chunk, self.regions),
            "pdfBoxes": self.boxes,
            "boxesHoldTextPct": pct(self.boxes_hold_text, self.boxes),
            "precisionHeldPct": pct(self.precision_held, self.with_block),
            "quotesWithPageMarkers": self.page_markers,
            "furnitureCited": self.furniture,
        }


def _overlap(char_range: list[int] | None, span: tuple[int, int]) -> float:
    if not char_range:
        return 0.0
    a, b = char_range
    return max(0, min(b, span[1]) - max(a, span[0])) / max(1, b - a)


def _docx_paragraphs(path: Path, cache: dict) -> list[str]:
    """Body paragraphs of a Word file (the `w:p` children of `w:body`, empty ones included, as python-docx
    counts them), each with every `w:t` it holds: python-docx's `text` leaves out tracked insertions
    (`w:ins`), and the package is read as XML so a file python-docx refuses is read too."""
    if path not in cache:
        import zipfile

        from lxml import etree

        w = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
        with zipfile.ZipFile(path) as z:
            body = etree.fromstring(z.read("word/document.xml")).find(f"{w}body")
        cache[path] = ["".join(t.text or "" for t in p.iter(f"{w}t")) for p in body.iterchildren(f"{w}p")]
    return cache[path]


def precision_holds(c: dict, res: Resource, path: Path, pdfs: dict) -> bool:
    """The unit the citation's precision names holds every word shown (module docstring)."""
    precision = c["locatorPrecision"]
    if c.get("source", {}).get("precision", precision) != precision:
        return False
    quote = c["displayQuote"]
    if precision == "bbox":
        if "bbox" not in c or "page" not in c:
            return False
        if res.pdf is None:  # an OCR'd image: the box lies inside the picture
            from PIL import Image

            with Image.open(path) as im:
                x0, y0, x1, y1 = c["bbox"]
                return 0 <= x0 < x1 <= im.width and 0 <= y0 < y1 <= im.height
        return True  # the box's words are checked against PyMuPDF in `check`
    if precision == "page":
        if res.pdf is None or "page" not in c:
            return False
        if res.pdf not in pdfs:
            import pymupdf

            pdfs[res.pdf] = pymupdf.open(res.pdf)
        return share_in(quote, pdfs[res.pdf][c["page"] - 1].get_text()) == 1.0
    source = c.get("source", {})
    if precision == "paragraph":
        index = source.get("paragraphIndex")
        paragraphs = _docx_paragraphs(path, pdfs)
        return (
            index is not None
            and 1 <= index <= len(paragraphs)
            and share_in(quote, paragraphs[index - 1]) == 1.0
        )
    if precision == "block":  # the anchor only: the block itself holds the quote (checked in `check`)
        return "paragraphIndex" not in source and "page" not in c and "bbox" not in c
    if precision == "line":
        a, b = source.get("lineRange") or (0, -1)
        lines = path.read_text("utf-8", errors="replace").splitlines()[a - 1 : b]
        return bool(lines) and share_in(quote, "\n".join(lines)) == 1.0
    return True  # file: nothing finer is claimed


def check(
    root: Path, conn, citations: list[dict], chunks: dict[str, str], tally: Tally, cache: dict, pdfs: dict
) -> None:
    """Add one answer's citations to `tally`; `chunks` maps chunk id -> full chunk text from /query/data."""
    import pymupdf

    for c in citations:
        tally.citations += 1
        if "<!--" in c["displayQuote"] or "-->" in c["displayQuote"]:
            tally.page_markers += 1
        chunk = chunks.get(c["diagnostics"]["chunkId"])
        res = load_resource(root, conn, c["sourcePath"], cache)
        core = chunk.strip().strip("\ufffd").strip() if chunk else ""
        start, slack = (res.text.find(core), 0) if core else (-1, 0)
        if start < 0 and core:
            # LightRAG unescapes entities and drops control characters: anchor on the chunk's first
            # 100 characters and allow a little slack at the end
            start, slack = res.text.find(core[:100]), 32
        if start >= 0:
            tally.located += 1
        if "blockId" not in c:
            continue
        tally.with_block += 1
        block = res.blocks[c["blockId"]]
        tally.furniture += sum(
            res.blocks[b].get("role") == "furniture"
            for b in [c["blockId"]] + [r["blockId"] for r in c.get("regions", [])]
        )
        share = share_in(c["displayQuote"], block["text"])
        tally.quote_share.append(share)
        tally.quote_in_block += share == 1.0
        if share < 1.0:
            tally.failures.append(
                f"quote not in block: {c['sourcePath']} {c['blockId']}: {c['displayQuote'][:80]!r}"
            )
        span = (start, start + len(core) + slack) if start >= 0 else (-1, -1)
        inside = (
            _overlap(block.get("charRange"), span) > 0 and share_in(c["displayQuote"], chunk or "") == 1.0
        )
        tally.block_in_chunk += inside
        if not inside:
            tally.failures.append(f"block outside chunk: {c['sourcePath']} {c['blockId']}")
        for r in c.get("regions", []):
            tally.regions += 1
            ok = _overlap(res.blocks[r["blockId"]].get("charRange"), span) >= 0.5
            tally.regions_in_chunk += ok
            if not ok:
                tally.failures.append(f"region outside chunk: {c['sourcePath']} {r['blockId']}")
        box_ok = True
        if res.pdf is not None and "bbox" in c:
            tally.boxes += 1
            if res.pdf not in pdfs:
                pdfs[res.pdf] = pymupdf.open(res.pdf)
            page = pdfs[res.pdf][c["page"] - 1]
            under = page.get_textbox(pymupdf.Rect(c["bbox"]))
            if block.get("type") == "ocr_line" and not under.strip():
                # an OCR line of a page without a text layer: its words are read from the picture, so the
                # box must lie on the page (PyMuPDF has nothing to read there)
                under = c["displayQuote"] if pymupdf.Rect(c["bbox"]) in page.rect else ""
            rejoined = re.sub(r"(\w)-\n(\w)", r"\1\2", under)  # "characteris-\ntics": one word in the block
            rejoined = re.sub(r"([\u3400-\u9fff])\s*\n\s*([\u3400-\u9fff])", r"\1\2", rejoined)  # 可以\n安全
            ok = share_in(c["displayQuote"], under + "\n" + rejoined) == 1.0
            tally.boxes_hold_text += ok
            box_ok = ok
            if not ok:
                tally.failures.append(
                    f"box without the quote: {c['sourcePath']} p.{c['page']} {c['blockId']}"
                )
        held = box_ok and precision_holds(c, res, root / c["sourcePath"], pdfs)
        tally.precision_held += held
        if not held:
            tally.failures.append(
                f"precision overstated: {c['sourcePath']} {c['blockId']} {c['locatorPrecision']}: "
                f"{c['displayQuote'][:60]!r}"
            )
