"""Small helpers shared by the benchmarks: where results go, timing, peak memory, the machine's load, a
git ref's sources."""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "bench" / "_work"  # git-ignored
RESULTS = REPO / "bench" / "results"  # the committed, full-size results
QUICK_ENV = "MNOTE_BENCH_QUICK"  # "1": a quick run (`bench/run --quick` sets it for every bench it starts)
TREE = ["mnote_evidence", "build", "functions", "schemas", "site_templates"]  # what the package is made of


def results_path(name: str, quick: bool | None = None) -> Path:
    """Where a bench writes (and reads back) its results file or folder `name`: bench/results/NAME for a
    full-size run, bench/results/quick/NAME (git-ignored) for a quick one, so that a quick run never
    overwrites a committed result. `quick` defaults to the environment's MNOTE_BENCH_QUICK."""
    quick = os.environ.get(QUICK_ENV) == "1" if quick is None else quick
    path = (RESULTS / "quick" if quick else RESULTS) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best wall time (s) of `repeat` runs: the least disturbed by the rest of the machine."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def peak_rss_mb() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: ru_maxrss survives fork+exec on Linux,
    so a child would report its parent's peak."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> dict:
    """Load average (1, 5, 15 min) and core count, recorded with every result: timings on a shared box
    mean little without them."""
    return {"loadavg": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count()}


def git_output(*args: str) -> str:
    """What `git -C REPO ARGS…` prints (e.g. `git_output("show", f"{ref}:{path}")`: a file at a ref)."""
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout


def git_commit(ref: str = "HEAD") -> str:
    """`ref`'s short commit; for HEAD, "+dirty" when the working tree has uncommitted changes to tracked
    files."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", ref], capture_output=True, text=True, check=True
    ).stdout.strip()
    if (
        ref == "HEAD"
        and subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", "HEAD", "--", *TREE]).returncode
    ):
        sha += "+dirty"
    return sha


def code_commit(ref: str = "HEAD") -> str:
    """The last commit up to `ref` that changed the package's sources (bench-only commits on top share its
    code)."""
    return subprocess.run(
        ["git", "-C", str(REPO), "log", "-1", "--format=%h", ref, "--", *TREE],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def before_added(path: str) -> str:
    """The commit before the one that added `path` (a bench's default baseline: the tree without the
    work it measures); HEAD when git does not know the file."""
    added = git_output("log", "--diff-filter=A", "--format=%h", "--", path).split()
    return f"{added[-1]}^" if added else "HEAD"


def baseline_tree(ref: str, bench: str) -> Path:
    """`ref`'s package sources in bench/_work/<bench>/<ref>, importable with PYTHONPATH (no install),
    byte-compiled."""
    dest = WORK / bench / ref.replace("/", "_")
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, *TREE], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    wheel_layout(dest)
    compile_tree(dest)
    return dest


def wheel_layout(root: Path) -> None:
    """Make the stage folders subpackages of `root/mnote_evidence` (links, as the wheel lays them out),
    so PYTHONPATH=root imports that tree's code, not an editable install's."""
    if not (root / "build" / "__init__.py").is_file():
        return  # a tree whose package extends its own path to the stage folders
    for folder in ("build", "functions", "schemas", "site_templates"):
        link = root / "mnote_evidence" / folder
        if (root / folder).is_dir() and not link.exists():
            link.symlink_to(Path("..") / folder)


def compile_tree(root: Path) -> None:
    """Byte-compile as an install does: this machine sets PYTHONDONTWRITEBYTECODE, which would otherwise add
    ~80 ms of compiling to every start of a child process."""
    for folder in ("mnote_evidence", "build", "functions"):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / folder)], check=True)


def cpu_s() -> float:
    """CPU time (user + system) of this process and all its descendants: the reaped ones (getrusage) and
    the live ones with what they reaped (psutil). The build's workers are children of a multiprocessing
    forkserver that outlives a pool, so getrusage alone would leave them out."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    try:
        import psutil
    except ImportError:
        return total
    for proc in psutil.Process().children(recursive=True):
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux prctl PR_SET_CHILD_SUBREAPER), so the
    CPU time of a child's forkserver and its workers, which outlive the child, is counted in
    RUSAGE_CHILDREN once `reap_orphans` has waited for them."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans(known: set[int], timeout: float = 30.0) -> int:
    """Wait for the descendants re-parented to this process since `known` (its children before) was taken."""
    try:
        import psutil
    except ImportError:
        return 0
    deadline, reaped = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        orphans = [p.pid for p in psutil.Process().children() if p.pid not in known]
        if not orphans:
            break
        for pid in orphans:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    reaped += 1
            except ChildProcessError:
                pass
        time.sleep(0.02)
    return reaped


def children_pids() -> set[int]:
    try:
        import psutil
    except ImportError:
        return set()
    return {p.pid for p in psutil.Process().children()}


def interleaved(fns: dict[str, Callable[[], object]], rounds: int = 3) -> dict[str, dict]:
    """Each function once per round, in turn, so load on the machine hits all alike. Per name: the wall times,
    their min and median, and the min CPU time (this process + reaped children)."""
    walls: dict[str, list[float]] = {name: [] for name in fns}
    cpus: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            c, t = cpu_s(), time.perf_counter()
            fn()
            walls[name].append(time.perf_counter() - t)
            cpus[name].append(cpu_s() - c)
    return {
        name: {
            "wall_s": [round(x, 3) for x in walls[name]],
            "min_s": round(min(walls[name]), 3),
            "median_s": round(statistics.median(walls[name]), 3),
            "cpu_min_s": round(min(cpus[name]), 3),
        }
        for name in fns
    }
