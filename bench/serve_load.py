"""8 concurrent clients for 60 s against `/-/evidence/search` while `serve --watch` rebuilds twice.

    python bench/serve_load.py [--copies N] [--clients C] [--seconds S]

Workspace: N copies of content_fixtures/ (25 = 500 resources). A real
`mnote-evidence serve --watch` process; C client threads (loopback only, loops
bounded by --seconds) query a fixed mix of CJK and English terms; two notes
are edited at 1/4 and 1/2 of the run. Reports errors (non-200 or empty results
for queries that must match), p50/p99 latency, throughput, and the time from
each save until its new text was searchable.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.noop_rebuild import make_workspace
from mnote_evidence.build.pipeline import BuildOptions, build
from tests.servers import wait_until_up

QUERIES = ["retention period", "线程作用域", "吗啉", "吡咯烷", "scoped threads", "provider matrix"]


def wait_searchable(base: str, word: str, started: float, limit: float = 120) -> float:
    with httpx.Client(timeout=10) as http:
        while time.monotonic() - started < limit:
            if http.get(base + "/-/evidence/search", params={"q": word}).json()["results"]:
                return time.monotonic() - started
            time.sleep(0.05)
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=25)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60)
    args = ap.parse_args()
    base_dir = Path(tempfile.mkdtemp())
    ws, out = base_dir / "ws", base_dir / "out"
    make_workspace(ws, args.copies)
    build(ws, BuildOptions(out=out, jobs=2))
    port = 8791
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mnote_evidence",
            "serve",
            str(out),
            "--port",
            str(port),
            "--watch",
            str(ws),
            "--jobs",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_until_up(base + "/-/versions.json")
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + args.seconds

    def client(n: int) -> None:
        with httpx.Client(timeout=30) as http:
            i = n
            while time.monotonic() < deadline:
                q = QUERIES[i % len(QUERIES)]
                i += 1
                t = time.perf_counter()
                try:
                    r = http.get(base + "/-/evidence/search", params={"q": q, "topK": 10})
                    ok = r.status_code == 200 and r.json()["results"]
                except httpx.HTTPError as exc:
                    ok, r = False, exc
                latencies.append(time.perf_counter() - t)
                if not ok:
                    errors.append(f"{q}: {getattr(r, 'status_code', r)}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
    for t in threads:
        t.start()
    saves = []
    for fraction, word in ((0.25, "wombatfirst"), (0.5, "wombatsecond")):
        time.sleep(max(0, deadline - args.seconds * (1 - fraction) - time.monotonic()))
        note = ws / "copy-000/Archive/Old Ideas.md"
        note.write_text(note.read_text("utf-8") + f"\nEdit {word}.\n", "utf-8")
        saves.append(round(wait_searchable(base, word, time.monotonic()), 2))
    for t in threads:
        t.join()
    proc.terminate()
    log, _ = proc.communicate(timeout=20)
    shutil.rmtree(base_dir)
    q = statistics.quantiles(latencies, n=100)
    print(
        json.dumps(
            {
                "resources": args.copies * 20,
                "clients": args.clients,
                "seconds": args.seconds,
                "requests": len(latencies),
                "errors": len(errors),
                "error_samples": errors[:5],
                "throughput_rps": round(len(latencies) / args.seconds, 1),
                "latency_ms": {
                    "p50": round(q[49] * 1000, 1),
                    "p99": round(q[98] * 1000, 1),
                    "max": round(max(latencies) * 1000, 1),
                },
                "save_to_searchable_s": saves,
                "rebuilds_logged": [line for line in log.splitlines() if line.startswith("rebuilt")],
            },
            indent=2,
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
