"""`ask --json` against LightRAG's own warm `/query/data` (target: <= 2x).

    python bench/ask_startup.py [--rounds 7] [--baseline-ref main]

A real lightrag-server (the tests' offline harness: stand-in embeddings and LLM) over the real
workspace of bench/real_workspace.py (built and ingested here if not yet). Every question is run
once first (LightRAG caches its LLM replies: warm). Then, interleaved per round and question, so
the machine's load hits all alike:
- `queryData`: one direct POST /query/data from this process (the reference);
- `query`: one direct POST /query (the answer call `ask` makes besides /query/data);
- `askInProcess`: `functions.knowledge.ask` in this process: both LightRAG calls (overlapped) + mapping;
- `script`: the installed console script, `mnote-evidence ask --json` (the real entry script, not
  pyenv's shim; the shim is timed separately as `shim`, when PATH has one);
- `module`: `python -m mnote_evidence ask --json`;
- `version`: `python -m mnote_evidence --version` (interpreter + click + the package: start-up floor);
- `bare`: `python -c pass` (the interpreter alone);
- with `--baseline-ref`, `baselineModule`: `python -m mnote_evidence ask --json` on that git ref's
  code (extracted with `git archive`), the baseline.
Both source trees are byte-compiled first (`compileall`), as an install is: this machine sets
PYTHONDONTWRITEBYTECODE, which would otherwise add ~80 ms of compiling to every start.
Each `askInProcess` call gets a fresh `Context` (a new database handle), as the CLI process does.
Medians in ms of wall time, and (`...Cpu`) of the process's CPU time (user + system; the
machine is shared, CPU time leaves out waiting for a core); the ratios are wall over `queryData`.
Results: bench/results/ask_startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import baseline_tree, compile_tree, results_path
from bench.real_workspace import WORK, assemble
from mnote_evidence.build.knowledge.lightrag import LightRag as Client
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.knowledge import ask
from tests.knowledge.harness import LightRag

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT = results_path("ask_startup.json")
QUESTIONS = REPO / "tests/real_documents/questions.json"


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def run_ok(cmd: list[str], env: dict) -> float:
    """Run `cmd` (in its source tree: `-m` puts the working directory first on sys.path); its CPU ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=env["PYTHONPATH"])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cmd[-1] == "--json":
        assert json.loads(done.stdout)["ok"], done.stderr[-800:]
    else:
        assert done.returncode == 0, done.stderr[-800:]
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--questions", type=int, default=6, help="how many of questions.json (every 8th)")
    parser.add_argument("--baseline-ref", help="also time `python -m mnote_evidence ask` on this git ref")
    args = parser.parse_args()
    ws, out = WORK / "ws", WORK / "out"
    files = assemble(ws)
    questions = json.loads(QUESTIONS.read_text("utf-8"))["questions"][::8][: args.questions]
    server = LightRag(WORK / "lightrag")
    server.start()
    try:
        if not (out / "evidence.sqlite").exists():
            from mnote_evidence.build.pipeline import BuildOptions, build

            build(
                ws, BuildOptions(out=out, jobs=2, site=True, lightrag=LightRagConfig(server.url, timeout=120))
            )
        result = measure(server.url, out, questions, args)
    finally:
        server.close()
    result = {"workspace": {"files": files}, **result}
    text = json.dumps(result, indent=2, ensure_ascii=False)
    RESULT.write_text(text + "\n", "utf-8")
    print(text)


def measure(url: str, out: Path, questions: list[dict], args) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LIGHTRAG_URL": url}
    compile_tree(REPO)
    py = sys.executable
    script = Path(py).parent / "mnote-evidence"
    shim = shutil.which("mnote-evidence")
    tail = ["--site", str(out), "--mode", "naive", "--json"]
    commands = {
        "script": [str(script), "ask", "", *tail],
        "module": [py, "-m", "mnote_evidence", "ask", "", *tail],
        "version": [py, "-m", "mnote_evidence", "--version"],
        "bare": [py, "-c", "pass"],
    }
    if shim and Path(shim).resolve() != script.resolve():
        commands["shim"] = [shim, "ask", "", *tail]
    envs = {name: env for name in commands}
    if args.baseline_ref:
        commands["baselineModule"] = [py, "-m", "mnote_evidence", "ask", "", *tail]
        envs["baselineModule"] = {**env, "PYTHONPATH": str(baseline_tree(args.baseline_ref, "ask_startup"))}

    def ask_fresh(question: str) -> None:
        ctx = Context(EvidenceDB(out / "evidence.sqlite"), "", LightRagConfig(url, timeout=120))
        assert ask({"query": question, "mode": "naive"}, ctx)["ok"]

    client = Client(LightRagConfig(url, timeout=120))
    samples: dict[str, list[float]] = {}

    def one_round(record: bool) -> None:
        for q in questions:
            row = {
                "queryData": timed(lambda q=q: client.query_data(q["q"], "naive", 10)),
                "query": timed(lambda q=q: client.answer(q["q"], "naive", 10)),
            }
            c0 = time.process_time()
            row["askInProcess"] = timed(lambda q=q: ask_fresh(q["q"]))
            row["askInProcessCpu"] = (time.process_time() - c0) * 1000
            for name, cmd in commands.items():
                cmd = [q["q"] if part == "" else part for part in cmd]
                t = time.perf_counter()
                row[name + "Cpu"] = run_ok(cmd, envs[name])
                row[name] = (time.perf_counter() - t) * 1000
            if record:
                for k, v in row.items():
                    samples.setdefault(k, []).append(v)

    one_round(record=False)  # warm: LightRAG's LLM cache, the OS page cache, .pyc files
    for _ in range(args.rounds):
        one_round(record=True)
    med = {k: round(statistics.median(v), 1) for k, v in samples.items()}
    ratio = {
        k: round(med[k] / med["queryData"], 2) for k in med if k != "queryData" and not k.endswith("Cpu")
    }
    return {
        "questions": len(questions),
        "rounds": args.rounds,
        "samplesEach": len(samples["queryData"]),
        "mode": "naive",
        "topK": 10,
        "medianMs": med,
        "overQueryData": ratio,
        "baselineRef": args.baseline_ref,
        "loadAverage": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }


if __name__ == "__main__":
    main()
