"""Our modules import each other without cycles, and the layers point one way.

Read from the source (AST), so function-local imports count too: a cycle hidden
inside a function is still a cycle for a reader and for the next refactor.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "mnote_evidence"
# source folder -> the package it installs as (pyproject's package-dir)
FOLDERS = {"mnote_evidence": PACKAGE, "build": f"{PACKAGE}.build", "functions": f"{PACKAGE}.functions"}
# contracts and the URL scheme: leaves every stage may use, which use no stage themselves
CONTRACT_MODULES = {f"{PACKAGE}.build.model": set(), f"{PACKAGE}.build.urls": {f"{PACKAGE}.build.model"}}
ADAPTERS = {f"{PACKAGE}.build.{p.stem}" for p in (REPO / "build").glob("cli*.py")}  # the command line drives both sides


def modules() -> dict[str, Path]:
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolve against this module's package
                    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = ".".join(pkg[: len(pkg) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            deps |= {t for t in targets if t in mods and t != name}
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_scan_sees_our_modules():
    graph = import_graph()
    expected = {f"{PACKAGE}.build.pipeline", f"{PACKAGE}.functions.evidence", f"{PACKAGE}.functions.knowledge"}
    assert expected <= set(graph)
    # an import the scan must see, so an empty graph cannot pass
    assert f"{PACKAGE}.build.model" in graph[f"{PACKAGE}.build.locator"]


def test_cycle_detection_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_build_never_imports_the_query_side():
    graph = import_graph()
    wrong = {m: sorted(d for d in deps if d.startswith(f"{PACKAGE}.functions"))
             for m, deps in graph.items() if m.startswith(f"{PACKAGE}.build") and m not in ADAPTERS}
    assert not {m: d for m, d in wrong.items() if d}


def test_contracts_depend_on_no_stage():
    graph = import_graph()
    for module, allowed in CONTRACT_MODULES.items():
        assert graph[module] <= allowed, (module, graph[module] - allowed)
