"""Build cost against workspace size: synthetic notes at 100, 1,000, 10,000 (and 100,000) notes, \
against a git ref's code.

    python bench/scale.py [--notes 100,1000,10000] [--with-100k] [--baseline-ref REF] [--repeat 3]
                          [--edits N] [--settle S] [--jobs J] [--resume] [--keep]

Workspace: N generated notes (`make_notes`, deterministic: same bytes for the same N and seed), ~5.6 KB each
of mixed Chinese/English paragraphs (bench/fts_recall.py's corpus), a front-matter tag, `##` headings and
wikilinks to other notes, 100 notes per folder; cached in bench/_work/scale/notes-<N>-g<GENERATOR>/.
Every measurement is a whole `python -m mnote_evidence build WS --out OUT --json` process (PYTHONPATH = the
tree under test, working directory = that tree), run under /usr/bin/time:
- `full`: a fresh copy of the workspace, no output folder (best of --repeat up to 1,000 notes, else once);
- `noop`: the same command again, nothing changed (--repeat times);
- `edit`: one paragraph appended to one note (a different note each round, the same notes for every tree),
  --edits rounds (default --repeat), the trees alternating; --settle S waits S seconds between the append and
  the build (as a person saves, then builds; 0: at once, the previous build's writes still being flushed).
Per run: wall time of the process, `seconds` of its BuildReport (the time inside `build()`, start-up
excluded), CPU time (user + system of the process, its forkserver and workers: this process becomes their
subreaper and waits for them), peak RSS (`%M` of /usr/bin/time: the largest single process), peak
memory of the whole process tree (summed PSS, sampled every 0.2 s), and the load average before it
started. After the last full build: bytes of evidence.sqlite, of the whole output folder and of the notes.
With --baseline-ref, the same runs on that git ref's sources (`git archive`) interleaved with the working
tree's, so load on the machine hits both alike.
Results (bench/results/scale.json, or --result PATH) are written after each size; --resume keeps the
sizes already measured for the same commits and goes on with the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import (
    REPO,
    WORK,
    baseline_tree,
    become_subreaper,
    children_pids,
    code_commit,
    compile_tree,
    git_commit,
    machine,
    reap_orphans,
    results_path,
)
from bench.fts_recall import paragraphs

GENERATOR = 1  # bump when make_notes changes what it writes (cached workspaces are keyed by it)
SEED = 11
PARAGRAPHS = 40
RESULT = results_path("scale.json")
HERE = WORK / "scale"
TIME = "/usr/bin/time"


def note_path(i: int) -> str:
    return f"f{i // 100:04d}/note-{i:06d}.md"


def make_notes(ws: Path, n: int, seed: int = SEED) -> dict:
    """Write N notes into `ws`; deterministic (note i's text depends on seed and N only). Returns counts."""
    rnd = random.Random(seed)
    texts = paragraphs(seed)
    total = links = 0
    for i in range(n):
        paras = list(islice(texts, PARAGRAPHS))
        body = [f"---\ntags: [t{rnd.randint(0, 50)}]\n---", f"# Note {i} {paras[0][:12]}"]
        for k, p in enumerate(paras):
            if k % 8 == 7:
                body.append(f"## Part {k}")
            if rnd.random() < 0.3:
                p += f" See [[note-{rnd.randrange(n):06d}]]."
                links += 1
            body.append(p)
        data = ("\n\n".join(body) + "\n").encode()
        path = ws / note_path(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        total += len(data)
    return {"notes": n, "bytes": total, "wikilinks": links, "seed": seed, "generator": GENERATOR}


def workspace(n: int) -> tuple[Path, dict]:
    """The pristine generated workspace of N notes (generated once, then reused)."""
    ws, marker = HERE / f"notes-{n}-g{GENERATOR}", HERE / f"notes-{n}-g{GENERATOR}.json"
    if marker.exists() and ws.is_dir():
        return ws, json.loads(marker.read_text())
    shutil.rmtree(ws, ignore_errors=True)
    t = time.perf_counter()
    info = make_notes(ws, n)
    info["generate_s"] = round(time.perf_counter() - t, 1)
    marker.write_text(json.dumps(info))
    return ws, info


def tree_memory_sampler(pid: int, stop: threading.Event, peak: list[int]) -> None:
    """Peak of the summed PSS (shared pages divided among their sharers) of `pid` and its descendants."""
    try:
        import psutil
    except ImportError:
        return
    while not stop.wait(0.2):
        total = 0
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for p in procs:
            try:
                total += p.memory_full_info().pss
            except (psutil.Error, AttributeError):
                continue
        peak[0] = max(peak[0], total)


def run_build(tree: Path, ws: Path, out: Path, jobs: int | None) -> dict:
    """One whole `python -m mnote_evidence build` process on `tree`'s sources; its costs."""
    cmd = [sys.executable, "-m", "mnote_evidence", "build", str(ws), "--out", str(out), "--json"]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    load = os.getloadavg()[0]
    subreaper = become_subreaper()
    known = children_pids()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.NamedTemporaryFile("r", suffix=".time") as stats:
        wrapped = [TIME, "-f", "%M", "-o", stats.name, *cmd] if os.access(TIME, os.X_OK) else cmd
        stop, peak = threading.Event(), [0]
        t = time.perf_counter()
        proc = subprocess.Popen(wrapped, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        sampler = threading.Thread(target=tree_memory_sampler, args=(proc.pid, stop, peak), daemon=True)
        sampler.start()
        stdout, stderr = proc.communicate()
        wall = time.perf_counter() - t
        stop.set()
        sampler.join()
        reap_orphans(known)  # the build's forkserver and workers, which outlive it
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode:
            raise RuntimeError(f"build failed ({proc.returncode}): {stderr.decode(errors='replace')[-1500:]}")
        rss_kb = stats.read().split()[-1] if wrapped is not cmd else None
    report = json.loads(stdout)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {
        "wall_s": round(wall, 3),
        "build_s": round(report["seconds"], 3),
        "cpu_s": round(cpu, 2),
        "cpu_includes_workers": subreaper,
        "peak_rss_mb": None if rss_kb is None else round(int(rss_kb) / 1024, 1),
        "peak_tree_pss_mb": round(peak[0] / 2**20, 1) if peak[0] else None,
        "parsed": report["parsed"],
        "unchanged": report["unchanged"],
        "changed": report["changed"],
        "errors": len(report["errors"]),
        "pages_written": (report.get("site") or {}).get("pages_written"),
        "load1": round(load, 2),
    }


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def edit(ws: Path, n: int, round_: int) -> str:
    """Append one paragraph to one note (a different one each round, the same for every tree)."""
    rel = note_path((round_ * 7919 + 13) % n)
    with open(ws / rel, "a", encoding="utf-8") as f:
        f.write(f"\n编辑 edit round {round_}: 线程作用域 scale bench appended paragraph.\n")
    return rel


def stats(runs: list[dict]) -> dict:
    out = {"runs": runs}
    for key in ("wall_s", "build_s", "cpu_s", "peak_rss_mb", "peak_tree_pss_mb"):
        values = [r[key] for r in runs if r.get(key) is not None]
        if values:
            out[key] = {"min": min(values), "median": round(statistics.median(values), 3)}
    return out


def measure(
    n: int, trees: dict[str, Path], commits: dict[str, str], code_commits: dict[str, str], args
) -> list[dict]:
    pristine, info = workspace(n)
    dirs = {label: HERE / f"run-{label}-{n}" for label in trees}
    full: dict[str, list] = {label: [] for label in trees}
    noop: dict[str, list] = {label: [] for label in trees}
    edits: dict[str, list] = {label: [] for label in trees}
    start = machine()
    for _ in range(args.repeat if n <= 1000 else 1):
        for label, tree in trees.items():
            shutil.rmtree(dirs[label], ignore_errors=True)
            shutil.copytree(pristine, dirs[label] / "ws")
            full[label].append(run_build(tree, dirs[label] / "ws", dirs[label] / "out", args.jobs))
            print(f"  {n} notes, {label}: full {full[label][-1]}", file=sys.stderr)
    sizes = {}
    for label, d in dirs.items():
        out = d / "out"
        db = sum(p.stat().st_size for p in out.glob("evidence.sqlite*"))
        sizes[label] = {
            "db_bytes": db,
            "out_bytes": du(out),
            "notes_bytes": info["bytes"],
            "workspace_bytes_after": du(d / "ws"),
            "db_per_notes_byte": round(db / info["bytes"], 2),
        }
    for _ in range(args.repeat):
        for label, tree in trees.items():
            noop[label].append(run_build(tree, dirs[label] / "ws", dirs[label] / "out", args.jobs))
    for r in range(args.edits or args.repeat):
        for label, tree in trees.items():
            edited = edit(dirs[label] / "ws", n, r)
            time.sleep(args.settle)
            edits[label].append(
                {**run_build(tree, dirs[label] / "ws", dirs[label] / "out", args.jobs), "note": edited}
            )
    if not args.keep:
        for d in dirs.values():
            shutil.rmtree(d, ignore_errors=True)
    end = machine()
    return [
        {
            "notes": n,
            "ref": label,
            "commit": commits[label],
            "code_commit": code_commits[label],
            "jobs": args.jobs or "default",
            "workspace": info,
            "machine_start": start,
            "machine_end": end,
            "full": stats(full[label]),
            "noop": stats(noop[label]),
            "edit": stats(edits[label]),
            "sizes": sizes[label],
        }
        for label in trees
    ]


def write(result: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", default="100,1000,10000", help="comma-separated sizes")
    ap.add_argument("--with-100k", action="store_true", help="add 100,000 notes (long: generate + build)")
    ap.add_argument("--baseline-ref", help="also measure this git ref's sources, interleaved")
    ap.add_argument(
        "--repeat", type=int, default=3, help="rounds of no-op and edit (and of full up to 1,000)"
    )
    ap.add_argument("--jobs", type=int, help="--jobs of the build (default: the build's own default)")
    ap.add_argument(
        "--edits", type=int, help="rounds of one-note edits, trees alternating (default: --repeat)"
    )
    ap.add_argument(
        "--settle", type=float, default=0.0, help="seconds between an edit and its build (default 0: at once)"
    )
    ap.add_argument(
        "--resume", action="store_true", help="keep sizes already in the results for the same commits"
    )
    ap.add_argument("--keep", action="store_true", help="keep the built workspaces in bench/_work/scale/")
    ap.add_argument("--result", type=Path, default=RESULT, help="where to write the results JSON")
    args = ap.parse_args()
    sizes = [int(x) for x in args.notes.split(",") if x] + ([100_000] if args.with_100k else [])
    compile_tree(REPO)
    trees, commits, code = {"current": REPO}, {"current": git_commit()}, {"current": code_commit()}
    if args.baseline_ref:
        trees = {"baseline": baseline_tree(args.baseline_ref, "scale"), **trees}
        commits["baseline"], code["baseline"] = git_commit(args.baseline_ref), code_commit(args.baseline_ref)
    old = json.loads(args.result.read_text()) if args.resume and args.result.exists() else {"results": []}
    done = {(r["notes"], r["ref"], r["commit"]) for r in old["results"]}
    result = {"about": __doc__.split("\n")[0], "commits": commits, "code_commits": code, "results": []}
    for n in sizes:
        kept = [
            r
            for r in old["results"]
            if r["notes"] == n
            and (n, r["ref"], commits.get(r["ref"])) in done
            and r["commit"] == commits.get(r["ref"])
        ]
        if len(kept) == len(trees):
            print(f"{n} notes: kept from the last run", file=sys.stderr)
            result["results"] += kept
            continue
        print(f"{n} notes ...", file=sys.stderr)
        result["results"] += measure(n, trees, commits, code, args)
        write(result, args.result)
    write(result, args.result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
