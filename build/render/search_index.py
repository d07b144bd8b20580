"""The static site's search index: what the search box reads on a static host (SPEC §9), beside the site.

`_search/` holds what `search_query.js` ranks with, cut so that a query fetches only what its words need:

- **term shards** (`t/`): every FTS token of `evidence_fts` with its postings (`search_postings.py`:
  block rowid, the block's token count and each position; CJK tokens also carry whether they start or
  end their run, the flank the ranking's term precision weighs), in FTS5's term order (Unicode code
  points), cut into gzip'd shards of about `SHARD_BYTES`; a term larger than that continues over several.
- **block buckets** (`b/`): the light columns of `BUCKET` consecutive rowids (resource path, kind and
  status, role, ordinal, page, section), what filtering and tie order read.
- **fragments** (`f/`): block id, text and locator of `FRAGMENT` consecutive rowids, read for the hits
  shown.
- **the rows map** (`r/`): each source's rowids in the term shards, [first, last], which an edit reads.
- **`manifest.json`**: the FTS statistics bm25 needs (rows, tokens), the shards' first terms, the
  buckets and the delta; written last, the only file whose name does not change with its bytes.

Every other file is named by the hash of its bytes (immutable: cached for good, never mixed across
builds), and none exceeds `max_file_bytes`. A build that changed a few sources leaves the term shards
as they are and writes the delta (`_update`): their rows in shards of their own, and the shards' rows
they replace; with the buckets and fragments of the rows that changed. A previous index that does not
check out, a delta past `DELTA_ROWS`, and a build that left a source out (`.mnoteignore`,
`publish: false`) are written whole. Files no longer named are removed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Set
from concurrent.futures import BrokenExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from mnote_evidence.build.core.defaults import DEFAULT_SEARCH_FILE_MIB
from mnote_evidence.build.core.fsutil import read_inside, write_named
from mnote_evidence.build.core.text import segment_for_index
from mnote_evidence.build.core.urls import SEARCH_DIR
from mnote_evidence.build.index.schema import FTS_TOKENIZE
from mnote_evidence.build.render import site_files

if TYPE_CHECKING:
    from mnote_evidence.build.render.search_postings import Record

MANIFEST = f"{SEARCH_DIR}/manifest.json"
FORMAT = "mnote-search-3"
DEFAULT_MAX_FILE_BYTES = int(DEFAULT_SEARCH_FILE_MIB * (1 << 20))
SHARD_BYTES = 12 << 10  # a term shard's postings before gzip: one or two per query word
BUCKET = 2048  # rowids per block bucket
FRAGMENT = 16  # rowids per fragment: a hit shown costs one small file (about 2 KB)
BATCH = 4000  # rows tokenized at a time
HASH_CHARS = 12


@dataclass
class SearchIndexReport:
    files: int = 0  # files in `_search/`, the manifest included
    files_written: int = 0  # of those, written by this build (the rest were unchanged)
    bytes: int = 0  # their size
    largest_file: int = 0
    updated: bool = False  # the previous index was updated (else: written whole)
    sha256: str = ""  # the manifest's (the site state records it: the next build's `previous`)

    @classmethod
    def unchanged(cls, recorded: object) -> SearchIndexReport:
        """The report of the index the site state recorded (`asdict` of one), nothing written."""
        fields = (
            {k: v for k, v in recorded.items() if k in cls.__dataclass_fields__}
            if isinstance(recorded, dict)
            else {}
        )
        try:
            return cls(**fields | {"files_written": 0, "updated": False})
        except TypeError:
            return cls()


# -- encoding ----------------------------------------------------------------------------------------------
def varint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)  # 9 saves under 1 % here, at 1.5x the time


def _name(folder: str, data: bytes) -> str:
    return f"{folder}/{hashlib.sha256(data).hexdigest()[:HASH_CHARS]}"


def _shard_bytes(records: list[tuple[str, bytes]]) -> bytes:
    """A term shard: per term, its UTF-8 length and bytes, its postings' length and bytes."""
    out = bytearray()
    for term, postings in records:
        raw = term.encode("utf-8", "surrogatepass")
        varint(len(raw), out)
        out += raw
        varint(len(postings), out)
        out += postings
    return bytes(out)


