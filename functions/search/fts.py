"""Full-text search over evidence blocks, ranked by bm25 and query-term precision.

CJK text has no word boundaries for the index to see, so bm25 ranks a block that only holds a
longer compound (吡咯烷 inside N-甲基吡咯烷酮) as high as one about the term itself. The
candidates FTS picks are re-weighted per CJK term occurrence: one flanked by CJK characters on
both sides is most likely part of a longer word and counts least (`flank_weight`, the one
definition of that rule; citation mapping uses it too).

`rank` is the one ranking (SPEC §9), in tiers: blocks holding the query's words as an exact phrase, then
blocks holding every word, then pages (sections for files without pages) holding every word across
their blocks (`unit_hits`). Each block tier: bm25 inside the FTS index, the window's rows looked up by
id and filtered (`Filters`), then re-ranked in fixed chunks so that pages of one query never repeat or
skip a result, ties in document order (path, page, position). `count_in_resource` counts one file's
matches inside its rowid range (a file's blocks are written together).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass

from mnote_evidence.build.core.model import ROLE_BODY, EvidenceLocator
from mnote_evidence.build.core.text import (
    fts_any_query,
    fts_query,
    is_cjk,
    meaning_terms,
    nfkc,
    query_terms,
)

CANDIDATES_PER_RESULT = 5
MIN_CANDIDATES = 50  # re-ranked together (a chunk): max(this, topK x CANDIDATES_PER_RESULT)
RANK_WINDOW = 250  # bm25's best matches joined and filtered at first: also how deep `total` counts exactly
MAX_WINDOW = 50_000  # beyond this, rank all matches at once (a very selective filter)
_FLANK_WEIGHT = (1.0, 0.6, 0.25)  # by number of CJK neighbours (0, 1, 2)
MATCH_ALL, MATCH_ANY = "all", "any"  # every term in one block; any of the meaning-bearing terms
UNIT_TERM_CAP = 1000  # page matching reads each word's blocks; a word in more blocks leaves it out
LEVEL_BLOCK, LEVEL_PAGE, LEVEL_SECTION = "block", "page", "section"


def match_of(query: str, mode: str, prefix_last: bool = False) -> tuple[str, list[str]]:
    """(the FTS expression, the terms that highlight and re-rank) of `query` matched in `mode`."""
    if mode == MATCH_ANY:
        return fts_any_query(query), meaning_terms(query)
    return fts_query(query, prefix_last), query_terms(query)


def phrase_of(query: str, prefix_last: bool = False) -> str | None:
    """The FTS phrase of a query of two or more words and no CJK (a CJK run is matched as a phrase of
    its bigrams already), or None: its words adjacent and in order, as `fts_query` tokenizes them."""
    terms = fts_query(query, prefix_last).split(" AND ")
    if len(terms) < 2 or any(is_cjk(t[1]) for t in terms):
        return None
    words = [t.split('"')[1] for t in terms]
    return '"' + " ".join(words) + '"' + (" *" if terms[-1].endswith(" *") else "")


@dataclass
class Hit:
    block_id: str
    resource_path: str
    resource_kind: str
    text: str
    score: float
    stored_locator: EvidenceLocator | str  # the locator, or its JSON (parsed when first read)
    role: str = ROLE_BODY
    ordinal: int = 0  # position in its file
    page: int | None = None
    level: str = LEVEL_BLOCK  # a page or section hit: the query's words are across its blocks
    also: list[str] | None = None  # a page or section hit: its other blocks holding some of the words

    @property
    def locator(self) -> EvidenceLocator:
        if isinstance(self.stored_locator, str):
            self.stored_locator = json.loads(self.stored_locator)
        return self.stored_locator


def flank_weight(text: str, start: int, end: int) -> float:
    """Weight of a CJK term occurring at text[start:end]: 1.0 standing alone, less per CJK
    neighbour (a neighbour on each side most likely makes it part of a longer word)."""
    flanked = (start > 0 and is_cjk(text[start - 1])) + (end < len(text) and is_cjk(text[end]))
    return _FLANK_WEIGHT[flanked]


def term_precision(text: str, terms: list[str]) -> float:
    """1.0 when every CJK term appears standing alone somewhere; less when only inside compounds. `text`
    is read as the index holds it (NFKC), the form the query's terms are in (and the static index's
    flank bits are computed from)."""
    text = nfkc(text)
    weights = []
    for term in terms:
        if not is_cjk(term[0]):
            continue
        best, start = 0.0, text.find(term)
        while start >= 0 and best < 1.0:
            best = max(best, flank_weight(text, start, start + len(term)))
            start = text.find(term, start + 1)
        weights.append(best)
    return sum(weights) / len(weights) if weights else 1.0


@dataclass
class Filters:
    """Which matches a search may return (besides `ok` status, always required)."""

    kinds: list[str] | None = None
    path_prefix: str | None = None  # a raw prefix of the workspace path
    folder: str | None = None  # a folder: "研究" and "研究/" match 研究/… but never 研究2/…
    resource_path: str | None = None  # exactly this file (a group's "more in this file")
    include_furniture: bool = False

    def passes(self, path: str, kind: str, status: str, role: str) -> bool:
        return (
            status == "ok"
            and (self.include_furniture or role == ROLE_BODY)
            and (not self.kinds or kind in self.kinds)
            and (not self.path_prefix or path.startswith(self.path_prefix))
            and (not self.folder or path.startswith(self.folder.rstrip("/") + "/"))
            and (not self.resource_path or path == self.resource_path)
        )


@dataclass
class Ranked:
    """The matches passing the filters, best first, as deep as asked (`hits`); what is known of the rest."""

    hits: list[Hit]
    total: int  # matches passing the filters among those ranked
    exhausted: bool  # every FTS match was ranked: `total` is exact
    match: str  # the FTS expression (for follow-up counts)
    per_path: Counter  # passing matches per file among those ranked
    terms: list[str]  # what highlights the hits (`match_of`)


def chunk_size(top_k: int) -> int:
    """How many bm25 candidates are re-ranked together: fixed for a query and topK, so pages agree."""
    return max(MIN_CANDIDATES, top_k * CANDIDATES_PER_RESULT)


def rank(
    conn: sqlite3.Connection,
    query: str,
    depth: int,
    chunk: int,
    filters: Filters,
    documents: int | None = None,
    per_document: int = 1,
    mode: str = MATCH_ALL,
    prefix_last: bool = False,
) -> Ranked:
    """The first `depth` matches passing `filters` (or all there are), in the final order: the tiers one
    after another, each ranked by `_rank_tier`; a tier is reached once the ones above it are exhausted
    (every match of theirs ranked), so a deeper request only adds results. In `MATCH_ALL`: blocks holding
    the exact phrase (`phrase_of`), blocks holding every term otherwise, then page and section hits
    (`unit_hits`) once every block tier is exhausted. `total` adds the tiers' totals; `exhausted` holds
    when every tier's is. `mode` and `prefix_last`: `match_of`. Raises `build.text.QueryError` for an
    unusable query."""
    match, terms = match_of(query, mode, prefix_last)
    phrase = phrase_of(query, prefix_last) if mode == MATCH_ALL else None
    tiers = [phrase, f"({match}) NOT {phrase}"] if phrase else [match]
    hits: list[Hit] = []
    total, exhausted, per_path = 0, True, Counter()
    for expr in tiers:
        left = max(0, depth - len(hits)) if exhausted else 0
        part = _rank_tier(conn, expr, terms, left, chunk, filters, documents, per_document)
        if exhausted:
            hits += part.hits
        total += part.total
        exhausted = exhausted and part.exhausted
        per_path += part.per_path
    # a question (stopwords among its words) is not matched across a page: its stopwords are on every
    # page; the any-word fallback ranks it by its meaning-bearing words
    if exhausted and mode == MATCH_ALL and len(meaning_terms(query)) == len(query_terms(query)):
        units = unit_hits(conn, fts_query(query, prefix_last).split(" AND "), terms, filters)
        hits += units
        total += len(units)
        per_path += Counter(h.resource_path for h in units)
    return Ranked(hits, total, exhausted, match, per_path, terms)


def _rank_tier(
    conn: sqlite3.Connection,
    match: str,
    terms: list[str],
    depth: int,
    chunk: int,
    filters: Filters,
    documents: int | None,
    per_document: int,
) -> Ranked:
    """One tier of `rank`: the first `depth` blocks matching `match` and passing `filters`.

    bm25 orders the matches inside the FTS index (with a LIMIT); only light columns are looked up for
    the ranked window and filtered here, text and locators are read for the rows returned.
    The order is bm25's cut into consecutive chunks of `chunk` passing matches, each chunk re-ranked by
    term precision with ties in document order (path, page, position): a deeper request only adds
    chunks, so pages of the same query never repeat or skip a result. When filters leave too few,
    the window widens (x8, then every match). With `documents`, `depth` is ignored: the window widens
    until it holds that many distinct files (or every match), and `hits` are the fewest whole chunks
    holding each of those files' first `per_document` matches in the window."""
    want = -(-depth // chunk) * chunk  # whole chunks
    window = max(RANK_WINDOW, want)
    while True:
        rows = _ranked_rows(conn, match, window)
        passing = [r for r in rows if filters.passes(r[2], r[3], r[4], r[5])]
        exhausted = window < 0 or len(rows) < window
        if documents is not None:
            want, found = _rows_for_documents(passing, documents, per_document, chunk)
        else:
            found = len(passing) >= want
        if exhausted or found:
            break
        window = window * 8 if window * 8 <= MAX_WINDOW else -1  # -1: rank every match (no LIMIT)
    chosen = passing[:want]
    texts = _texts(conn, [r[0] for r in chosen])
    hits: list[Hit] = []
    for at in range(0, len(chosen), chunk):
        part = []
        for rowid, score, path, kind, _, role, ordinal, page in chosen[at : at + chunk]:
            block_id, text, loc = texts[rowid]
            part.append(
                Hit(
                    block_id,
                    path,
                    kind,
                    text,
                    round(-score * (0.5 + term_precision(text, terms)), 6),
                    loc,
                    role,
                    ordinal,
                    page,
                )
            )
        # Equal scores (the same sentence on many pages) in document order: by position, not block id,
        # whose "-2" and "-10" suffixes sort as text.
        part.sort(key=lambda h: (-h.score, h.resource_path, h.page or 0, h.ordinal, h.block_id))
        hits += part
    return Ranked(hits, len(passing), exhausted, match, Counter(r[2] for r in passing), terms)


def _rows_for_documents(
    passing: list[tuple], documents: int, per_document: int, chunk: int
) -> tuple[int, bool]:
    """(rows in the fewest whole chunks holding the first `per_document` matches in `passing` of each
    of its first `documents` files, whether `passing` holds that many files)."""
    counts: dict[str, int] = {}
    end = 0
    for n, row in enumerate(passing):
        seen = counts.get(row[2])
        if seen is None and len(counts) == documents:
            continue
        if (seen or 0) < per_document:
            counts[row[2]] = (seen or 0) + 1
            end = n + 1
    return -(-end // chunk) * chunk, len(counts) >= documents


def search_blocks(
    conn: sqlite3.Connection,
    query: str,
    top_k: int = 10,
    kinds: list[str] | None = None,
    path_prefix: str | None = None,
    include_furniture: bool = False,
) -> list[Hit]:
    """The `top_k` best hits among `ok` resources; page furniture (running headers, footers, page
    numbers) only with `include_furniture`. Raises `build.text.QueryError` for an unusable query."""
    filters = Filters(kinds=kinds, path_prefix=path_prefix, include_furniture=include_furniture)
    return rank(conn, query, top_k, chunk_size(top_k), filters).hits[:top_k]


def _ranked_rows(conn, match: str, window: int) -> list[tuple]:
    """(rowid, bm25, path, kind, status, role, ordinal, page) of the `window` best FTS matches, best
    first (ties by rowid). bm25 ranks inside the FTS index alone; the window's rows are then looked up
    by id in a second statement (docs/performance.md)."""
    ranked = conn.execute(
        "SELECT rowid, bm25(evidence_fts) AS rank FROM evidence_fts WHERE evidence_fts MATCH ? "
        "ORDER BY rank, rowid LIMIT ?",
        [match, window],
    ).fetchall()
    info = _block_info(conn, [rowid for rowid, _ in ranked])
    return [(rowid, rank, *info[rowid][:6]) for rowid, rank in ranked if rowid in info]


def _block_info(conn, rowids: list[int]) -> dict[int, tuple]:
    """rowid -> (path, kind, status, role, ordinal, page, resource_id, section_id): light columns only."""
    info: dict[int, tuple] = {}
    for at in range(0, len(rowids), 500):
        part = rowids[at : at + 500]
        for rowid, *rest in conn.execute(
            "SELECT b.id, r.source_root_relative_path, r.kind, r.status, b.role, b.ordinal, b.page, "
            "b.resource_id, b.section_id FROM evidence_block_row b "
            "JOIN evidence_resource r ON r.resource_id = b.resource_id "
            f"WHERE b.id IN ({','.join('?' * len(part))})",
            part,
        ):
            info[rowid] = tuple(rest)
    return info


def unit_hits(conn, term_matches: list[str], terms: list[str], filters: Filters) -> list[Hit]:
    """Pages (for files without pages: sections) holding every one of `term_matches` (the FTS
    expressions of the query's terms) across their blocks passing `filters`, none of which holds them
    all (that block is a hit of its own), in order: fewer blocks holding the words first, then document
    order. Each is a hit at its best block: the one holding the most of the terms, then the rarest (the
    fewest blocks in the index hold them), then the first; `also` lists the unit's other blocks holding
    some, in document order. Every term's blocks are read once (rowids from the FTS index, then the light
    columns of those in the files the rarest term is in); a term in more than `UNIT_TERM_CAP` blocks
    leaves no unit hits."""
    if len(term_matches) < 2:
        return []
    sets: list[list[int]] = []
    for expr in term_matches:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM evidence_fts WHERE evidence_fts MATCH ? ORDER BY rowid LIMIT ?",
                [expr, UNIT_TERM_CAP + 1],
            )
        ]
        if len(ids) > UNIT_TERM_CAP or not ids:
            return []
        sets.append(ids)
    rarest = min(range(len(sets)), key=lambda n: (len(sets[n]), n))
    info = _block_info(conn, sets[rarest])
    spans = _resource_spans(conn, sorted({row[6] for row in info.values()}))
    wanted = sorted({i for ids in sets for i in ids if any(lo <= i <= hi for lo, hi in spans)} - set(info))
    info.update(_block_info(conn, wanted))
    held: dict[int, list[int]] = {}  # rowid -> the terms it holds (indexes into term_matches)
    for n, ids in enumerate(sets):
        for i in ids:
            row = info.get(i)
            if row is not None and filters.passes(*row[:4]):
                held.setdefault(i, []).append(n)
    units: dict[tuple, list[int]] = {}
    for i in sorted(held):
        row = info[i]
        key = (row[6], LEVEL_PAGE, row[5]) if row[5] is not None else (row[6], LEVEL_SECTION, row[7] or "")
        units.setdefault(key, []).append(i)
    sizes = [len(ids) for ids in sets]
    found: list[tuple] = []
    for key, ids in units.items():
        covered = {n for i in ids for n in held[i]}
        if len(covered) < len(sets) or any(len(held[i]) == len(sets) for i in ids):
            continue
        best = min(ids, key=lambda i: (-len(held[i]), sum(sizes[n] for n in held[i]), info[i][4]))
        found.append((len(ids), info[best][0], info[best][5] or 0, info[best][4], best, key, ids))
    found.sort(key=lambda f: f[:4])
    texts = _texts(conn, [f[4] for f in found])
    also_ids = _block_ids(conn, [i for f in found for i in f[6] if i != f[4]])
    hits: list[Hit] = []
    for count, path, _, ordinal, best, key, ids in found:
        block_id, text, loc = texts[best]
        row = info[best]
        hits.append(
            Hit(
                block_id,
                path,
                row[1],
                text,
                round(len(held[best]) / len(sets) / count, 6),
                loc,
                row[3],
                ordinal,
                row[5],
                key[1],
                [also_ids[i] for i in ids if i != best],
            )
        )
    return hits


