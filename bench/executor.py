#!/usr/bin/env python3
"""The parse stage on Dask distributed against the local process pool: one workspace, one run, 2 workers each.

    python bench/executor.py [--notes 300] [--rounds 2]

The workspace: the sample workspace (content_fixtures, with its scans), `--notes` generated notes
(`bench/scale.py`'s generator) and five real PDFs from /tmp/h3/manuals (PARI's tutorial, parallel and
refcard, Asymptote's asy-latex and asyRefCard; 91 pages; absent ones are left out and listed). Each
round builds it from a fresh copy at the same path, with the site, once on the local pool (`--jobs 2`)
and once on a Dask `LocalCluster` of 2 single-threaded worker processes started before the timing
(its start-up is reported apart), alternating so that load on the machine hits both alike.

Reported: the best wall time of each; the overhead per parsed resource, (Dask - pool) / resources;
the share of the build the coordinator spends outside the parse stages (notes + parse, from the
build's own progress events: their first to last event), which is what does not scale out; and
whether the outputs are identical: every row of every table of evidence.sqlite (but `build_meta`'s
timings) and the bytes of every sidecar and site file. Target: overhead <= 20 ms per resource, outputs
identical. Writes bench/results/executor.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sqlite3
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._util import WORK, git_commit, machine, results_path  # noqa: E402
from bench.scale import make_notes  # noqa: E402

MANUALS = Path("/tmp/h3/manuals")
PDFS = ["tutorial.pdf", "parallel.pdf", "refcard.pdf", "asy-latex.pdf", "asyRefCard.pdf"]
HERE = WORK / "executor"
PARSE_STAGES = {"notes", "parse"}
TARGET_MS = 20.0


def pristine(notes: int) -> tuple[Path, dict]:
    from tests.conftest import copy_workspace

    ws = HERE / f"pristine-{notes}"
    shutil.rmtree(ws, ignore_errors=True)
    copy_workspace(ws)
    info = make_notes(ws / "generated", notes)
    present = [name for name in PDFS if (MANUALS / name).is_file()]
    for name in present:
        (ws / "manuals").mkdir(exist_ok=True)
        shutil.copy2(MANUALS / name, ws / "manuals" / name)
    info["pdfs"] = present
    info["pdfs_missing"] = sorted(set(PDFS) - set(present))
    return ws, info


LAST_CHANGE = re.compile(rb"last change [0-9-]+ [0-9:]+ UTC")  # the front page's build clock


def files_of(folder: Path, skip: set[str] = frozenset()) -> dict[str, str]:
    """sha256 of every regular file below `folder`, by relative path (`skip`: names left out), the front
    page's time of the last change left out."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name not in skip:
            data = LAST_CHANGE.sub(b"last change", path.read_bytes())
            out[path.relative_to(folder).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def rows_of(db: Path) -> dict[str, str]:
    """A digest of every table's rows (in a stable order), by table; without the build's clock (`*_at_ms`
    columns, `build_meta`'s timings), which differs between any two builds."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [
            name
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        ]
        out = {}
        for table in tables:
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            keep = [i for i, col in enumerate(cursor.description) if not col[0].endswith("_at_ms")]
            rows = sorted(repr([row[i] for i in keep]) for row in cursor)
            if table == "build_meta":
                rows = [r for r in rows if not any(w in r for w in ("seconds", "_at", "time"))]
            out[table] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
        return out
    finally:
        conn.close()


def one_build(pristine_ws: Path, name: str, executor) -> dict:
    from mnote_evidence.build.pipeline import BuildOptions, build

    ws, out = HERE / "ws", HERE / f"out-{name}"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(pristine_ws, ws)
    spans: dict[str, list[float]] = {}

    def on_progress(event) -> None:
        now = time.perf_counter()
        span = spans.setdefault(str(event.stage), [now, now])
        span[1] = now

    options = {"jobs": 2} if executor is None else {"executor": executor}
    t = time.perf_counter()
    report = build(ws, BuildOptions(out=out, on_progress=on_progress, **options))
    wall = time.perf_counter() - t
    parse_s = sum(b - a for stage, (a, b) in spans.items() if stage in PARSE_STAGES)
    before = set(files_of(pristine_ws))
    return {
        "wall_s": wall,
        "parse_stages_s": parse_s,
        "stages_s": {stage: round(b - a, 3) for stage, (a, b) in spans.items()},
        "parsed": report.parsed,
        "errors": len(report.errors),
        "rows": rows_of(out / "evidence.sqlite"),
        "sidecars": {k: v for k, v in files_of(ws).items() if k not in before},
        "site": files_of(out, skip={"evidence.sqlite", ".mnote-state.sqlite", ".build.lock"}),
    }


def differences(a: dict, b: dict) -> dict:
    out = {}
    for part in ("rows", "sidecars", "site"):
        keys = set(a[part]) | set(b[part])
        out[part] = sorted(k for k in keys if a[part].get(k) != b[part].get(k))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()

    from distributed import Client, LocalCluster

    from mnote_evidence.build.parse.executors.dask import DaskExecutor

    HERE.mkdir(parents=True, exist_ok=True)
    ws, info = pristine(a.notes)
    t = time.perf_counter()
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    client = Client(cluster)
    client.wait_for_workers(2)
    startup = time.perf_counter() - t
    dask = DaskExecutor(client=client)
    result: dict = {"commit": git_commit(), "machine_before": machine(), "workspace": info}
    runs: dict[str, list[dict]] = {"pool": [], "dask": []}
    try:
        for _ in range(a.rounds):
            for name, executor in (("pool", None), ("dask", dask)):
                runs[name].append(one_build(ws, name, executor))
                print(name, round(runs[name][-1]["wall_s"], 2), file=sys.stderr)
    finally:
        client.close()
        cluster.close()

    best = {name: min(rs, key=lambda r: r["wall_s"]) for name, rs in runs.items()}
    pool, dist = best["pool"], best["dask"]
    resources = pool["parsed"]
    diffs = [differences(runs["pool"][0], r) for r in runs["dask"] + runs["pool"][1:]]
    overhead_ms = (dist["wall_s"] - pool["wall_s"]) / resources * 1000
    result.update(
        {
            "resources_parsed": resources,
            "dask_cluster_startup_s": round(startup, 2),
            "wall_s": {name: [round(r["wall_s"], 2) for r in rs] for name, rs in runs.items()},
            "best_wall_s": {name: round(r["wall_s"], 2) for name, r in best.items()},
            "parse_stages_s": {name: round(r["parse_stages_s"], 2) for name, r in best.items()},
            "stages_s": {name: r["stages_s"] for name, r in best.items()},
            "coordinator_outside_parse_share": {
                name: round(1 - r["parse_stages_s"] / r["wall_s"], 3) for name, r in best.items()
            },
            "overhead_per_resource_ms": round(overhead_ms, 2),
            "target_ms": TARGET_MS,
            "within_target": overhead_ms <= TARGET_MS,
            "errors": {name: r["errors"] for name, r in best.items()},
            "outputs_identical": all(not any(d.values()) for d in diffs),
            "differences": [d for d in diffs if any(d.values())][:1],
            "compared": {
                "tables": len(pool["rows"]),
                "sidecars": len(pool["sidecars"]),
                "site_files": len(pool["site"]),
            },
            "machine_after": machine(),
        }
    )
    results_path("executor.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
