"""Turn LightRAG chunks into citations that open the exact place (SPEC §10).

For each chunk: LightRAG `file_path` -> `knowledge_source` -> resource (unmapped,
stale, deleted or failed sources go to diagnostics, never to citations) -> the
chunk's span in the text we ingested (functions/citations/chunk_span.py: by offset, never by
resemblance) -> the blocks whose `charRange` overlaps that span -> the one the
query's meaning-bearing terms point to (functions/citations/block_choice.py) -> a citation
(functions/citations/model.py) whose `displayQuote` is cut from that block, so the
words a reader sees are the words at the place the link opens.

Invariants:
- only blocks of the chunk's span are cited or highlighted; `regions` are the span's
  blocks (mostly inside it), capped at MAX_REGIONS around the cited one, keeping every
  page of the chunk;
- a chunk that cannot be located in the ingested text (an index from before
  `knowledge_text`, or a text changed since ingest) is cited at file precision with
  its own words, `quoteVerified: false`; never a resembling block elsewhere;
- the stated precision is what the locator holds: a Word block that is not a body paragraph of its own
  (footnote, endnote, comment, text box, table row) carries the `paragraphIndex` of the paragraph it is
  attached to, which does not hold its words, so it is cited at `block` precision (its anchor, no
  paragraph number; `own_precision`);
- `quoteVerified` means every piece of `displayQuote` was found in the block's text and, for a
  PDF box, the build found the block's words inside the box (functions/search/quote_check.py); if that
  fails, precision drops (box -> page, paragraph/line -> file), no region is highlighted, and
  `diagnostics.quoteCheck` says why; a box without its words is never highlighted as a region.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import Any

from mnote_evidence.build.core.model import KIND_IMAGE
from mnote_evidence.build.core.text import normalise
from mnote_evidence.build.core.urls import page_url
from mnote_evidence.functions.citations.block_choice import Term, choose, meaning_terms, occurrences
from mnote_evidence.functions.citations.chunk_span import Span, SpanBlock, SpanBlocks
from mnote_evidence.functions.citations.model import Citation, citation_markdown
from mnote_evidence.functions.core.cleaning import clean_text, is_image_placeholder, quote_window
from mnote_evidence.functions.search.quote_check import downgraded, quote_holds, verdict

MAX_REGIONS = 50
REGION_MIN_OVERLAP = 0.5  # a block highlighted for a chunk has at least half of its text inside the chunk
EVIDENCE_CHARS = 200
DISPLAY_CHARS = 280
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _b36(data: bytes, n: int = 4) -> str:
    value = int.from_bytes(data[:8], "big")
    out = ""
    for _ in range(n):
        value, r = divmod(value, 36)
        out += _B36[r]
    return out


def emits_markup(kind: str, provider: str | None) -> bool:
    """Whose text can hold markup: notes (raw HTML blocks) and MinerU (HTML tables, <equation>)."""
    return kind == "markdown" or "mineru" in (provider or "")


def block_quotes(text: str, term: Term | None, markup: bool) -> tuple[str, str, bool]:
    """(display quote, evidence text, cleaning changed something): windows of a block's text, cleaned
    of known markup, centred on the term's first occurrence."""
    cleaned = clean_text(text, markdown=False, markup=markup)
    hits = occurrences(cleaned, term) if term else []
    centre = hits[0][0] if hits else 0
    return (
        quote_window(cleaned, [], DISPLAY_CHARS, centre),
        quote_window(cleaned, [], EVIDENCE_CHARS, centre),
        cleaned != " ".join(text.split()),
    )


def verified(quote: str, block_text: str, markup: bool) -> bool:
    """Every `…`-separated piece of the quote occurs in the block's text (functions/search/quote_check.py)."""
    return quote_holds(quote, block_text, markup)


OWN_PARAGRAPH = ("paragraph", "heading")  # Word blocks whose `paragraphIndex` is their own paragraph


def own_precision(loc: dict, kind: str) -> dict:
    """The block's locator at the precision it holds for this block: a Word note, comment, text box or
    table row is not paragraph `paragraphIndex` (that is its anchor paragraph), only its own block."""
    if loc.get("precision") != "paragraph" or kind in OWN_PARAGRAPH:
        return loc
    out = {k: v for k, v in loc.items() if k != "paragraphIndex"}
    out["precision"] = "block"
    return out


def regions_of(blocks: list[SpanBlock], span: Span, chosen: SpanBlock) -> list[SpanBlock]:
    """The span's blocks worth highlighting (at least half inside it), capped around `chosen` without
    dropping a page of the chunk. A cited block mostly outside the chunk is opened by its anchor, not
    highlighted as part of the chunk."""
    keep = [b for b in blocks if b.overlap(span) >= REGION_MIN_OVERLAP]
    if len(keep) <= MAX_REGIONS:
        return keep
    first_of_page = {}
    for b in keep:
        first_of_page.setdefault(b.page, b)
    must = {id(b) for b in first_of_page.values()} | ({id(chosen)} if chosen in keep else set())
    rest = sorted((b for b in keep if id(b) not in must), key=lambda b: abs(b.ordinal - chosen.ordinal))
    picked = must | {id(b) for b in rest[: max(0, MAX_REGIONS - len(must))]}
    return [b for b in keep if id(b) in picked]


