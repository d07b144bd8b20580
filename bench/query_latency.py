"""`evidence.search` on a 1,000,000-block database against raw SQLite FTS5, same queries, same run.

    python bench/query_latency.py [--blocks N] [--rounds R]

The database is generated with our own schema and segmentation (synthetic
mixed Chinese/English blocks, 1,000 resources) and cached in bench/_work/ (untracked), one file per
schema version (`evidence-N-vS.sqlite`).
Raw = in-process `sqlite3`: `SELECT rowid FROM evidence_fts WHERE evidence_fts
MATCH ? ORDER BY bm25(evidence_fts) LIMIT 10` with the same MATCH strings.
Measured interleaved, query by query, so load on the machine hits every series alike; in-process
series also in CPU time (`time.thread_time`), which other processes' load barely moves:
- `count_all`: `SELECT count(*) … MATCH ?`; `count_all_filtered`: the same joined to blocks and
  resources for the default filters (ok files, body text): what an exact `total` would add;
- `handler`: the pure handler in process, topK=10: validation, bm25 window, re-rank, snippets,
  total, locators; `handler_grouped`: the same with groupBy=document (perDocument 3);
- `endpoint`, `endpoint_grouped`: the same over HTTP to a real `datasette` process with the plugin.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.fts_recall import corpus
from mnote_evidence.build.core.text import SEGMENTATION_VERSION, fts_query, segment_for_index
from mnote_evidence.build.core.urls import page_url
from mnote_evidence.build.index.schema import SCHEMA_VERSION, create_schema
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context, search
from tests.servers import wait_until_up

WORK = Path(__file__).resolve().parent / "_work"
QUERIES = [
    "线程作用域",
    "吗啉",
    "线程",
    "吡咯烷",
    "借用检查",
    "生命周期",
    "全文检索",
    "citation",
    "retention policy",
    "evidence index",
    "borrow",
    "audit",
    "溶剂 solvent",
    "缓存 cache",
    "页码",
    "分词",
    "并发",
    "token",
    "thread scope",
    "引用",
]


def make_db(path: Path, blocks: int) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    create_schema(conn)
    resources = 1000
    conn.executemany(
        "INSERT INTO evidence_resource (resource_id, owner_document_path, source_root_relative_path, kind,"
        " provider, provider_version, source_hash, source_map_path, status, page_count, block_count,"
        " updated_at_ms, page_url)"
        " VALUES (?, ?, ?, 'pdf', 'pymupdf', 'bench', 'sha256:0', ?, 'ok', 50, ?, 0, ?)",
        [
            (
                f"r-{i:06d}",
                f"notes/n{i}.md",
                f"notes/n{i}.assets/doc{i}.pdf",
                f"notes/n{i}.ocr/doc{i}.pdf.source-map.json",
                blocks // resources,
                page_url(f"notes/n{i}.assets/doc{i}.pdf"),
            )
            for i in range(resources)
        ],
    )
    rnd = random.Random(3)
    texts = corpus(blocks)
    batch = []
    for n, text in enumerate(texts):
        rid = n * resources // blocks  # a resource's blocks are contiguous, as a real build writes them
        # the locator is the evidence_block view's (build/core/locator.py),
        # from these columns and the resource's
        batch.append(
            (
                n + 1,
                f"b-{n:012d}",
                f"r-{rid:06d}",
                n % (blocks // resources),
                text,
                rnd.randint(1, 50),
                json.dumps([72.0, 100.0, 520.0, 140.0]),
                len(text),
                segment_for_index(text),
            )
        )
        if len(batch) == 20000:
            _flush(conn, batch)
            batch = []
    _flush(conn, batch)
    conn.execute("INSERT INTO build_meta VALUES ('built_at_ms', '0')")
    conn.commit()
    conn.close()
    os.replace(tmp, path)


def stamp(path: Path) -> None:
    """Record the versions readers check (`build/versions.py`), also in a database cached before they were."""
    conn = sqlite3.connect(path)
    conn.executemany(
        "INSERT OR REPLACE INTO build_meta (key, value) VALUES (?, ?)",
        [("schema_version", SCHEMA_VERSION), ("segmentation_version", SEGMENTATION_VERSION)],
    )
    conn.commit()
    conn.close()


def _flush(conn: sqlite3.Connection, batch: list) -> None:
    conn.executemany(
        "INSERT INTO evidence_block_row (id, block_id, resource_id, ordinal, kind, text, page, bbox_json,"
        " char_start, char_end) VALUES (?, ?, ?, ?, 'paragraph', ?, ?, ?, 0, ?)",
        [b[:8] for b in batch],
    )
    conn.executemany(
        "INSERT INTO evidence_fts (rowid, text, block_id) VALUES (?, ?, ?)",
        [(b[0], b[8], b[1]) for b in batch],
    )
    conn.commit()


def pct(samples: list[float], p: float) -> float:
    return round(statistics.quantiles(samples, n=100)[int(p) - 1] * 1000, 1)


SERIES = (
    "raw_fts5",
    "count_all",
    "count_all_filtered",
    "handler",
    "handler_grouped",
    "endpoint",
    "endpoint_grouped",
)
GROUPED = {"groupBy": "document", "perDocument": 3}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    WORK.mkdir(exist_ok=True)
    db = WORK / f"evidence-{args.blocks}-v{SCHEMA_VERSION}.sqlite"
    if not db.exists():
        t = time.perf_counter()
        make_db(db, args.blocks)
        print(f"generated {db} in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    stamp(db)

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    ctx = Context(EvidenceDB(db))
    samples: dict[str, list[float]] = {k: [] for k in SERIES}
    cpu: dict[str, list[float]] = {k: [] for k in SERIES if not k.startswith("endpoint")}
    lower_bound = 0

    def timed(series: str, fn) -> object:
        t, c = time.perf_counter(), time.thread_time()
        out = fn()
        if series in cpu:  # in process: this thread's CPU time too, which other processes' load barely moves
            cpu[series].append(time.thread_time() - c)
        samples[series].append(time.perf_counter() - t)
        return out

    port = 8790
    datasette = str(Path(sys.executable).with_name("datasette"))
    proc = subprocess.Popen(
        [datasette, "-i", str(db), "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(base + "/-/versions.json")
        with httpx.Client(timeout=120) as http:
            for q in QUERIES:  # warm-up: every series reads the same pages
                http.get(base + "/-/evidence/search", params={"q": q, "topK": 10})
                conn.execute(
                    "SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH ?", [fts_query(q)]
                ).fetchone()
            for _ in range(args.rounds):
                for q in QUERIES:
                    match = fts_query(q)
                    timed(
                        "raw_fts5",
                        lambda match=match: conn.execute(
                            "SELECT rowid FROM evidence_fts WHERE evidence_fts MATCH ? "
                            "ORDER BY bm25(evidence_fts) LIMIT 10",
                            [match],
                        ).fetchall(),
                    )
                    timed(
                        "count_all",
                        lambda match=match: conn.execute(
                            "SELECT count(*) FROM evidence_fts WHERE evidence_fts MATCH ?", [match]
                        ).fetchone(),
                    )
                    timed(
                        "count_all_filtered",
                        lambda match=match: conn.execute(
                            "SELECT count(*) FROM evidence_fts f JOIN evidence_block_row b ON b.id = f.rowid "
                            "JOIN evidence_resource r USING (resource_id) WHERE evidence_fts MATCH ? "
                            "AND r.status = 'ok' AND b.role = 'body'",
                            [match],
                        ).fetchone(),
                    )
                    body = timed("handler", lambda q=q: search({"query": q, "topK": 10}, ctx))
                    assert body["results"] and all(r["snippet"]["highlights"] for r in body["results"]), q
                    lower_bound += body["totalIsLowerBound"]
                    grouped = timed(
                        "handler_grouped", lambda q=q: search({"query": q, "topK": 10, **GROUPED}, ctx)
                    )
                    assert grouped["groups"], q
                    for series, extra in (("endpoint", {}), ("endpoint_grouped", GROUPED)):
                        r = timed(
                            series,
                            lambda q=q, extra=extra: http.get(
                                base + "/-/evidence/search", params={"q": q, "topK": 10, **extra}
                            ),
                        )
                        assert r.status_code == 200, r.text
    finally:
        proc.terminate()
        proc.wait()
    raw95, raw95_cpu = pct(samples["raw_fts5"], 95), pct(cpu["raw_fts5"], 95)
    print(
        json.dumps(
            {
                "blocks": args.blocks,
                "db_mib": round(db.stat().st_size / 2**20),
                "queries": len(QUERIES),
                "rounds": args.rounds,
                "totals_lower_bound": f"{lower_bound}/{len(samples['handler'])}",
                **{f"{k}_ms": {"p50": pct(v, 50), "p95": pct(v, 95)} for k, v in samples.items()},
                "p95_ratio": {k: round(pct(v, 95) / raw95, 2) for k, v in samples.items() if k != "raw_fts5"},
                # each sample against the raw query run just before it (same query, same moment of load)
                "paired_ratio_median": {
                    k: round(statistics.median(a / b for a, b in zip(v, samples["raw_fts5"])), 2)
                    for k, v in samples.items()
                    if k != "raw_fts5"
                },
                "cpu_ms": {k: {"p50": pct(v, 50), "p95": pct(v, 95)} for k, v in cpu.items()},
                "cpu_p95_ratio": {
                    k: round(pct(v, 95) / raw95_cpu, 3) for k, v in cpu.items() if k != "raw_fts5"
                },
                "cpu_paired_ratio_median": {
                    k: round(statistics.median(a / b for a, b in zip(v, cpu["raw_fts5"])), 3)
                    for k, v in cpu.items()
                    if k != "raw_fts5"
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
