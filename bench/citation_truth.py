"""Citation truth on real documents through a real lightrag-server: what the reader sees is where the
link opens.

    python bench/citation_truth.py [--baseline [REF]]

Two workspaces, each with its own questions and result: `real` (below) and `unseen`
(tests/real_documents/unseen/: pages of the Debian reference in English and Chinese and of the Asymptote
manual, a scanned page as a PNG and as an image-only PDF (OCR), pandoc's own Word test files; the
`unseen` questions, written on documents no other set uses).

Workspace: bench/real_workspace.py (Debian documentation PDFs: R manuals, gnuplot, libtasn1,
shared-mime-info; python-docx's test .docx files; the content fixtures), built and ingested into
the tests' offline lightrag-server harness (stand-in embeddings and LLM). Questions:
tests/real_documents/questions.json (48, written from the sources, each with the phrase that
answers it). Each question: `/query/data` (naive, top 10) -> `CitationMapper` in process -> the
checks of tests/knowledge/truth.py against the sidecars on disk and the PDFs (PyMuPDF
`get_textbox`; each stated precision read back from the original file by another reader). Also: fact
hits (when a retrieved chunk holds the answer phrase, does its citation open a block holding it?)
and mapping time per question (median, p95; the LightRAG call excluded).
Mapping time is reported as wall time and as this process's CPU time (the machine is shared: CPU time
leaves out the waits for a core). `--baseline REF` runs the same data through the
citation package at REF (`git show REF:functions/citations/*.py`, its other imports from this tree) too.
Targets: >= 95 % quotes fully in block, >= 98 % blocks (100 % on `unseen`) and >= 95 % regions inside
the chunk, 100 % boxes, 100 % precision held, mapping <= 20 ms per question.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import git_output, results_path
from bench.real_workspace import REPO, WORK, assemble
from mnote_evidence.build.knowledge.lightrag import LightRag as Client
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.build.pipeline import BuildOptions, build
from mnote_evidence.functions.citations.mapper import CitationMapper
from tests.knowledge.harness import LightRag
from tests.knowledge.truth import Tally, check

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE.parent / "tests/real_documents/questions.json"
RESULT = results_path("citation_truth.json")
UNSEEN = REPO / "tests/real_documents/unseen"
UNSEEN_WORK = HERE / "_work" / "unseen"


def norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def baseline_mapper(ref: str):
    """The citation package at git `ref`, loaded as `baseline_citations` (its imports of its own modules
    rewritten to that package; everything else it imports comes from this tree)."""
    names = git_output("ls-tree", "--name-only", f"{ref}:functions/citations").split()
    pkg = WORK / "baseline_citations"
    shutil.rmtree(pkg, ignore_errors=True)
    pkg.mkdir(parents=True)
    for name in (n for n in names if n.endswith(".py")):
        src = git_output("show", f"{ref}:functions/citations/{name}")
        (pkg / name).write_text(
            src.replace("mnote_evidence.functions.citations.", "baseline_citations."), "utf-8"
        )
    for mod in [m for m in sys.modules if m.startswith("baseline_citations")]:
        del sys.modules[mod]
    spec = importlib.util.spec_from_file_location(
        "baseline_citations", pkg / "__init__.py", submodule_search_locations=[str(pkg)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_citations"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return importlib.import_module("baseline_citations.mapper").CitationMapper


def run(mapper_cls, conn, root: Path, answers: list[tuple[dict, dict]]) -> dict:
    tally, cache, pdfs = Tally(), {}, {}
    times, cpu, fact_questions, fact_hits, terms_stop = [], [], 0, 0, 0
    for question, data in answers:
        chunks = [c for c in data.get("chunks") or [] if isinstance(c, dict)]
        t, c0 = time.perf_counter(), time.process_time()
        mapper = mapper_cls(conn, question["q"], "")
        citations = [c for rank, chunk in enumerate(chunks) if (c := mapper.citation(chunk, rank))]
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c0)
        by_chunk = {c["chunk_id"]: c["content"] for c in chunks}
        check(root, conn, citations, by_chunk, tally, cache, pdfs)
        fact = norm(question["fact"])
        holding = {c["chunk_id"] for c in chunks if fact in norm(c["content"])}
        cited = [c for c in citations if c["diagnostics"]["chunkId"] in holding and "blockId" in c]
        if cited:
            fact_questions += 1
            texts = [
                conn.execute("SELECT text FROM evidence_block WHERE block_id = ?", [c["blockId"]]).fetchone()[
                    0
                ]
                for c in cited
            ]
            fact_hits += any(fact in norm(t) for t in texts)
        terms_stop += sum(
            1
            for c in citations
            if len(c["searchQuery"]) < 2
            or c["searchQuery"].lower() in ("is", "the", "and", "a", "of", "to", "in", "what", "how")
        )
    times_ms = sorted(x * 1000 for x in times)
    cpu_ms = sorted(x * 1000 for x in cpu)
    return {
        **tally.rates(),
        "medianQuoteShare": round(statistics.median(tally.quote_share or [0]), 3),
        "factQuestions": fact_questions,
        "factHits": fact_hits,
        "stopwordSearchQueries": terms_stop,
        "mappingMsMedian": round(statistics.median(times_ms), 2),
        "mappingMsP95": round(times_ms[int(0.95 * (len(times_ms) - 1))], 2),
        # CPU time of this process: what the mapping costs, without the waits of a loaded machine
        "mappingCpuMsMedian": round(statistics.median(cpu_ms), 2),
        "mappingCpuMsP95": round(cpu_ms[int(0.95 * (len(cpu_ms) - 1))], 2),
        "failuresSample": tally.failures[:8],
    }


def time_cli(client: Client, url: str, out: Path, questions: list[dict]) -> dict:
    """Warm `/query/data` and `/query` (each call repeated; LightRAG caches its LLM replies) against the
    whole `mnote-evidence ask --json` process, also warm (run twice, the second timed): start-up,
    `/query/data` and `/query` overlapped, mapping, JSON. Same questions, same run."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent), "LIGHTRAG_URL": url}
    rows = []
    cmd = [sys.executable, "-m", "mnote_evidence", "ask", "", "--site", str(out), "--mode", "naive", "--json"]
    for q in questions:
        cmd[4] = q["q"]
        subprocess.run(cmd, env=env, capture_output=True, text=True)
        client.query_data(q["q"], "naive", 10)
        t = time.perf_counter()
        client.query_data(q["q"], "naive", 10)
        data_ms = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        client.answer(q["q"], "naive", 10)
        answer_ms = (time.perf_counter() - t) * 1000
        t, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        ask_ms = (time.perf_counter() - t) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        ask_cpu_ms = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
        assert json.loads(done.stdout)["ok"], done.stderr[-500:]
        t, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        bare_ms = (time.perf_counter() - t) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        bare_cpu_ms = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
        rows.append((data_ms, ask_ms, bare_ms, answer_ms, ask_cpu_ms, bare_cpu_ms))
    med = [statistics.median(r[i] for r in rows) for i in range(6)]
    return {
        "questions": len(rows),
        "queryDataWarmMsMedian": round(med[0], 1),
        "queryWarmMsMedian": round(med[3], 1),
        "askJsonMsMedian": round(med[1], 1),
        "barePythonMsMedian": round(med[2], 1),
        "askJsonCpuMsMedian": round(med[4], 1),
        "barePythonCpuMsMedian": round(med[5], 1),
        "askOverQueryData": round(med[1] / med[0], 2),
    }


