#!/usr/bin/env python3
"""Ray and Dask distributed against the build's own process pool, on this machine, 2 workers each.

    python bench/engines.py [--tasks 200] [--dask-python PY] [--ray-python PY]

For each engine (and `pool`, `build/parse/workers.worker_pool`): the start-up of a local cluster (until
a no-op has come back from both workers), the cost per task of a no-op and of the build's real
`parse_many` on one small note (N tasks in flight on 2 workers: wall / N; and one task at a time:
median round trip), the resident memory of the coordinating process, of the engine's other processes and
of each worker, the install size (the engine's dependency closure less what mnote-evidence already
depends on, from the installed distributions' RECORD files), and what happens when a worker is killed
mid-task (retried? seconds from the kill to the answer) and when a task kills every worker it runs on
(bounded retries, then an error? the client never hangs: each wait has a 120 s limit).

An engine is measured in a child interpreter that has it installed (`--dask-python`, `--ray-python`;
default this one); an engine that cannot be imported there is reported as missing. Writes
bench/results/engines.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

NOTE = "# A note\n\nSome text with a [[link]] and a #tag.\n\n- a list item\n- another one\n"
WAIT_S = 120.0  # the longest any wait for an answer may take: past it the client is reported as hung
SLOW_S = 6.0  # how long the task that is killed mid-way runs


# -- the tasks (module-level, so every engine ships them by reference to bench.engines) --------------
def noop(i: int) -> int:
    return i


def parse_note(root: str, path: str, source_hash: str, i: int) -> list:
    from mnote_evidence.build.parse.ocr.settings import OcrSettings
    from mnote_evidence.build.parse.run import parse_many

    return parse_many(root, [(path, source_hash)], OcrSettings(engine="none"))


def whoami(i: int) -> int:
    time.sleep(0.05)  # long enough that two of them land on two workers
    return os.getpid()


def slow_marked(marker: str, seconds: float) -> int:
    """Record this attempt's pid, then work for `seconds`: the bench kills the first attempt's worker."""
    with open(marker, "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(seconds)
    return os.getpid()


def always_dies(marker: str) -> int:
    """A task whose every attempt takes its worker down (a native crash)."""
    with open(marker, "a") as f:
        f.write(f"{os.getpid()}\n")
    os.kill(os.getpid(), signal.SIGKILL)
    return 0


# -- engines: start, submit, wait ---------------------------------------------------------------------
class Pool:
    name = "pool"

    def start(self) -> None:
        from mnote_evidence.build.parse.workers import worker_pool

        self.ex = worker_pool(2)

    def submit(self, fn, *args):
        return self.ex.submit(fn, *args)

    def result(self, fut, timeout: float = WAIT_S):
        return fut.result(timeout=timeout)

    def results(self, futs):
        return [f.result(timeout=WAIT_S) for f in futs]

    def worker_pids(self) -> set[int]:
        return {p.pid for p in self.ex._processes.values()}

    def restart(self) -> None:
        self.ex.shutdown(wait=False, cancel_futures=True)
        self.start()

    def stop(self) -> None:
        self.ex.shutdown(wait=True, cancel_futures=True)


class Dask:
    name = "dask"

    def start(self) -> None:
        import dask
        from distributed import Client, LocalCluster

        self.version = dask.__version__
        self.cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        )
        self.client = Client(self.cluster)

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, pure=False)

    def result(self, fut, timeout: float = WAIT_S):
        return fut.result(timeout=timeout)

    def results(self, futs):
        return self.client.gather(futs)

    def worker_pids(self) -> set[int]:
        return set(self.client.run(os.getpid).values())

    def restart(self) -> None:
        pass

    def stop(self) -> None:
        self.client.close()
        self.cluster.close()


class Ray:
    name = "ray"

    def start(self) -> None:
        import ray

        self.ray = ray
        self.version = ray.__version__
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        self.remotes: dict = {}

    def submit(self, fn, *args):
        if fn not in self.remotes:
            self.remotes[fn] = self.ray.remote(fn)
        return self.remotes[fn].remote(*args)

    def result(self, fut, timeout: float = WAIT_S):
        return self.ray.get(fut, timeout=timeout)

    def results(self, futs):
        return self.ray.get(futs, timeout=WAIT_S)

    def worker_pids(self) -> set[int]:
        return set(self.results([self.submit(whoami, i) for i in range(8)]))

    def restart(self) -> None:
        pass

    def stop(self) -> None:
        self.ray.shutdown()


ENGINES = {"pool": Pool, "dask": Dask, "ray": Ray}


def rss_mb(pid: int) -> float:
    import psutil

    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except psutil.Error:
        return 0.0


def measure(name: str, tasks: int) -> dict:
    import psutil

    from mnote_evidence.build.workspace.scan import file_sha256

    engine = ENGINES[name]()
    out: dict = {"engine": name}
    work = Path(tempfile.mkdtemp(prefix=f"engines-{name}-"))
    note = work / "note.md"
    note.write_text(NOTE)
    args = (str(work), "note.md", file_sha256(note))

    t = time.perf_counter()
    engine.start()
    engine.results([engine.submit(whoami, i) for i in range(2)])
    out["startup_s"] = round(time.perf_counter() - t, 3)
    out["version"] = getattr(engine, "version", "")
    engine.results([engine.submit(parse_note, *args, i) for i in range(20)])  # imports loaded everywhere

    direct = []
    for i in range(tasks):
        t = time.perf_counter()
        parse_note(*args, i)
        direct.append(time.perf_counter() - t)
    out["parse_in_process_ms"] = round(statistics.median(direct) * 1000, 3)

    for label, fn, fargs in (("noop", noop, ()), ("parse", parse_note, args)):
        t = time.perf_counter()
        engine.results([engine.submit(fn, *fargs, i) for i in range(tasks)])
        out[f"{label}_per_task_ms"] = round((time.perf_counter() - t) / tasks * 1000, 3)
        trips = []
        for i in range(min(tasks, 50)):
            t = time.perf_counter()
            engine.result(engine.submit(fn, *fargs, i))
            trips.append(time.perf_counter() - t)
        out[f"{label}_round_trip_ms"] = round(statistics.median(trips) * 1000, 3)

    workers = engine.worker_pids()
    me = os.getpid()
    others = [p.pid for p in psutil.Process().children(recursive=True) if p.pid not in workers]
    if name == "ray":  # Ray's services (gcs_server, raylet, its agents) are not all this process's children
        others = sorted(
            set(others)
            | {
                p.pid
                for p in psutil.process_iter(["cmdline"])
                if p.pid not in workers and p.pid != me and "ray" in " ".join(p.info["cmdline"] or [])
            }
        )
    out["memory_mb"] = {
        "coordinator": round(rss_mb(me), 1),
        "engine_processes": round(sum(rss_mb(p) for p in others), 1),
        "engine_process_count": len(others),
        "per_worker": [round(rss_mb(p), 1) for p in sorted(workers)],
    }
    out["worker_killed_mid_task"] = kill_mid_task(engine, work)
    out["task_kills_every_worker"] = task_always_dies(engine, work)
    engine.stop()
    return out


def kill_mid_task(engine, work: Path) -> dict:
    marker = work / "slow.attempts"
    fut = engine.submit(slow_marked, str(marker), SLOW_S)
    deadline = time.monotonic() + WAIT_S
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    victim = int(marker.read_text().split()[0])
    time.sleep(0.5)
    os.kill(victim, signal.SIGKILL)
    t = time.perf_counter()
    outcome = answer(engine, fut)
    outcome["seconds_from_kill"] = round(time.perf_counter() - t, 2)
    pids = marker.read_text().split()
    outcome["attempts"] = len(pids)
    outcome["retried_elsewhere"] = len(set(pids)) > 1
    outcome["cluster_usable_after"] = usable(engine)
    return outcome


def task_always_dies(engine, work: Path) -> dict:
    marker = work / "dies.attempts"
    t = time.perf_counter()
    outcome = answer(engine, engine.submit(always_dies, str(marker)))
    outcome["seconds"] = round(time.perf_counter() - t, 2)
    outcome["attempts"] = len(marker.read_text().split()) if marker.exists() else 0
    outcome["cluster_usable_after"] = usable(engine)
    return outcome


def answer(engine, fut) -> dict:
    try:
        engine.result(fut, timeout=WAIT_S)
        return {"outcome": "result"}
    except TimeoutError:
        return {"outcome": f"no answer within {WAIT_S:g} s (hung)"}
    except Exception as exc:
        kind = type(exc).__name__
        return {"outcome": "hung" if "Timeout" in kind else f"error: {kind}"}


def usable(engine) -> bool:
    try:
        engine.restart()  # the pool is broken by a dead worker: the build starts a fresh one
        return engine.result(engine.submit(noop, 7), timeout=WAIT_S) == 7
    except Exception:
        return False


# -- install size -------------------------------------------------------------------------------------
def closure(requirement: str) -> set[str]:
    """The installed distributions `requirement` needs, transitively (markers evaluated, extras followed)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [(Requirement(requirement), "")]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        key = name + "".join(f"[{e}]" for e in sorted(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        for spec in dist.requires or []:
            child = Requirement(spec)
            for wanted in req.extras or {""}:
                if child.marker is None or child.marker.evaluate({"extra": wanted}):
                    todo.append((child, wanted))
    return {k.split("[")[0] for k in seen}


def install_size(requirement: str) -> dict:
    from importlib.metadata import distribution

    new = sorted(closure(requirement) - closure("mnote-evidence"))
    sizes = {}
    for name in new:
        files = distribution(name).files or []
        sizes[name] = sum(f.locate().stat().st_size for f in files if f.locate().is_file())
    return {
        "requirement": requirement,
        "new_distributions": len(new),
        "mb": round(sum(sizes.values()) / 2**20, 1),
        "largest": {k: round(v / 2**20, 1) for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])[:6]},
    }