class CitationMapper:
    def __init__(self, conn: sqlite3.Connection, query: str, site_base: str, provider: str = "lightrag"):
        self.conn, self.query, self.base, self.provider = conn, query, site_base, provider
        self.terms = meaning_terms(query)
        self.spans = SpanBlocks(conn)
        self._sources: dict[str, sqlite3.Row | None] = {}
        self.ids: set[str] = set()
        self.seen: set[str] = set()
        self.diagnostics: dict[str, list] = {"unmapped": [], "excluded": [], "duplicates": []}

    # -- lookups ----------------------------------------------------------------------
    def _source(self, file_path: str) -> sqlite3.Row | None:
        if file_path not in self._sources:
            self._sources[file_path] = self._read_source(file_path)
        return self._sources[file_path]

    def _read_source(self, file_path: str) -> sqlite3.Row | None:
        cur = self.conn.cursor()
        cur.row_factory = sqlite3.Row  # whatever the connection's own row factory is
        return cur.execute(
            "SELECT k.source_root_relative_path AS path, k.ocr_text_exposed, r.resource_id, r.kind, "
            "r.status, r.provider, r.page_url "
            "FROM knowledge_source k LEFT JOIN evidence_resource r "
            "ON r.source_root_relative_path = k.source_root_relative_path WHERE k.lightrag_file_path = ?",
            [file_path],
        ).fetchone()

    def source_path(self, file_path: str) -> str | None:
        """The workspace path a LightRAG file name stands for (None if it is not ours)."""
        row = self._source(file_path)
        return row["path"] if row else None

    def _details(self, block_id: str) -> tuple:
        """(bbox, section path, locator, box_holds_text) of the cited block."""
        r = self.conn.execute(
            "SELECT bbox_json, section_path_json, locator_json, box_holds_text FROM evidence_block "
            "WHERE block_id = ?",
            [block_id],
        ).fetchone()
        return json.loads(r[0]) if r[0] else None, json.loads(r[1]), json.loads(r[2]), r[3]

    def _boxes(self, blocks: list[SpanBlock]) -> dict[str, list[float]]:
        """The boxes of the highlighted blocks (those that have one)."""
        if not blocks:
            return {}
        marks = ",".join("?" * len(blocks))
        rows = self.conn.execute(
            f"SELECT block_id, bbox_json FROM evidence_block WHERE block_id IN ({marks}) "
            "AND bbox_json IS NOT NULL AND box_holds_text IS NOT 0",  # never a box without its words
            [b.block_id for b in blocks],
        ).fetchall()
        boxes = json.loads("[" + ",".join(r[1] for r in rows) + "]")  # one parse for all of them
        return {r[0]: box for r, box in zip(rows, boxes)}

    # -- mapping ----------------------------------------------------------------------
    def pick(self, blocks: list[SpanBlock], span: Span) -> tuple[SpanBlock | None, Term | None, str]:
        """The block of the span the query's terms point to; else the first substantial one."""
        parts = [(b, b.inside(span)) for b in blocks]
        parts = [(b, t) for b, t in parts if t.strip()]
        index, term = choose([(t, b.kind == "heading") for b, t in parts], self.terms)
        if index is not None:
            return parts[index][0], term, "term"
        body = [b for b, t in parts if b.overlap(span) >= REGION_MIN_OVERLAP and len(t.strip()) >= 20]
        chosen = body[0] if body else (parts[0][0] if parts else None)
        return chosen, None, "position"

    def citation(self, chunk: dict[str, Any], rank: int) -> Citation | None:
        file_path = str(chunk.get("file_path") or "")
        chunk_id = str(chunk.get("chunk_id") or "")
        raw = str(chunk.get("content") or "")
        src = self._source(file_path)
        if src is None:
            self.diagnostics["unmapped"].append(
                {"chunkId": chunk_id, "filePath": file_path, "reason": "not_in_registry"}
            )
            return None
        if src["resource_id"] is None or src["status"] != "ok":
            reason = "deleted" if src["resource_id"] is None else str(src["status"])
            self.diagnostics["excluded"].append(
                {"chunkId": chunk_id, "sourcePath": src["path"], "reason": reason}
            )
            return None
        if is_image_placeholder(raw):
            return self._build(src, chunk_id, raw, None, None, None, [], "placeholder", rank)
        text = self.spans.text(src["path"])
        span = self.spans.locate(src["path"], raw, chunk_id)
        if span is None:
            return self._build(
                src, chunk_id, raw, None, None, None, [], "unlocated" if text else "no_text", rank
            )
        blocks = self.spans.overlapping(src["resource_id"], text, span)
        block, term, how = self.pick(blocks, span)
        regions = regions_of(blocks, span, block) if block else []
        return self._build(src, chunk_id, raw, span, block, term, regions, how, rank)

    def _build(
        self,
        src,
        chunk_id: str,
        raw: str,
        span: Span | None,
        block: SpanBlock | None,
        term: Term | None,
        regions: list[SpanBlock],
        how: str,
        rank: int,
    ) -> Citation | None:
        path, kind = src["path"], src["kind"]
        markup = emits_markup(kind, src["provider"])
        cleaned = "" if block else clean_text(raw, markdown=kind == "markdown", markup=markup)
        if block:
            key = f"{path}|{block.block_id}"
        else:
            key = f"{path}|{chunk_id}|{hashlib.sha1(normalise(cleaned)[:200].encode()).hexdigest()[:12]}"
        if key in self.seen:
            self.diagnostics["duplicates"].append({"chunkId": chunk_id, "sourcePath": path})
            return None
        self.seen.add(key)
        used = regions if len(regions) > 1 else []
        bbox, section_path, loc, box = (
            self._details(block.block_id) if block else (None, [], {"precision": "file"}, None)
        )
        if block:
            loc = own_precision(loc, block.kind)
        precision = loc["precision"]
        terms = [t.text for t in self.terms]
        if block:
            shown = block.inside(span) if span else block.text
            display, evidence, changed = block_quotes(shown, term, markup)
            quote_source = "sidecar"
            reason = verdict(display, block.text, box, markup)
            ok = reason is None
            if not ok:  # never show a box that does not hold the words
                precision = {"bbox": "page", "paragraph": "file", "line": "file", "block": "file"}.get(
                    precision, precision
                )
                bbox, used = None, []
        else:
            display = quote_window(cleaned, terms, DISPLAY_CHARS)
            evidence = quote_window(cleaned, terms, EVIDENCE_CHARS)
            changed = cleaned != " ".join(raw.split())
            quote_source = "placeholder" if how == "placeholder" else ("chunk" if cleaned else "missing")
            ok, reason = False, "no_block"
        boxes = self._boxes(used)
        region_list = [
            {"page": b.page, "bbox": boxes[b.block_id], "blockId": b.block_id}
            for b in used
            if b.block_id in boxes
        ]
        pinned = block is not None and precision not in ("page", "file")
        page = src["page_url"] or page_url(path)  # the site's placement, as indexed (`urls.Pages`)
        if pinned:
            url = f"{page}#{block.block_id}"
            if len(region_list) > 1:
                url = page + f"?hl={','.join(r['blockId'] for r in region_list)}#{block.block_id}"
        elif block and precision == "page":
            url = page + f"#page-{block.page}"
        else:
            url = page
        out: Citation = {
            "citationId": self._id(kind, path, block.block_id if block else chunk_id),
            "provider": self.provider,
            "sourcePath": path,
            "resourceKind": kind,
            "headingPath": section_path,
            "displayQuote": display,
            "quoteVerified": ok,
            "locatorEvidenceText": evidence,
            "searchQuery": term.text if term else self.query,
            "quoteSource": quote_source,
            "locatorPrecision": precision,
            "locatorDegraded": precision in ("paragraph", "block", "page", "file"),
            "citationUrl": self.base + url,
            "relevanceScore": round(1 / (rank + 1), 4),
            "citationMarkdown": "",
            "diagnostics": {},  # type: ignore[typeddict-item]  # filled below
        }
        if block and block.page is not None and precision != "file":
            out["page"] = block.page
        if block and precision != "file":  # also at page precision: the block the quote was read from
            out["blockId"] = block.block_id
            if pinned and bbox is not None:
                out["bbox"] = bbox
            at = downgraded(loc, reason)  # its locator at the citation's precision
            out["source"] = {
                **at,
                "openAction": {**at["openAction"], "url": self.base + at["openAction"]["url"]},
            }
        if region_list:
            out["regions"] = region_list
        out["citationMarkdown"] = citation_markdown(out)
        placeholder = how == "placeholder"
        ocr_exposed = bool(src["ocr_text_exposed"]) or (kind == KIND_IMAGE and block is not None)
        out["diagnostics"] = {
            "rawReferenceMapped": True,
            "sidecarBlockMapped": block is not None,
            "blockMatch": how,
            "displayCleaned": changed,
            "locatorTextSource": "block" if block else "chunk",
            "ocrTextExposed": ocr_exposed and not placeholder,
            "quoteOnlyImagePlaceholder": placeholder,
            "rawQuote": raw[:1000],
            "chunkId": chunk_id,
        }
        if reason:
            out["diagnostics"]["quoteCheck"] = reason
        if span:
            out["diagnostics"]["chunkSpan"] = [span.start, span.end]
            if span.ambiguous:
                out["diagnostics"]["spanAmbiguous"] = True
        return out

    def _id(self, kind: str, path: str, anchor: str) -> str:
        salt = 0
        while True:
            digest = hashlib.sha256(f"{self.provider}|{path}|{anchor}|{salt}".encode()).digest()
            cid = ("IMG-" if kind == KIND_IMAGE else "") + _b36(digest)
            if cid not in self.ids:
                self.ids.add(cid)
                return cid
            salt += 1  # a collision inside this response: re-salt