@dataclass
class Answered:
    """The real workspace, built and ingested, with LightRAG's answers to the bench questions."""

    ws: Path
    out: Path
    files: dict
    questions: list[dict]
    answers: list[tuple[dict, dict]]
    client: Client
    url: str


@contextmanager
def answered_workspace(site: bool, unseen: bool = False) -> Iterator[Answered]:
    """Assemble the real workspace (or the `unseen` one), build it into a real lightrag-server (the tests'
    offline harness) and ask it its questions (naive, top 10); the server runs until the block ends.
    Shared with bench/verify_quote.py, which checks the same citations."""
    work = UNSEEN_WORK if unseen else WORK
    ws, out = work / "ws", work / "out"
    if unseen:
        if not ws.exists():
            shutil.copytree(UNSEEN, ws, ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
        files = sum(1 for p in ws.rglob("*") if p.is_file() and ".mnote" not in p.parts)
    else:
        files = assemble(ws)
    questions = json.loads(QUESTIONS.read_text("utf-8"))["questions"]
    if unseen:
        questions = [q for q in questions if q["set"] == "unseen"]
    else:
        questions = [q for q in questions if q["set"] != "unseen"]
    server = LightRag(work / "lightrag")
    server.start()
    try:
        config = LightRagConfig(server.url, timeout=120)
        build(ws, BuildOptions(out=out, jobs=2, site=site, lightrag=config))
        with Client(config) as client:
            answers = [(q, client.query_data(q["q"], "naive", 10)) for q in questions]
            yield Answered(ws, out, files, questions, answers, client, server.url)
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", nargs="?", const="main", default=None, metavar="REF")
    parser.add_argument("--set", choices=("real", "unseen"), default="real")
    args = parser.parse_args()
    unseen = args.set == "unseen"
    with answered_workspace(site=not unseen, unseen=unseen) as run_:
        ws, out, files, questions, answers = run_.ws, run_.out, run_.files, run_.questions, run_.answers
        cli = None if unseen else time_cli(run_.client, run_.url, out, questions[::6])
    ((UNSEEN_WORK if unseen else WORK) / "answers.json").write_text(
        json.dumps(answers, ensure_ascii=False), "utf-8"
    )  # for profiling
    conn = sqlite3.connect(f"file:{out / 'evidence.sqlite'}?mode=ro", uri=True)
    counts = dict(
        conn.execute("SELECT kind, count(*) FROM evidence_resource WHERE status = 'ok' GROUP BY kind")
    )
    blocks = conn.execute("SELECT count(*) FROM evidence_block").fetchone()[0]
    result = {
        "workspace": {"files": files, "okResourcesByKind": counts, "blocks": blocks},
        "questions": len(questions),
        "mode": "naive",
        "topK": 10,
        "ours": run(CitationMapper, conn, ws, answers),
    }
    if cli:
        result["cli"] = cli
    if args.baseline:
        result["baseline"] = {"ref": args.baseline, **run(baseline_mapper(args.baseline), conn, ws, answers)}
    text = json.dumps(result, indent=2, ensure_ascii=False)
    path = results_path("citation_truth_unseen.json") if unseen else RESULT
    path.write_text(text + "\n", "utf-8")
    print(text)


if __name__ == "__main__":
    main()
