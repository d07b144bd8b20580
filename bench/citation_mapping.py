"""Citation mapping time per query (10 chunks) on a 100,000-block index, against LightRAG's own call.

    python bench/citation_mapping.py

Mapping: the synthetic index of bench/query_latency.py (100,000 blocks in 1,000
resources) with a knowledge_source registry; 10 chunks, each 6 consecutive
blocks of a different resource (what LightRAG returns), mapped by
`CitationMapper` (registry lookup, coverage, term scoring, citation build).
LightRAG: a real lightrag-server (the tests' offline harness) with the fixture
workspace ingested, `/query/data` naive and mix, same run. Targets: mapping
<= 10 ms per query and <= 20 % of the LightRAG time.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.query_latency import WORK, make_db  # noqa: E402
from mnote_evidence.build.knowledge.ingest import source_name  # noqa: E402
from mnote_evidence.build.knowledge.lightrag import LightRag as Client, LightRagConfig  # noqa: E402
from mnote_evidence.build.pipeline import BuildOptions, build  # noqa: E402
from mnote_evidence.functions.citations import CitationMapper  # noqa: E402
from tests.knowledge.harness import LightRag  # noqa: E402

QUERY = "线程作用域 borrow"
FIXTURES = Path(__file__).resolve().parent.parent / "content_fixtures"


def mapping_db(blocks: int) -> Path:
    WORK.mkdir(exist_ok=True)
    path = WORK / f"citations-{blocks}.sqlite"
    if not path.exists():
        make_db(path, blocks)
        conn = sqlite3.connect(path)
        conn.executemany("INSERT INTO knowledge_source VALUES (?, ?, ?, 'sha256:0', 'processed', 0, 0)",
                         [(p, f"doc-{i}", source_name(p)) for i, (p,) in
                          enumerate(conn.execute("SELECT source_root_relative_path FROM evidence_resource"))])
        conn.commit()
        conn.close()
    return path


def chunks_for(conn: sqlite3.Connection, n: int = 10) -> list[dict]:
    rnd = random.Random(5)
    paths = [p for (p,) in conn.execute("SELECT source_root_relative_path FROM evidence_resource")]
    out = []
    for i, path in enumerate(rnd.sample(paths, n)):
        texts = [t for (t,) in conn.execute(
            "SELECT b.text FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = ? ORDER BY ordinal LIMIT 6 OFFSET 20", [path])]
        out.append({"reference_id": str(i + 1), "file_path": source_name(path), "chunk_id": f"doc-{i}-chunk-000",
                    "content": "\n\n".join(texts)})
    return out


def time_mapping(db: Path, rounds: int = 20) -> tuple[float, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    chunks = chunks_for(conn)
    samples, cited = [], 0
    for _ in range(rounds):
        t = time.perf_counter()
        mapper = CitationMapper(conn, QUERY, "/site/")  # fresh per query, as the handler does
        cited = sum(1 for rank, c in enumerate(chunks) if mapper.citation(c, rank))
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1000, cited


def time_lightrag(rounds: int = 10) -> dict[str, float]:
    base = Path(tempfile.mkdtemp())
    server = LightRag(base / "lr")
    server.start()
    try:
        shutil.copytree(FIXTURES, base / "ws")
        build(base / "ws", BuildOptions(out=base / "out", jobs=2, site=False, lightrag=LightRagConfig(server.url)))
        out = {}
        with Client(LightRagConfig(server.url)) as client:
            for mode in ("naive", "mix"):
                samples = []
                for _ in range(rounds):
                    t = time.perf_counter()
                    client.query_data(QUERY, mode, 10)
                    samples.append(time.perf_counter() - t)
                out[mode] = statistics.median(samples) * 1000
        return out
    finally:
        server.close()
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    db = mapping_db(100_000)
    mapping_ms, cited = time_mapping(db)
    lightrag_ms = time_lightrag()
    print(json.dumps({
        "blocks": 100_000, "chunks_per_query": 10, "citations_built": cited,
        "mapping_ms_median": round(mapping_ms, 2),
        "lightrag_query_data_ms_median": {k: round(v, 1) for k, v in lightrag_ms.items()},
        "mapping_share_of_lightrag": {k: round(mapping_ms / v, 3) for k, v in lightrag_ms.items()},
    }, indent=2))


if __name__ == "__main__":
    main()
