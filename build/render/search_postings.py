"""The term records of the static search index (`search_index.py`), read from `evidence_fts` itself.

FTS5 lists its instances (`fts5vocab`) in its own order: term, rowid, position. A range of terms at a
time is read as one string SQLite builds, parsed by numpy and encoded with array operations, so that
no token passes through a Python loop (a workspace holds tens of millions). A record is a term's
postings, each as varints: rowid delta, the block's token count, its positions' count and deltas (a
CJK token's position is `pos << 2 | first of its run | last of its run << 1`, what term precision
weighs). A term larger than `target` bytes continues in further records, whose first rowid is whole.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from mnote_evidence.build.core.text import is_cjk

BATCH_INSTANCES = 1 << 20  # instances encoded together: bounds the arrays (about 100 MB at most)
_TERMS = "temp.mnote_search_terms"
_INSTANCES = "temp.mnote_search_instances"


@dataclass
class Record:
    term: str
    data: bytes  # its postings
    first: int  # the rowid of its first posting
    continues: bool  # the term's earlier postings are in the record before


def records(conn: sqlite3.Connection, target: int, table: str = "evidence_fts") -> Iterator[Record]:
    """Every term of the FTS5 table `table` (of `conn`'s main database) in its order (Unicode code
    points), as records of about `target` bytes at most (a single posting may be larger)."""
    for name, kind in ((_TERMS, "row"), (_INSTANCES, "instance")):
        conn.execute(f"DROP TABLE IF EXISTS {name}")
        conn.execute(f"CREATE VIRTUAL TABLE {name} USING fts5vocab(main, {table}, {kind})")
    listing = conn.execute(f"SELECT term, cnt FROM {_TERMS}").fetchall()
    if not listing:
        return
    terms = [t for t, _ in listing]
    counts = np.fromiter((c for _, c in listing), np.int64, len(listing))
    sizes = doc_sizes(conn, table)
    cjk = np.fromiter((is_cjk(t[0]) for t in terms), bool, len(terms))
    bigrams = _Bigrams(conn, terms, counts, cjk, sizes) if cjk.any() else None
    for lo, hi in _batches(counts, np.ones(len(terms), bool)):
        docs, offsets = _instances(conn, terms, counts, lo, hi)
        yield from _encode(terms[lo:hi], counts[lo:hi], cjk[lo:hi], docs, offsets, sizes, bigrams, target)


def doc_sizes(conn: sqlite3.Connection, table: str) -> np.ndarray:
    """Each block's token count by rowid (`<table>_docsize`: a varint per column, `text` first)."""
    top = conn.execute(f"SELECT max(id) FROM {table}_docsize").fetchone()[0] or 0
    sizes = np.zeros(top + 1, np.int64)
    ids, values = [], []
    for rowid, blob in conn.execute(f"SELECT id, sz FROM {table}_docsize"):
        n = 0
        for b in blob:
            n = (n << 7) | (b & 0x7F)
            if b < 0x80:
                break
        ids.append(rowid)
        values.append(n)
    sizes[ids] = values
    return sizes


def _batches(counts: np.ndarray, wanted: np.ndarray) -> Iterator[tuple[int, int]]:
    """Ranges [lo, hi) of consecutive wanted terms of at most `BATCH_INSTANCES` instances (a larger term
    alone)."""
    lo, total = None, 0
    for i, (count, want) in enumerate(zip(counts.tolist(), wanted.tolist(), strict=True)):
        if lo is not None and (not want or total + count > BATCH_INSTANCES):
            yield lo, i
            lo = None
        if want and lo is None:
            lo, total = i, 0
        total += count
    if lo is not None:
        yield lo, len(counts)


def _instances(
    conn: sqlite3.Connection, terms: list[str], counts: np.ndarray, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, positions) of every instance of terms[lo:hi], in the index's order."""
    docs, offsets = (
        np.fromstring(text or "", dtype=np.int64, sep=" ")
        for text in conn.execute(
            f"SELECT group_concat(doc, ' '), group_concat(offset, ' ') FROM {_INSTANCES} "
            "WHERE term >= ? AND term <= ?",
            [terms[lo], terms[hi - 1]],
        ).fetchone()
    )
    if not len(docs) == len(offsets) == int(counts[lo:hi].sum()):
        raise ValueError("evidence_fts changed while its terms were read")
    return docs, offsets