def _fts_totals(conn: sqlite3.Connection) -> tuple[int, int]:
    """(rows, tokens) of `evidence_fts`: its averages record, what bm25 divides by."""
    row = conn.execute("SELECT block FROM evidence_fts_data WHERE id = 1").fetchone()
    if not row or not row[0]:
        return 0, 0
    rows, at = _sqlite_varint(row[0], 0)
    tokens, _ = _sqlite_varint(row[0], at)
    return rows, tokens


def _sqlite_varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint (big-endian, 7 bits a byte, a ninth byte of 8)."""
    n = 0
    for i in range(9):
        b = data[at + i]
        if i == 8:
            return (n << 8) | b, at + 9
        n = (n << 7) | (b & 0x7F)
        if b < 0x80:
            return n, at + i + 1
    raise ValueError("bad varint")


# -- blocks --------------------------------------------------------------------------------------------------
BLOCK_SQL = (
    "SELECT b.id, r.resource_id, r.source_root_relative_path, r.kind, r.status, b.role, b.ordinal, b.page, "
    "b.section_id FROM evidence_block_row b JOIN evidence_resource r USING (resource_id) "
    "WHERE b.id BETWEEN ? AND ? ORDER BY b.id"
)


def _json_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _bucket(conn: sqlite3.Connection, k: int, fragments: dict[int, str]) -> bytes | None:
    """Bucket `k` (rowids k*BUCKET …): its resources ([path, kind, status, first rowid, last rowid]; the
    first rowid is the resource's key), a column per light field (`id` and `section` as deltas: a
    block's section is the rowid of the section's first block), and its fragments' names; None when it
    holds no block."""
    rows = conn.execute(BLOCK_SQL, [k * BUCKET, (k + 1) * BUCKET - 1]).fetchall()
    if not rows:
        return None
    resources: dict[str, int] = {}
    res_rows: list[list] = []
    bucket = [k * BUCKET, (k + 1) * BUCKET - 1]
    inside = "resource_id IN (SELECT resource_id FROM evidence_block_row WHERE id BETWEEN ? AND ?)"
    spans = {
        rid: (lo, hi)
        for rid, lo, hi in conn.execute(
            f"SELECT resource_id, min(id), max(id) FROM evidence_block_row WHERE {inside} GROUP BY 1", bucket
        )
    }
    starts = {  # (resource, section) -> the rowid of the section's first block
        (rid, sid): first
        for rid, sid, first in conn.execute(
            f"SELECT resource_id, section_id, min(id) FROM evidence_block_row WHERE {inside} "
            "AND section_id IS NOT NULL GROUP BY 1, 2",
            bucket,
        )
    }
    cols: dict[str, list] = {"id": [], "res": [], "role": [], "ordinal": [], "page": [], "section": []}
    roles: list[str] = []
    last = k * BUCKET
    for rowid, rid, path, kind, status, role, ordinal, page, sid in rows:
        if rid not in resources:
            resources[rid] = len(res_rows)
            res_rows.append([path, kind, status, *spans[rid]])
        if role not in roles:
            roles.append(role)
        cols["id"].append(rowid - last)
        last = rowid
        cols["res"].append(resources[rid])
        cols["role"].append(roles.index(role))
        cols["ordinal"].append(ordinal)
        cols["page"].append(page)
        cols["section"].append(rowid - starts[(rid, sid)] if sid is not None else None)
    names = [[f, fragments[f]] for f in sorted(fragments)]
    body = {"resources": res_rows, "roles": roles, **cols, "fragments": names}
    return _gz(_json_bytes(body))


def _fragments(conn: sqlite3.Connection, k: int, only: set[int] | None = None) -> dict[int, bytes]:
    """The fragments of bucket `k` (those in `only`, when given): fragment number -> [[rowid, block id,
    text, locator], …] (gzip'd JSON, built by SQLite)."""
    groups: dict[int, list[str]] = {}
    spans = [(k * BUCKET, (k + 1) * BUCKET - 1)]
    if only is not None:
        spans = [(f * FRAGMENT, (f + 1) * FRAGMENT - 1) for f in sorted(only)]
    for lo, hi in spans:
        for i, row in conn.execute(
            # the locator is JSON already: spliced in, not parsed again
            "SELECT id, '[' || id || ',' || json_quote(block_id) || ',' || json_quote(text) || ',' || "
            "locator_json || ']' FROM evidence_block WHERE id BETWEEN ? AND ? ORDER BY id",
            [lo, hi],
        ):
            groups.setdefault(i // FRAGMENT, []).append(row)
    return {f: _gz(("[" + ",".join(rows) + "]").encode("utf-8")) for f, rows in groups.items()}


# -- the index -----------------------------------------------------------------------------------------------
@dataclass
class _Index:
    """The files of one index as they are made (`put`: written a batch at a time, `sizes` then holds
    each one's size), and the manifest's parts."""

    sizes: dict[str, int] = field(default_factory=dict)  # every file of this index made so far
    written: int = 0  # of those, how many were not on disk with their bytes
    shards: list[list] = field(default_factory=list)  # [first term, name, continues the previous]
    buckets: dict[int, str] = field(default_factory=dict)
    old: set[str] | None = None  # an update: the previous index's names it replaces (what may now go)
    old_manifest: int = 0  # and its manifest's size
    resources: list[str] = field(default_factory=list)  # the parts of the map path -> [first, last]
    # of each source's rows in `shards`
    delta: dict | None = None  # the rows changed since `shards` were written (see `_update`)
    pending: dict[str, bytes] = field(default_factory=dict)
    pending_bytes: int = 0

    def put(self, name: str, data: bytes) -> None:
        self.pending[name] = data
        self.sizes[name] = len(data)
        self.pending_bytes += len(data)

    def flush(self, out: Path, at_least: int = 0) -> None:
        """Write the pending files (when they hold `at_least` bytes), each folder's together."""
        if self.pending_bytes < at_least or not self.pending:
            return
        folders = {name.split("/")[0] for name in self.pending}
        at = {f: site_files.folder(out, f"{SEARCH_DIR}/{f}") for f in sorted(folders)}
        self.written += write_named(
            (at[name.split("/")[0]] / name.split("/")[1], data) for name, data in self.pending.items()
        )
        self.pending, self.pending_bytes = {}, 0


FLUSH_BYTES = 16 << 20  # a whole write holds at most about this many bytes of files before writing them
WORKER_ROWS = 50_000  # a whole write of at least this many rows runs in a worker process, beside the pages


def write(
    out: Path,
    db_path: Path,
    max_file_bytes: int,
    previous: SearchIndexReport | None = None,
    changed: Iterable[str] | None = None,
) -> SearchIndexReport:
    """Write `_search/` for `db_path` into the site `out` (see the module docstring). `previous`: the
    report of the index the last render wrote (its manifest hash and sizes); `changed`: the source paths
    whose rows may differ since (None: unknown, written whole)."""
    return start(out, db_path, max_file_bytes, previous, changed)()


def start(
    out: Path,
    db_path: Path,
    max_file_bytes: int,
    previous: SearchIndexReport | None = None,
    changed: Iterable[str] | None = None,
    jobs: int = 1,
) -> Callable[[], SearchIndexReport]:
    """`write`, begun: an update is made now; a whole write of `WORKER_ROWS` rows or more, with `jobs`
    above 1, runs in a worker process while the caller goes on (the site's pages). Returns what
    finishes it: the manifest, last, and the files no longer named removed."""
    limit = max(64 << 10, int(max_file_bytes))
    conn = _connect(db_path)
    try:
        totals = _fts_totals(conn)
        if previous and previous.sha256 and changed is not None:
            index = _updated(out, conn, previous.sha256, sorted(set(changed)), limit)
            if index is not None:
                index.flush(out)
                return partial(_finish, out, index, totals, previous)
        if jobs <= 1 or totals[0] < WORKER_ROWS:
            return partial(_finish, out, _whole(conn, out, limit), totals, None)
    finally:
        conn.close()
    from mnote_evidence.build.parse.workers import worker_pool

    pool = worker_pool(1)
    future = pool.submit(_whole_at, out, db_path, limit)

    def finish() -> SearchIndexReport:
        try:
            index = future.result()
        except (BrokenExecutor, OSError, MemoryError):  # the worker died: written here
            index = _whole_at(out, db_path, limit)
        finally:
            pool.shutdown()
        return _finish(out, index, totals, None)

    return finish


def _connect(db_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True)


def _whole_at(out: Path, db_path: Path, limit: int) -> _Index:
    conn = _connect(db_path)
    try:
        return _whole(conn, out, limit)
    finally:
        conn.close()


def _finish(
    out: Path, index: _Index, totals: tuple[int, int], previous: SearchIndexReport | None
) -> SearchIndexReport:
    manifest = {
        "format": FORMAT,
        "rows": totals[0],
        "tokens": totals[1],
        "bucket": BUCKET,
        "fragment": FRAGMENT,
        "terms": index.shards,
        "buckets": {str(k): v for k, v in sorted(index.buckets.items())},
        "resources": index.resources,
    }
    if index.delta is not None:
        manifest["delta"] = index.delta
    report = SearchIndexReport(updated=index.old is not None, files_written=index.written)
    text = json.dumps(manifest, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    report.files_written += site_files.write_bytes(out, MANIFEST, text)
    report.sha256 = hashlib.sha256(text).hexdigest()
    if index.old is None or previous is None:  # written whole: whatever else is there goes
        _remove_others(out, {MANIFEST} | {f"{SEARCH_DIR}/{n}" for n in index.sizes})
        sizes = [*index.sizes.values(), len(text)]
        report.files, report.bytes, report.largest_file = len(sizes), sum(sizes), max(sizes)
        return report
    # an update: the previous figures, less what went, plus what came (no walk over every file)
    gone = index.old - index.sizes.keys()
    gone_sizes = [_size(out, n) for n in gone]
    for name in gone:
        site_files.unlink(out, f"{SEARCH_DIR}/{name}")
    came = [size for n, size in index.sizes.items() if n not in index.old]
    report.files = previous.files - len(gone) + len(came)
    report.bytes = previous.bytes - sum(gone_sizes) - index.old_manifest + sum(came) + len(text)
    report.largest_file = max([previous.largest_file, *came, len(text)])
    if max(gone_sizes, default=0) >= previous.largest_file:  # the largest went: measure all again
        report.files, report.bytes, report.largest_file = _measure(out)
    return report


def _measure(out: Path) -> tuple[int, int, int]:
    sizes = [p.lstat().st_size for p in (out / SEARCH_DIR).rglob("*") if p.is_file()]
    return len(sizes), sum(sizes), max(sizes, default=0)


def _size(out: Path, name: str) -> int:
    try:
        return (out / SEARCH_DIR / name).lstat().st_size
    except OSError:
        return 0


def _remove_others(out: Path, live: set[str]) -> None:
    """Remove the files of `_search/` the new index does not name (not the writes still being staged,
    whose names start with a dot), and the folders that leaves empty."""
    folder = out / SEARCH_DIR
    if not folder.is_dir() or folder.is_symlink():
        return
    for path in sorted(folder.rglob("*"), reverse=True):
        rel = path.relative_to(out).as_posix()
        if rel in live or path.name.startswith("."):
            continue
        if path.is_dir() and not path.is_symlink():
            if not any(path.iterdir()):
                path.rmdir()
        else:
            site_files.unlink(out, rel)


def _whole(conn: sqlite3.Connection, out: Path, limit: int) -> _Index:
    index = _Index()
    index.shards = _term_shards(conn, "evidence_fts", index, limit, out)
    spans = conn.execute(
        "SELECT r.source_root_relative_path, min(b.id), max(b.id) FROM evidence_block_row b "
        "JOIN evidence_resource r USING (resource_id) GROUP BY 1 ORDER BY 1"
    ).fetchall()
    entries = [_json_bytes(path) + b":" + _json_bytes([lo, hi]) for path, lo, hi in spans]
    start = 0
    while start < len(entries):  # parts of at most half the limit before gzip
        end, size = start + 1, 2 + len(entries[start])
        while end < len(entries) and size + len(entries[end]) + 1 <= limit // 2:
            size, end = size + len(entries[end]) + 1, end + 1
        data = _gz(b"{" + b",".join(entries[start:end]) + b"}")
        index.resources.append(_name("r", data))
        index.put(index.resources[-1], data)
        start = end
    top = conn.execute("SELECT max(id) FROM evidence_block_row").fetchone()[0] or 0
    for k in range(top // BUCKET + 1):
        _write_bucket(conn, k, index)
        index.flush(out, FLUSH_BYTES)
    index.flush(out)
    return index


def _term_shards(
    conn: sqlite3.Connection, table: str, index: _Index, limit: int, out: Path | None = None
) -> list[list]:
    """The term shards of FTS5 table `table` into `index` (written as they come when `out` is given);
    returns the manifest's entries."""
    from mnote_evidence.build.render import search_postings  # numpy: only when shards are written

    shards = _Shards(index, min(SHARD_BYTES, limit // 2))
    for record in search_postings.records(conn, shards.target, table):
        shards.add(record)
        if out is not None:
            index.flush(out, FLUSH_BYTES)
    shards.flush()
    return shards.entries


def _delta_shards(rows: list[tuple[int, str]], index: _Index, limit: int) -> list[list]:
    """The term shards of `rows` ((rowid, text)): their text segmented and tokenized as `evidence_fts`'s,
    in an in-memory FTS5 table, then encoded as the whole index's."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE delta USING fts5(text, tokenize='{FTS_TOKENIZE}')")
        segmented = [(rowid, segment_for_index(text or "")) for rowid, text in rows]
        conn.executemany("INSERT INTO delta (rowid, text) VALUES (?, ?)", segmented)
        return _term_shards(conn, "delta", index, limit)
    finally:
        conn.close()


class _Shards:
    """Records in term order, cut into shards of about `target` bytes added to `index`; `entries`: the
    manifest's [first term, name, 0] or, for a shard that goes on with the last term of the one before,
    [that term, name, 1, the rowid it goes on from]."""

    def __init__(self, index: _Index, target: int) -> None:
        self.index, self.target = index, target
        self.entries: list[list] = []
        self.part: list[Record] = []
        self.size, self.previous = 0, None

    def add(self, record: Record) -> None:
        if self.size and self.size + len(record.data) > self.target:
            self.flush()
        self.part.append(record)
        self.size += len(record.data) + len(record.term) + 8

    def flush(self) -> None:
        if not self.part:
            return
        data = _gz(_shard_bytes([(r.term, r.data) for r in self.part]))
        name = _name("t", data)
        self.index.put(name, data)
        first = self.part[0]
        cont = first.term == self.previous
        self.entries.append([first.term, name, 1, first.first] if cont else [first.term, name, 0])
        self.previous = self.part[-1].term
        self.part, self.size = [], 0


def _write_bucket(
    conn: sqlite3.Connection,
    k: int,
    index: _Index,
    kept: dict[int, str] | None = None,
    redo: Set[int] = frozenset(),
) -> None:
    """Bucket `k` and its fragments into `index`; with `kept` (the previous bucket's fragments), only the
    fragments in `redo` are read again."""
    fragments = {f: name for f, name in (kept or {}).items() if f not in redo}
    for f, data in _fragments(conn, k, None if kept is None else redo).items():
        name = _name("f", data)
        index.put(name, data)
        fragments[f] = name
    data = _bucket(conn, k, fragments)
    index.buckets.pop(k, None)
    if data is not None:
        name = _name("b", data)
        index.put(name, data)
        index.buckets[k] = name


# -- the update ----------------------------------------------------------------------------------------------
DELTA_ROWS = 1024  # a delta of more rows (or of more than an eighth of them) is written whole again


def _read(out: Path, name: str, limit: int) -> bytes | None:
    """The bytes of `_search/<name>` when they hash to the name (never through a link); else None."""
    if not isinstance(name, str) or "/" not in name or ".." in name:
        return None
    data = read_inside(out, out / SEARCH_DIR / name, limit)
    if data is None or _name(name.split("/")[0], data) != name:
        return None
    return data


def _updated(
    out: Path, conn: sqlite3.Connection, previous: str, paths: list[str], limit: int
) -> _Index | None:
    """The previous index brought in line with `conn` for the sources at `paths`; None when the previous
    index does not check out or its delta outgrew `DELTA_ROWS`."""
    try:
        return _update(out, conn, previous, paths, limit)
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError, EOFError, zlib.error):
        return None


def _update(
    out: Path, conn: sqlite3.Connection, previous: str, paths: list[str], limit: int
) -> _Index | None:
    """An edit leaves the term shards as they are and rewrites the delta (`delta` in the manifest): every
    current row of every source changed since the shards were written, as shards of its own (`terms`),
    with the shards' rows of those sources (`dead`: [first, last] rowids) that the browser drops, and
    each source's rows now (`paths`). The buckets holding rows that changed, and their fragments that
    did, are read again from the database."""
    text = read_inside(out, out / MANIFEST, 1 << 26)
    if text is None or hashlib.sha256(text).hexdigest() != previous:
        return None
    manifest = json.loads(text)
    if (manifest.get("format"), manifest.get("bucket"), manifest.get("fragment")) != (
        FORMAT,
        BUCKET,
        FRAGMENT,
    ):
        return None
    spans: dict[str, list[int]] = {}
    for name in manifest["resources"]:
        data = _read(out, name, limit)
        if data is None:
            return None
        spans |= json.loads(gzip.decompress(data))
    before = manifest.get("delta") or {"paths": {}, "dead": [], "terms": []}
    changed = sorted(set(before["paths"]) | set(paths))
    marks = ",".join("?" * len(changed))
    rows = conn.execute(
        "SELECT b.id, b.text, r.source_root_relative_path FROM evidence_block_row b JOIN evidence_resource r "
        f"USING (resource_id) WHERE r.source_root_relative_path IN ({marks}) ORDER BY b.id",
        changed,
    ).fetchall()
    now: dict[str, list[int]] = {}
    for rowid, _, path in rows:
        now.setdefault(path, [rowid, rowid])[1] = rowid
    if len(rows) > min(DELTA_ROWS, manifest["rows"] // 8):  # an edit costs its delta: fold it in
        return None
    index = _Index(old_manifest=len(text), resources=manifest["resources"])
    terms = _delta_shards([(rowid, text) for rowid, text, _ in rows], index, limit)
    index.shards = manifest["terms"]
    dead = sorted(spans[p] for p in changed if p in spans)
    index.delta = {"paths": {p: now.get(p) for p in changed}, "dead": dead, "terms": terms}
    index.old = {s[1] for s in before["terms"]}
    # the buckets and fragments of the rows these paths held before and hold now
    moved: set[int] = set()
    for p in paths:
        for span in (before["paths"].get(p) if p in before["paths"] else spans.get(p), now.get(p)):
            if span:
                moved.update(range(span[0] // FRAGMENT, span[1] // FRAGMENT + 1))
    buckets = {int(k): v for k, v in manifest["buckets"].items()}
    index.buckets = dict(buckets)
    for k in sorted({f * FRAGMENT // BUCKET for f in moved}):
        kept = None
        if k in buckets:
            data = _read(out, buckets[k], limit)
            if data is None:
                return None
            kept = dict(json.loads(gzip.decompress(data))["fragments"])
            index.old.add(buckets[k])
            index.old.update(kept[f] for f in moved if f in kept)
        _write_bucket(conn, k, index, kept or {}, {f for f in moved if f * FRAGMENT // BUCKET == k})
    return index