REQUIREMENT = {"dask": "dask[distributed]", "ray": "ray"}


def child(name: str, tasks: int) -> dict:
    out = measure(name, tasks)
    if name in REQUIREMENT:
        out["install"] = install_size(REQUIREMENT[name])
    return out


def main() -> None:
    from bench._util import git_commit, machine, results_path

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--dask-python", default=sys.executable)
    ap.add_argument("--ray-python", default=sys.executable)
    ap.add_argument("--engine", help=argparse.SUPPRESS)  # the child's mode: measure one, print JSON
    a = ap.parse_args()
    if a.engine:  # through the module, so that every engine ships the tasks by reference to it
        from bench import engines

        print(json.dumps(engines.child(a.engine, a.tasks)))
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    result: dict = {"commit": git_commit(), "machine_before": machine(), "tasks": a.tasks, "engines": {}}
    for name, python in (("pool", sys.executable), ("dask", a.dask_python), ("ray", a.ray_python)):
        proc = subprocess.run(
            [python, str(Path(__file__)), "--engine", name, "--tasks", str(a.tasks)],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(REPO),
        )
        lines = proc.stdout.strip().splitlines()
        if proc.returncode or not lines:
            result["engines"][name] = {"missing_or_failed": proc.stderr.strip().splitlines()[-3:]}
        else:
            result["engines"][name] = json.loads(lines[-1])
        print(name, json.dumps(result["engines"][name]), file=sys.stderr)
    pool = result["engines"]["pool"]
    for name in ("dask", "ray"):
        e = result["engines"][name]
        if "parse_per_task_ms" in e and "parse_per_task_ms" in pool:
            e["overhead_over_pool_ms"] = {
                k: round(e[k] - pool[k], 3)
                for k in (
                    "noop_per_task_ms",
                    "parse_per_task_ms",
                    "noop_round_trip_ms",
                    "parse_round_trip_ms",
                )
            }
    result["machine_after"] = machine()
    results_path("engines.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
