"""Turn LightRAG chunks into citations that open the exact place (SPEC §10).

For each chunk: LightRAG `file_path` -> `knowledge_source` -> resource (unmapped,
stale, deleted or failed sources go to diagnostics, never to citations) ->
the evidence blocks the chunk covers (a block is covered when the start of its
whitespace-folded text occurs in the whitespace-folded chunk) -> the best block for the
query: the one whose query-term occurrences score highest, where an
occurrence embedded in a longer CJK compound counts less (吡咯烷 inside
N-甲基吡咯烷酮), so a short term lands on its own paragraph. Chunks that cover
no block fall back to FTS inside the resource, then to file precision.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import sqlite3
from dataclasses import dataclass
from typing import Any

from mnote_evidence.build.model import KIND_IMAGE
from mnote_evidence.build.text import is_cjk, normalise, query_terms
from mnote_evidence.build.urls import page_url
from mnote_evidence.functions.cleaning import clean_text, is_image_placeholder, quote_window
from mnote_evidence.functions.fts import flank_weight, search_blocks

COVER_PREFIX = 40  # chars of a block's start that must occur in the chunk
MIN_COVER = 6  # shorter blocks ("吗啉" as a heading) are too ambiguous to count as covered
MAX_REGIONS = 50
HEADING_WEIGHT = 0.5
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass
class BlockRow:
    """A block of a cited resource: just what coverage and scoring need."""

    block_id: str
    kind: str
    text: str
    ordinal: int
    page: int | None

    @property
    def head(self) -> str:
        """The start of the block's text with whitespace folded, as it must appear in a covering chunk.

        Chunk and block come from the same parsed text, so only spacing can differ (a chunker
        re-flows lines); block texts are almost always single-spaced already."""
        head = self.text[: COVER_PREFIX * 2]
        if "  " in head or "\n" in head or "\t" in head:
            head = " ".join(head.split())
        return head[:COVER_PREFIX]


def fold(text: str) -> str:
    return " ".join(text.split())


def term_score(text: str, terms: list[str]) -> float:
    """Occurrences of the query terms; a CJK occurrence flanked by CJK characters counts less."""
    lower = text.lower()
    score = 0.0
    for term in terms:
        t = term.lower()
        start = lower.find(t)
        while start >= 0:
            if is_cjk(t[0]):
                score += flank_weight(text, start, start + len(t))
            else:
                score += 1.0
            start = lower.find(t, start + 1)
    return score


def _b36(data: bytes, n: int = 4) -> str:
    value = int.from_bytes(data[:8], "big")
    out = ""
    for _ in range(n):
        value, r = divmod(value, 36)
        out += _B36[r]
    return out


class CitationMapper:
    def __init__(self, conn: sqlite3.Connection, query: str, site_base: str, provider: str = "lightrag"):
        self.conn, self.query, self.base, self.provider = conn, query, site_base, provider
        self.terms = query_terms(query)
        self._blocks: dict[str, list[BlockRow]] = {}
        self.ids: set[str] = set()
        self.seen: set[str] = set()
        self.diagnostics: dict[str, list] = {"unmapped": [], "excluded": [], "duplicates": []}

    # -- lookups ----------------------------------------------------------------------
    def _source(self, file_path: str) -> sqlite3.Row | None:
        cur = self.conn.cursor()
        cur.row_factory = sqlite3.Row  # whatever the connection's own row factory is
        return cur.execute(
            "SELECT k.source_root_relative_path AS path, k.ocr_text_exposed, r.resource_id, r.kind, r.status "
            "FROM knowledge_source k LEFT JOIN evidence_resource r "
            "ON r.source_root_relative_path = k.source_root_relative_path WHERE k.lightrag_file_path = ?",
            [file_path]).fetchone()

    def source_path(self, file_path: str) -> str | None:
        """The workspace path a LightRAG file name stands for (None if it is not ours)."""
        row = self._source(file_path)
        return row["path"] if row else None

    def _resource_blocks(self, resource_id: str) -> list[BlockRow]:
        if resource_id not in self._blocks:
            self._blocks[resource_id] = [
                BlockRow(*r) for r in self.conn.execute("SELECT block_id, kind, text, ordinal, page FROM evidence_block "
                                           "WHERE resource_id = ? ORDER BY ordinal", [resource_id])]
        return self._blocks[resource_id]

    def _details(self, block_ids: list[str]) -> dict[str, tuple]:
        """(bbox, section path, locator) of the few blocks a citation uses: one query, parsed once."""
        marks = ",".join("?" * len(block_ids))
        return {r[0]: (json.loads(r[1]) if r[1] else None, json.loads(r[2]), json.loads(r[3]))
                for r in self.conn.execute("SELECT block_id, bbox_json, section_path_json, locator_json "
                                           f"FROM evidence_block WHERE block_id IN ({marks})", block_ids)}

    # -- mapping ----------------------------------------------------------------------
    def covered(self, resource_id: str, chunk_norm: str) -> list[BlockRow]:
        """Blocks whose text starts inside the chunk; a very short block only if it holds a query term."""
        return [b for b in self._resource_blocks(resource_id) if b.head in chunk_norm
                and (len(b.text) >= MIN_COVER or term_score(b.text, self.terms) > 0)]

    def best_block(self, resource_id: str, path: str, covered: list[BlockRow]) -> tuple[BlockRow | None, str]:
        # A heading that is just the term ("吗啉") is weaker evidence than the paragraph under it.
        scored = [(term_score(b.text, self.terms) * (HEADING_WEIGHT if b.kind == "heading" else 1.0), -b.ordinal, b)
                  for b in covered]
        scored = [s for s in scored if s[0] > 0]
        if scored:
            return max(scored, key=lambda s: s[:2])[2], "block"
        if covered:
            return covered[0], "block"
        try:
            hits = [h for h in search_blocks(self.conn, self.query, 5, path_prefix=path) if h.resource_path == path]
        except Exception:  # a query with no searchable words: nothing to fall back to
            hits = []
        if hits:
            by_id = {b.block_id: b for b in self._resource_blocks(resource_id)}
            return by_id.get(hits[0].block_id), "fts"
        return None, "chunk"

    def citation(self, chunk: dict[str, Any], rank: int) -> dict[str, Any] | None:
        file_path = str(chunk.get("file_path") or "")
        chunk_id = str(chunk.get("chunk_id") or "")
        raw = str(chunk.get("content") or "")
        src = self._source(file_path)
        if src is None:
            self.diagnostics["unmapped"].append({"chunkId": chunk_id, "filePath": file_path, "reason": "not_in_registry"})
            return None
        if src["resource_id"] is None or src["status"] != "ok":
            reason = "deleted" if src["resource_id"] is None else str(src["status"])
            self.diagnostics["excluded"].append({"chunkId": chunk_id, "sourcePath": src["path"], "reason": reason})
            return None
        cleaned = clean_text(raw)
        placeholder = is_image_placeholder(raw)
        covered = self.covered(src["resource_id"], fold(cleaned))
        block, how = self.best_block(src["resource_id"], src["path"], covered)
        return self._build(src, chunk_id, raw, cleaned, placeholder, block, how, covered, rank)

    def _build(self, src, chunk_id, raw, cleaned, placeholder, block, how, covered, rank) -> dict[str, Any] | None:
        path, kind = src["path"], src["kind"]
        fingerprint = hashlib.sha1(normalise(cleaned)[:200].encode()).hexdigest()[:12]
        key = f"{path}|{block.block_id}" if block else f"{path}|{chunk_id}|{fingerprint}"
        if key in self.seen:
            self.diagnostics["duplicates"].append({"chunkId": chunk_id, "sourcePath": path})
            return None
        self.seen.add(key)
        used = covered[:MAX_REGIONS] if len(covered) > 1 else []
        details = self._details([b.block_id for b in used] + ([block.block_id] if block else []))
        bbox, section_path, loc = details[block.block_id] if block else (None, [], {"precision": "file"})
        precision = loc["precision"]
        regions = [{"page": b.page, "bbox": details[b.block_id][0], "blockId": b.block_id} for b in used
                   if details[b.block_id][0] is not None]
        if block:
            url = page_url(path, block.block_id)
            if len({r["page"] for r in regions}) > 1 or len(regions) > 1:
                ids = ",".join(r["blockId"] for r in regions)
                url = page_url(path) + f"?hl={ids}#{block.block_id}"
        else:
            url = page_url(path)
        if placeholder:
            display, quote_source = quote_window(cleaned, self.terms), "placeholder"
        elif cleaned:
            display, quote_source = quote_window(cleaned, self.terms), "chunk"
        elif block:
            display, quote_source = quote_window(block.text, self.terms), "sidecar"
        else:
            display, quote_source = "", "missing"
        evidence = quote_window(clean_text(block.text), self.terms, 200) if block else quote_window(cleaned, self.terms, 200)
        search = next((t for t in self.terms if block and t.lower() in block.text.lower()), self.query)
        cid = self._id(kind, path, block.block_id if block else chunk_id)
        out: dict[str, Any] = {
            "citationId": cid, "provider": self.provider, "sourcePath": path, "resourceKind": kind,
            "headingPath": section_path, "displayQuote": display,
            "locatorEvidenceText": evidence, "searchQuery": search, "quoteSource": quote_source,
            "locatorPrecision": precision, "locatorDegraded": precision in ("paragraph", "file"),
            "citationUrl": self.base + url, "relevanceScore": round(1 / (rank + 1), 4),
        }
        if block:
            out["blockId"] = block.block_id
            if block.page is not None:
                out["page"] = block.page
            if bbox is not None:
                out["bbox"] = bbox
            out["source"] = {**loc, "openAction": {**loc["openAction"], "url": self.base + loc["openAction"]["url"]}}
        if regions:
            out["regions"] = regions
        out["citationMarkdown"] = self._markdown(out)
        ocr_exposed = bool(src["ocr_text_exposed"]) or (kind == KIND_IMAGE and block is not None)
        out["diagnostics"] = {
            "rawReferenceMapped": True, "sidecarBlockMapped": block is not None, "blockMatch": how,
            "displayCleaned": cleaned != " ".join(raw.split()), "locatorTextSource": "block" if block else "chunk",
            "ocrTextExposed": ocr_exposed and not placeholder, "quoteOnlyImagePlaceholder": placeholder,
            "rawQuote": raw[:1000], "chunkId": chunk_id,
        }
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

    @staticmethod
    def _markdown(c: dict[str, Any]) -> str:
        parts = [f"[{c['citationId']}] {posixpath.basename(c['sourcePath'])}"]
        if "page" in c:
            parts.append(f"p.{c['page']}")
        loc = c.get("source", {})
        if c["locatorPrecision"] == "paragraph":
            parts.append(f"¶{loc.get('paragraphIndex')} (paragraph)")
        elif c["locatorPrecision"] == "line" and loc.get("lineRange"):
            a, b = loc["lineRange"]
            parts.append(f"line {a}" if a == b else f"lines {a}–{b}")
        elif c["locatorPrecision"] == "file":
            parts.append("(whole file: no passage matched)")
        if c["headingPath"]:
            parts.append(" > ".join(c["headingPath"]))
        text = " · ".join(parts).replace("]", "\\]").replace("[", "\\[")
        return f"[{text}]({c['citationUrl']})"
