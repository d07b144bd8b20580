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
# The layers, bottom first: a module imports only its own folder and the folders before it.
# The build side reads as the pipeline; the query side stands on the build's lower layers only
# (never the renderer, the pipeline or the CLI); the command line sits on top of both.
BUILD = ["core", "markdown", "workspace", "parse", "index", "knowledge", "render", "versions", "pipeline"]
QUERY = ["core", "search", "citations", "handlers", "adapters"]
QUERY_REACHES = BUILD.index("knowledge")  # the highest build layer the query side may import
LAYERS = (
    [f"{PACKAGE}.build.{b}" for b in BUILD]
    + [f"{PACKAGE}.functions.{q}" for q in QUERY]
    + [f"{PACKAGE}.build.cli", f"{PACKAGE}.__main__"]
)


def layer_of(module: str) -> str | None:
    """The layer (folder or top-level module) `module` belongs to; None for the package roots."""
    for layer in LAYERS:
        if module == layer or module.startswith(layer + "."):
            return layer
    return None


def allowed(src: str, dst: str) -> bool:
    """Whether a module of layer `src` may import one of layer `dst`."""
    if dst is None or src == dst:
        return True
    if src is None:
        return False
    s, d = LAYERS.index(src), LAYERS.index(dst)
    if src.startswith(f"{PACKAGE}.functions.") and dst.startswith(f"{PACKAGE}.build."):
        return d <= QUERY_REACHES
    return d < s


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
    expected = {f"{PACKAGE}.build.pipeline", f"{PACKAGE}.functions.handlers.evidence"}
    assert expected <= set(graph)
    # an import the scan must see, so an empty graph cannot pass
    assert f"{PACKAGE}.build.core.model" in graph[f"{PACKAGE}.build.core.locator"]


def test_every_module_is_in_a_layer():
    roots = {PACKAGE, f"{PACKAGE}.build", f"{PACKAGE}.functions"}
    assert {m for m in modules() if layer_of(m) is None} == roots


def test_the_layer_rule_catches_an_upward_import():
    core, render = f"{PACKAGE}.build.core", f"{PACKAGE}.build.render"
    assert allowed(render, core) and not allowed(core, render)
    assert not allowed(f"{PACKAGE}.functions.core", render)
    assert allowed(f"{PACKAGE}.build.cli", f"{PACKAGE}.functions.adapters")


def test_cycle_detection_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_every_import_points_down_the_layers():
    wrong = sorted(
        f"{m} -> {d}"
        for m, deps in import_graph().items()
        for d in deps
        if not allowed(layer_of(m), layer_of(d))
    )
    assert wrong == []
