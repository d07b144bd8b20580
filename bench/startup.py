"""Start-up per command: wall time and what each one imports, against a baseline ref's code.

    python bench/startup.py [--rounds 5] [--baseline-ref main] [--no-lightrag]

Every command runs as a user runs it: the installed console script (`mnote-evidence`, the real
entry script, not pyenv's shim; `python -m mnote_evidence` when there is none) with this tree on
PYTHONPATH, byte-compiled first as an install is (this machine sets PYTHONDONTWRITEBYTECODE).
Commands: `--help`; `build` as a no-op on a copy of content_fixtures (PDF, DOCX, images: nothing
changed, so nothing to parse or render) and on a markdown-only workspace; `build --no-site` (no-op,
markdown-only); `search`; `ask --json` against a real lightrag-server (the tests' offline harness,
over the fixtures' index; `--no-lightrag` leaves it out); `serve --help`; `verify`; `mcp --help`.

Per command, in one run so the machine's load hits all alike (rounds interleaved), each the
minimum over `--rounds` runs: `wallMs`, `cpuMs` (the process's user + system time: the machine is
shared, CPU time leaves out waiting for a core) and, from runs under `python -X importtime`,
`importMs` (the sum of the top-level imports' cumulative times: everything imported, the
interpreter's own start-up included), the `top` modules by cumulative time (first-level imports:
the entry script's, the command's, and those made inside functions), and `loaded`: which heavy
libraries (PyMuPDF, httpx, jinja2, ...) were imported at all. `bare` is `python -c pass`.
With `--baseline-ref`, the same commands on that git ref's code (extracted with `git archive`,
`baseline` in the output), measured beside it.
Results: bench/results/startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import baseline_tree, compile_tree, results_path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / "_work" / "startup"
RESULT = results_path("startup.json")
# the libraries a command should load only when it uses them (import name -> how the report calls it)
HEAVY = {
    "pymupdf": "fitz",
    "httpx": "httpx",
    "jinja2": "jinja2",
    "datasette": "datasette",
    "mcp": "mcp",
    "numpy": "numpy",
    "pandas": "pandas",
    "PIL": "PIL",
    "docx": "docx",
    "lxml": "lxml",
    "markdown_it": "markdown_it",
    "multiprocessing": "multiprocessing",
}
QUOTE = "线程作用域"  # a phrase the fixtures hold (content_fixtures/研究)
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def commands(ws: Path, md: Path, out: Path, md_out: Path, md_bare: Path, lightrag_url: str | None) -> dict:
    """name -> the command's arguments (after `mnote-evidence`)."""
    cmds = {
        "help": ["--help"],
        "buildNoop": ["build", str(ws), "--out", str(out)],
        "buildNoopMarkdown": ["build", str(md), "--out", str(md_out)],
        "buildNoSite": ["build", str(md), "--out", str(md_bare), "--no-site"],
        "search": ["search", QUOTE, "--site", str(out)],
        "ask": [
            "ask",
            QUOTE,
            "--site",
            str(out),
            "--mode",
            "naive",
            "--json",
            "--lightrag-url",
            lightrag_url or "",
        ],
        "serveHelp": ["serve", "--help"],
        "verify": ["verify", QUOTE, "--site", str(out)],
        "mcpHelp": ["mcp", "--help"],
    }
    if not lightrag_url:
        del cmds["ask"]
    return cmds


def entry(tree: Path) -> list[str]:
    """How a user starts the command: the console script beside this interpreter, else `-m`."""
    script = Path(sys.executable).parent / "mnote-evidence"
    return [sys.executable, str(script)] if script.is_file() else [sys.executable, "-m", "mnote_evidence"]