class _Bigrams:
    """Which tokens of the index are CJK bigrams, one bit each (a block's tokens from `base[rowid]`):
    what tells where a run starts and ends."""

    def __init__(self, conn: sqlite3.Connection, terms: list[str], counts, cjk, sizes: np.ndarray) -> None:
        self.sizes = sizes
        self.base = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=self.base[1:])
        self.bits = np.zeros(int(self.base[-1]) + 1, bool)
        two = _bigram_terms(terms, cjk)
        for lo, hi in _batches(counts, two):  # runs of bigrams (a run's last character sorts between)
            docs, offsets = _instances(conn, terms, counts, lo, hi)
            self.bits[self.base[docs] + offsets] = True

    def flags(self, docs: np.ndarray, offsets: np.ndarray, two: np.ndarray) -> np.ndarray:
        """`first | last << 1` of the CJK tokens at (docs, offsets); `two`: each is a bigram (only a
        bigram is last of its run: a run's last character is its own token)."""
        at = self.base[docs] + offsets
        first = (offsets == 0) | ~self.bits[np.maximum(at - 1, 0)]
        last = two & ((offsets + 1 >= self.sizes[docs]) | ~self.bits[at + 1])
        return first.astype(np.int64) | (last.astype(np.int64) << 1)


def _bigram_terms(terms: list[str], cjk: np.ndarray) -> np.ndarray:
    return np.fromiter((len(t) == 2 for t in terms), bool, len(terms)) & cjk


def _encode(
    terms: list[str],
    counts: np.ndarray,
    cjk: np.ndarray,
    docs: np.ndarray,
    offsets: np.ndarray,
    sizes: np.ndarray,
    bigrams: _Bigrams | None,
    target: int,
) -> Iterator[Record]:
    n = len(docs)
    tid = np.repeat(np.arange(len(terms)), counts)
    term_start = np.zeros(n, bool)
    term_start[np.cumsum(counts) - counts] = True
    start = term_start.copy()  # a posting starts where the term or the rowid changes
    start[1:] |= docs[1:] != docs[:-1]
    values = offsets
    if bigrams is not None and cjk.any():
        mine = np.flatnonzero(cjk[tid])
        two = _bigram_terms(terms, cjk)[tid[mine]]
        values = offsets.copy()
        values[mine] = (offsets[mine] << 2) | bigrams.flags(docs[mine], offsets[mine], two)
    deltas = values.copy()
    deltas[1:] -= values[:-1]
    deltas[start] = values[start]
    ps = np.flatnonzero(start)  # each posting's first instance
    pdocs, pterm, pfirst = docs[ps], tid[ps], term_start[ps]
    pcount = np.diff(np.append(ps, n))
    psize = sizes[pdocs]
    rowdelta = pdocs.copy()
    rowdelta[1:] -= pdocs[:-1]
    rowdelta[pfirst] = pdocs[pfirst]
    # a term larger than `target` continues in a new record at each posting that crosses a multiple of it
    pbytes = _lengths(rowdelta) + _lengths(psize) + _lengths(pcount) + np.add.reduceat(_lengths(deltas), ps)
    before = np.cumsum(pbytes) - pbytes
    chunk = (before - before[np.flatnonzero(pfirst)][pterm]) // target
    cut = np.zeros(len(ps), bool)
    cut[1:] = (chunk[1:] != chunk[:-1]) & ~pfirst[1:]
    rowdelta[cut] = pdocs[cut]
    # the numbers: a posting's first instance gives four (rowid delta, size, count, position delta)
    width = np.where(start, 4, 1)
    end = np.cumsum(width)
    at = end - width
    numbers = np.empty(int(end[-1]), np.int64)
    numbers[end - 1] = deltas
    numbers[at[ps]], numbers[at[ps] + 1], numbers[at[ps] + 2] = rowdelta, psize, pcount
    data, offsets_of = _varints(numbers)
    rec = np.flatnonzero(pfirst | cut)  # each record's first posting
    bounds = np.append(offsets_of[at[ps[rec]]], len(data)).tolist()
    raw = data.tobytes()
    for i, (p, cont) in enumerate(zip(rec.tolist(), cut[rec].tolist(), strict=True)):
        yield Record(terms[pterm[p]], raw[bounds[i] : bounds[i + 1]], int(pdocs[p]), cont)


def _lengths(numbers: np.ndarray) -> np.ndarray:
    """Each number's varint length in bytes."""
    out = np.ones(len(numbers), np.int64)
    top, shift = int(numbers.max(initial=0)), 7
    while top >> shift:
        out += numbers >= 1 << shift
        shift += 7
    return out


def _varints(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`numbers` as varints (7 bits a byte, low first, the high bit: more follow) and each one's offset."""
    lengths = _lengths(numbers)
    end = np.cumsum(lengths)
    at = end - lengths
    out = np.empty(int(end[-1]) if len(end) else 0, np.uint8)
    out[at] = (numbers & 0x7F) | ((lengths > 1) << 7)
    for j in range(1, int(lengths.max(initial=0))):
        m = np.flatnonzero(lengths > j)
        out[at[m] + j] = ((numbers[m] >> (7 * j)) & 0x7F) | ((lengths[m] > j + 1) << 7)
    return out, at