def _resource_spans(conn, resource_ids: list[str]) -> list[tuple[int, int]]:
    """The rowid range of each resource's blocks (a file's blocks are written together)."""
    out = []
    for rid in resource_ids:
        lo, hi = conn.execute(
            "SELECT min(id), max(id) FROM evidence_block_row WHERE resource_id = ?", [rid]
        ).fetchone()
        if lo is not None:
            out.append((lo, hi))
    return out


def _block_ids(conn, rowids: list[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for at in range(0, len(rowids), 500):
        part = rowids[at : at + 500]
        out.update(
            conn.execute(
                f"SELECT id, block_id FROM evidence_block_row WHERE id IN ({','.join('?' * len(part))})", part
            ).fetchall()
        )
    return out


def _texts(conn, rowids: list[int]) -> dict[int, tuple[str, str, str]]:
    out: dict[int, tuple[str, str, str]] = {}
    for at in range(0, len(rowids), 500):
        part = rowids[at : at + 500]
        for rowid, block_id, text, loc in conn.execute(
            "SELECT id, block_id, text, locator_json FROM evidence_block "
            f"WHERE id IN ({','.join('?' * len(part))})",
            part,
        ):
            out[rowid] = (block_id, text, loc)
    return out


def count_in_resource(conn, match: str, path: str, filters: Filters, cap: int) -> int:
    """Matches passing `filters` inside one file, counting at most `cap`. A file's blocks are written
    together, so their rowids form one range and FTS5 seeks straight to it."""
    row = conn.execute(
        "SELECT min(b.id), max(b.id), r.resource_id FROM evidence_resource r JOIN evidence_block_row b "
        "USING (resource_id) WHERE r.source_root_relative_path = ?",
        [path],
    ).fetchone()
    if row is None or row[0] is None:
        return 0
    role = "" if filters.include_furniture else f" AND b.role = '{ROLE_BODY}'"
    return conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM evidence_fts f JOIN evidence_block_row b ON b.id = f.rowid "
        f"WHERE evidence_fts MATCH ? AND f.rowid BETWEEN ? AND ? AND b.resource_id = ?{role} LIMIT ?)",
        [match, row[0], row[1], row[2], cap],
    ).fetchone()[0]
