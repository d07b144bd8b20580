"""What `evidence.sqlite` spends its bytes on, against the notes' bytes and a bigram FTS5 floor.

    python bench/index_size.py OUT/evidence.sqlite WORKSPACE [--floor] [--latency ROUNDS]

Prints JSON: the file's bytes, the workspace's note bytes (`*.md` outside `.mnote/`), their ratio,
the largest tables and indexes (SQLite's `dbstat`: pages in use, whole pages), and with `--floor`
two floors built from the same block text in a temporary file, VACUUMed:
- `fts5_bigram`: one FTS5 table holding the segmented text (its own copy, no other table);
- `text_plus_external_fts5`: the text once in a plain table plus an external-content bigram index
  (what schema 5 stores for search, without ids, locators' columns, sections, links or edges).
With `--latency ROUNDS`: on this database, query by query, interleaved (load hits every series alike), the
`evidence.search` handler in process (topK 10; `handler_graph`: mode graph, which follows link edges) against
raw FTS5 (`SELECT rowid … MATCH ? ORDER BY bm25 LIMIT 10`, bench/query_latency.py's queries): p50/p95 wall
and thread-CPU milliseconds and the p95 ratios to raw.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mnote_evidence.build.core.text import segment_for_index

TOKENIZE = "tokenize = 'unicode61 remove_diacritics 2'"


def note_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.md") if ".mnote" not in p.parts)


def breakdown(db: Path, top: int = 16) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    finally:
        conn.close()
    return {name: size for name, size in rows[:top]}


def floor(db: Path, external: bool) -> int:
    src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    table = (
        "evidence_block_row"
        if src.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'evidence_block_row' AND type = 'table'"
        ).fetchone()
        else "evidence_block"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "floor.sqlite"
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("BEGIN")
        if external:
            conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT)")
            conn.execute(
                f"CREATE VIRTUAL TABLE f USING fts5(text, content = 't', content_rowid = 'id', {TOKENIZE})"
            )
        else:
            conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(text, {TOKENIZE})")
        for rowid, text in src.execute(f"SELECT id, text FROM {table} ORDER BY id"):
            if external:
                conn.execute("INSERT INTO t VALUES (?, ?)", [rowid, text])
            conn.execute("INSERT INTO f (rowid, text) VALUES (?, ?)", [rowid, segment_for_index(text)])
        conn.execute("COMMIT")
        conn.execute("INSERT INTO f (f) VALUES ('optimize')")
        conn.execute("VACUUM")
        conn.close()
        src.close()
        return path.stat().st_size


def latency(db: Path, rounds: int) -> dict:
    from bench.query_latency import QUERIES, pct
    from mnote_evidence.build.core.text import fts_query
    from mnote_evidence.functions.core.db import EvidenceDB
    from mnote_evidence.functions.handlers.evidence import Context, search

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    ctx = Context(EvidenceDB(db))
    series = {
        "raw_fts5": lambda q: conn.execute(
            "SELECT rowid FROM evidence_fts WHERE evidence_fts MATCH ? ORDER BY bm25(evidence_fts) LIMIT 10",
            [fts_query(q)],
        ).fetchall(),
        "handler": lambda q: search({"query": q, "topK": 10}, ctx),
        "handler_graph": lambda q: search({"query": q, "topK": 10, "mode": "graph"}, ctx),
    }
    wall: dict[str, list[float]] = {k: [] for k in series}
    cpu: dict[str, list[float]] = {k: [] for k in series}
    for q in QUERIES:  # warm-up: every series reads the same pages
        for fn in series.values():
            fn(q)
    for _ in range(rounds):
        for q in QUERIES:
            for name, fn in series.items():
                t, c = time.perf_counter(), time.thread_time()
                fn(q)
                cpu[name].append(time.thread_time() - c)
                wall[name].append(time.perf_counter() - t)
    conn.close()
    return {
        "queries": len(QUERIES),
        "rounds": rounds,
        "wall_ms": {k: {"p50": pct(v, 50), "p95": pct(v, 95)} for k, v in wall.items()},
        "cpu_ms": {k: {"p50": pct(v, 50), "p95": pct(v, 95)} for k, v in cpu.items()},
        "p95_ratio": {
            k: round(pct(v, 95) / pct(wall["raw_fts5"], 95), 2) for k, v in wall.items() if k != "raw_fts5"
        },
        "cpu_p95_ratio": {
            k: round(pct(v, 95) / pct(cpu["raw_fts5"], 95), 2) for k, v in cpu.items() if k != "raw_fts5"
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db", type=Path)
    ap.add_argument("workspace", type=Path)
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--latency", type=int, metavar="ROUNDS", help="also time search against raw FTS5")
    args = ap.parse_args()
    size, notes = args.db.stat().st_size, note_bytes(args.workspace)
    out: dict = {
        "db_bytes": size,
        "note_bytes": notes,
        "ratio": round(size / notes, 2),
        "largest": breakdown(args.db),
    }
    if args.floor:
        for name, external in (("fts5_bigram", False), ("text_plus_external_fts5", True)):
            b = floor(args.db, external)
            out[name] = {
                "bytes": b,
                "ratio_to_notes": round(b / notes, 2),
                "db_over_floor": round(size / b, 2),
            }
    if args.latency:
        out["latency"] = latency(args.db, args.latency)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
