"""One-note edit and no-op rebuilds, inside the build and whole process, code A against code B in the
same run (README "Incremental builds").

    python bench/incremental.py --site NAME=CODE:BUILT [--site NAME=CODE:BUILT ...] [--rounds 3]

CODE is a source checkout (it goes on PYTHONPATH, e.g. a `git worktree` of main, or this one) and
BUILT a folder holding `ws/` (the workspace) and `out/` (a finished build of it made with that code;
`bench/scale.py` or `python -m mnote_evidence build BUILT/ws --out BUILT/out` makes one). Rounds are
interleaved across the sites, so load drifts hit both alike. Each round, per site: append a line to
one note and build ("edit"), wait past the 2 s window in which a fresh mtime is not trusted, build once
(it records the edited note's stamp), then build again ("noop"). Reported per site and case: the
build's own `BuildReport.seconds` and the whole process's wall time and CPU time (user + system: less
sensitive to a loaded machine than wall time) of `python -m mnote_evidence build`, min and median over
the rounds, and the machine's load average before each round.
Results: bench/results/incremental.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import results_path

RESULTS = results_path("incremental.json")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _build(code: Path, built: Path) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of the process, its --json report)."""
    env = dict(os.environ, PYTHONPATH=str(code))
    started, cpu = time.perf_counter(), _cpu()
    # cwd: the built folder, never a checkout (`python -m` puts the working directory first on sys.path,
    # so a run from this checkout would import its code whatever PYTHONPATH says)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mnote_evidence",
            "build",
            str(built / "ws"),
            "--out",
            str(built / "out"),
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=built,
    )
    return time.perf_counter() - started, _cpu() - cpu, json.loads(done.stdout)


def _edit(built: Path, note: str, round_: int) -> None:
    path = built / "ws" / note
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"\nAn edit for round {round_} of the incremental bench.\n")


def _summary(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 3), "median": round(statistics.median(values), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", action="append", required=True, help="NAME=CODE:BUILT")
    ap.add_argument("--note", default="f0005/note-000500.md", help="the note edited (root-relative)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    sites = {}
    for spec in args.site:
        name, _, rest = spec.partition("=")
        code, _, built = rest.partition(":")
        sites[name] = (Path(code).resolve(), Path(built).resolve())
    runs: dict[str, dict[str, dict[str, list[float]]]] = {
        n: {c: {"build_s": [], "process_s": [], "process_cpu_s": []} for c in ("edit", "noop")} for n in sites
    }
    details: dict[str, dict] = {}
    loads = []
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for name, (code, built) in sites.items():
            _build(code, built)  # settle: whatever an earlier round left
            _edit(built, args.note, r)
            wall, cpu, report = _build(code, built)
            runs[name]["edit"]["build_s"].append(report["seconds"])
            runs[name]["edit"]["process_s"].append(wall)
            runs[name]["edit"]["process_cpu_s"].append(cpu)
            details[name] = {
                "edit": {k: report.get(k) for k in ("parsed", "hashed", "changed")}
                | {"pages_written": (report.get("site") or {}).get("pages_written")}
            }
            time.sleep(2.1)
            _build(code, built)
            wall, cpu, report = _build(code, built)
            runs[name]["noop"]["build_s"].append(report["seconds"])
            runs[name]["noop"]["process_s"].append(wall)
            runs[name]["noop"]["process_cpu_s"].append(cpu)
            details[name]["noop"] = {k: report.get(k) for k in ("parsed", "hashed", "changed")}
            print(
                name,
                r,
                {
                    c: (v["build_s"][-1], round(v["process_s"][-1], 3), round(v["process_cpu_s"][-1], 3))
                    for c, v in runs[name].items()
                },
                flush=True,
            )
    out = {
        "note": args.note,
        "rounds": args.rounds,
        "load_avg_1min": [round(x, 2) for x in loads],
        "cpus": os.cpu_count(),
        "sites": {},
    }
    for name, (code, built) in sites.items():
        files = sum(1 for p in (built / "ws").rglob("*") if p.is_file())
        out["sites"][name] = {
            "code": str(code),
            "files": files,
            "last_report": details[name],
            **{case: {k: _summary(v) for k, v in vals.items()} for case, vals in runs[name].items()},
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", "utf-8")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