def run(argv: list[str], tree: Path, importtime: bool = False) -> tuple[float, float, str]:
    """Run one command on `tree`'s code; (wall ms, CPU ms, stderr). A failure stops the bench."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = entry(tree)
    if importtime:
        cmd = [cmd[0], "-X", "importtime", *cmd[1:]]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run([*cmd, *argv], env=env, capture_output=True, text=True, cwd=WORK)
    wall = (time.perf_counter() - t) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu, done.stderr


def import_profile(stderr: str, top: int = 8) -> dict:
    """importMs, the `top` first-level imports by cumulative time, and which heavy libraries loaded."""
    total, firsts, names = 0, [], set()
    for line in stderr.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        cumulative, depth, name = int(m.group(2)), len(m.group(3)), m.group(4)
        names.add(name.split(".")[0])
        if depth == 1:  # a top-level import (importtime indents the first level by one space)
            total += cumulative
            firsts.append((cumulative, name))
    firsts.sort(reverse=True)
    return {
        "importMs": round(total / 1000, 1),
        "top": [{"module": n, "ms": round(c / 1000, 1)} for c, n in firsts[:top]],
        "loaded": sorted(label for module, label in HEAVY.items() if module in names),
    }


def workspaces(name: str) -> tuple[Path, Path]:
    """A fresh copy of content_fixtures, and a markdown-only workspace (its notes alone); one pair per
    tree, as builds write sidecars into the workspace."""
    ws, md = WORK / f"{name}-fixtures", WORK / f"{name}-markdown"
    for folder in (ws, md):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(REPO / "content_fixtures", ws)
    for note in (REPO / "content_fixtures").rglob("*.md"):
        target = md / note.relative_to(REPO / "content_fixtures")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(note, target)
    return ws, md


def prepare(tree: Path, name: str, lightrag_url: str | None) -> dict:
    """Build every output the commands read with `tree`'s code (so each no-op is a no-op of that code)."""
    ws, md = workspaces(name)
    out, md_out, md_bare = WORK / f"{name}-out", WORK / f"{name}-md-out", WORK / f"{name}-md-bare"
    for folder in (out, md_out, md_bare):
        shutil.rmtree(folder, ignore_errors=True)
    lightrag = ["--lightrag-url", lightrag_url] if lightrag_url else []
    for argv in (
        ["build", str(ws), "--out", str(out), *lightrag],
        ["build", str(md), "--out", str(md_out)],
        ["build", str(md), "--out", str(md_bare), "--no-site"],
    ):
        run(argv, tree)
    return commands(ws, md, out, md_out, md_bare, lightrag_url)


def measure(trees: dict[str, tuple[Path, dict]], rounds: int) -> dict:
    """Each round runs every command of every tree once plainly and once under -X importtime
    (interleaved, so load hits all alike); per command the minimum wall and CPU time, and the
    import profile of the run with the least import time."""
    bare: list[tuple[float, float, str]] = []
    runs: dict[tuple[str, str], list[tuple[float, float, dict]]] = {}
    for _ in range(rounds):
        bare.append(_bare())
        for name, (tree, cmds) in trees.items():
            for cmd, argv in cmds.items():
                wall, cpu, _ = run(argv, tree)
                runs.setdefault((name, cmd), []).append((wall, cpu, import_profile(run(argv, tree, True)[2])))
    out: dict = {
        "bare": {
            "wallMs": round(min(b[0] for b in bare), 1),
            "cpuMs": round(min(b[1] for b in bare), 1),
            "importMs": min(import_profile(b[2])["importMs"] for b in bare),
        }
    }
    for (name, cmd), samples in runs.items():
        out.setdefault(name, {})[cmd] = {
            "wallMs": round(min(s[0] for s in samples), 1),
            "cpuMs": round(min(s[1] for s in samples), 1),
            **min((s[2] for s in samples), key=lambda p: p["importMs"]),
        }
    return out


def _bare() -> tuple[float, float, str]:
    """`python -c pass` (the interpreter alone): wall ms, CPU ms, and its -X importtime output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    wall = (time.perf_counter() - t) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    profile = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True
    ).stderr
    return wall, (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000, profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-ref", help="also measure this git ref's code (e.g. main)")
    parser.add_argument("--no-lightrag", action="store_true", help="leave out `ask` (no lightrag-server)")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    trees = {"current": REPO}
    if args.baseline_ref:
        trees["baseline"] = baseline_tree(args.baseline_ref, "startup")
    for tree in trees.values():
        compile_tree(tree)
    server = None
    if not args.no_lightrag:
        from tests.knowledge.harness import LightRag

        server = LightRag(WORK / "lightrag")
        server.start()
    try:
        url = server.url if server else None
        prepared = {name: (tree, prepare(tree, name, url)) for name, tree in trees.items()}
        result = measure(prepared, args.rounds)
    finally:
        if server:
            server.close()
    headline = {
        f"{cmd}WallMs": row["wallMs"] for cmd, row in result["current"].items()
    }  # flat, for summaries
    result = {
        "rounds": args.rounds,
        "baselineRef": args.baseline_ref,
        "entry": " ".join(Path(p).name for p in entry(REPO)),
        "bareWallMs": result["bare"]["wallMs"],
        **headline,
        **result,
        "loadAverage": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    text = json.dumps(result, indent=2, ensure_ascii=False)
    RESULT.write_text(text + "\n", "utf-8")
    print(text)


if __name__ == "__main__":
    main()
