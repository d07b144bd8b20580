"""The documentation stays honest: every relative link in README.md, CHANGELOG.md and docs/**.md leads
to a file git tracks (or a folder holding tracked files) and a `#fragment` to one of that page's
headings; the reference pages name every CLI option, every route of the route table and every JSON
Schema; the README stays short; and no page outside the changelog narrates history."""

from __future__ import annotations

import importlib
import importlib.metadata
import posixpath
import re
import subprocess
from urllib.parse import unquote, urlsplit

import click
import pytest
from markdown_it import MarkdownIt

from tests.conftest import REPO

MD = MarkdownIt("commonmark").enable("table")
README_MAX_LINES = 200
# work rounds and ticket numbers (the word, then a number), and commit-id-like words
ROUNDS = re.compile(r"\b(session|issue)s? #?[0-9]+", re.I)
HEX = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
NARRATION = re.compile(
    r"\bused to\b|\bwas changed\b|\bno longer\b|\b(now|until \w+) (does|do|is|are|it)\b", re.I
)


def tracked() -> set[str]:
    proc = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True)
    if proc.returncode != 0:
        pytest.skip("not a git checkout: nothing says which files are tracked")
    return {p for p in proc.stdout.decode("utf-8").split("\0") if p}


def documents() -> list[str]:
    docs = sorted(
        p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md") if ".mnote" not in p.parts
    )
    return ["README.md", "CHANGELOG.md", *docs]


def present_tense_documents() -> list[str]:
    """What describes the product as it is: everything but the changelog and the contract."""
    return [d for d in documents() if d not in ("CHANGELOG.md", "docs/SPEC.md")]


def read(doc: str) -> str:
    return (REPO / doc).read_text("utf-8")


def links(text: str) -> list[str]:
    found = []
    for token in MD.parse(text):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(child.attrGet("href"))
            elif child.type == "image":
                found.append(child.attrGet("src"))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    tokens = MD.parse(text)
    return {
        slug(tokens[i + 1].content.replace("`", "")) for i, t in enumerate(tokens) if t.type == "heading_open"
    }


# Repository paths the docs name in `code`: they must exist, so a moved module shows up here.
REPO_PATH = re.compile(r"`((?:build|functions|tests|bench|schemas|site_templates|\.ci)/[\w./-]*)`")
NEW_FILES = {"build/parse/providers/text.py"}  # the provider "Adding a format" tells a contributor to create


def without_code(text: str) -> str:
    """The prose of a page: fenced code blocks dropped (commands may quote any hex or number)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def test_the_contract_and_the_docs_are_in_the_repository():
    files = tracked()
    for doc in ("docs/SPEC.md", "docs/index.md", "CHANGELOG.md", "docs/reference/cli.md"):
        assert doc in documents() and doc in files, doc
    assert "../shared" not in read("README.md")


@pytest.mark.parametrize("doc", documents())
def test_every_relative_link_resolves_to_a_tracked_file(doc):
    files = tracked()
    folders = {posixpath.dirname(f) for f in files}
    while parents := {posixpath.dirname(d) for d in folders} - folders:
        folders |= parents
    checked, broken = 0, []
    for href in links(read(doc)):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc:  # http(s), mailto: not ours to check offline
            continue
        target = (
            posixpath.normpath(posixpath.join(posixpath.dirname(doc), unquote(parts.path)))
            if parts.path
            else doc
        )
        checked += 1
        if target.startswith("../") or (target not in files and target.rstrip("/") not in folders):
            broken.append(f"{href}: {target} is not a tracked file")
        elif parts.fragment and target.endswith(".md") and parts.fragment not in anchors(read(target)):
            broken.append(f"{href}: no heading #{parts.fragment} in {target}")
    assert not broken, f"{doc}: " + "; ".join(broken)
    if doc == "README.md":
        assert checked >= 10  # the contract, the schemas and the docs' pages at least


@pytest.mark.parametrize("doc", present_tense_documents())
def test_every_repository_path_named_in_the_docs_exists(doc):
    missing = {p for p in REPO_PATH.findall(read(doc)) if p not in NEW_FILES and not (REPO / p).exists()}
    assert not missing, f"{doc} names paths that do not exist: {sorted(missing)}"


def importable(dotted: str) -> bool:
    """`package.module`, or `package.module.attribute`, names something that imports."""
    module, attr = dotted, None
    while module:
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError:
            module, _, last = module.rpartition(".")
            attr = last if attr is None else f"{last}.{attr}"
            continue
        for part in (attr or "").split(".") if attr else []:
            if not hasattr(found, part):
                return False
            found = getattr(found, part)
        return True
    return False


@pytest.mark.parametrize("doc", present_tense_documents())
def test_every_module_the_docs_name_imports(doc):
    """`uvicorn mnote_evidence.functions.adapters.asgi_app:app` and the examples' imports stay true."""
    names = {m.replace(":", ".") for m in re.findall(r"\bmnote_evidence(?:\.\w+)+(?::\w+)?", read(doc))}
    missing = sorted(n for n in names if not importable(n))
    assert not missing, f"{doc} names modules that do not import: {missing}"


def test_every_docs_page_is_reachable_from_the_docs_home():
    reached, todo = set(), ["docs/index.md"]
    while todo:
        doc = todo.pop()
        if doc in reached:
            continue
        reached.add(doc)
        for href in links(read(doc)):
            parts = urlsplit(href)
            if not parts.scheme and parts.path.endswith(".md"):
                target = posixpath.normpath(posixpath.join(posixpath.dirname(doc), unquote(parts.path)))
                if target.startswith("docs/") and (REPO / target).is_file():
                    todo.append(target)
    pages = {d for d in documents() if d.startswith("docs/")}
    assert pages <= reached, f"not linked from docs/index.md (directly or not): {sorted(pages - reached)}"


def cli_group() -> click.Group:
    """The `mnote-evidence` console script's click group, found by its entry point (so a move of the
    CLI module needs no change here)."""
    (entry,) = [
        e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == "mnote-evidence"
    ]
    group = entry.load()
    assert isinstance(group, click.Group)
    return group


def cli_options() -> list[tuple[str, str]]:
    group = cli_group()
    ctx = click.Context(group)
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        for param in command.params:
            if isinstance(param, click.Option):
                found += [(name, opt) for opt in (*param.opts, *param.secondary_opts)]
    return found


def test_the_cli_reference_names_every_command_and_option():
    text = read("docs/reference/cli.md")
    sections = {slug(m.group(1)): m.end() for m in re.finditer(r"^## (.+)$", text, re.M)}
    group = cli_group()
    missing = []
    for name in group.list_commands(click.Context(group)):
        if name not in sections:
            missing.append(f"## {name}")
    for command, opt in cli_options():
        start = sections.get(command, 0)
        following = [pos for pos in sections.values() if pos > start]
        section = text[start : min(following)] if following else text[start:]
        if not re.search(rf"`[^`]*(?<![\w-]){re.escape(opt)}(?![\w-])[^`]*`", section):
            missing.append(f"{command} {opt}")
    assert cli_options() and not missing, f"docs/reference/cli.md does not document: {missing}"


def route_table():
    """The query API's route table, wherever the routes module lives."""
    for module in ("mnote_evidence.functions.handlers.routes", "mnote_evidence.functions.routes"):
        try:
            return importlib.import_module(module).ROUTES
        except ModuleNotFoundError:
            continue
    pytest.fail("no route table: neither mnote_evidence.functions.handlers.routes nor .functions.routes")


def test_the_http_reference_names_every_route_and_the_mcp_reference_every_tool():
    routes = route_table()
    http, mcp = read("docs/reference/http.md"), read("docs/reference/mcp.md")
    assert routes
    assert not [r.path for r in routes if f"`{r.path}`" not in http], (
        "routes missing from docs/reference/http.md"
    )
    assert not [r.tool for r in routes if r.tool and f"`{r.tool}`" not in mcp], (
        "tools missing from reference/mcp.md"
    )


def test_the_schemas_reference_names_every_schema():
    names = sorted(p.name for p in (REPO / "schemas").glob("*.json"))
    text = read("docs/reference/schemas.md")
    assert names and not [n for n in names if f"`{n}`" not in text], (
        "schemas missing from docs/reference/schemas.md"
    )


def test_the_readme_is_short_and_keeps_the_quick_start():
    text = read("README.md")
    assert len(text.splitlines()) <= README_MAX_LINES
    # CI (.ci/run) and the fresh-machine check run these two commands exactly as written
    assert "pip install -e . && mnote-evidence build content_fixtures" in text
    assert "pip install -e '.[test]' && python -m pytest" in text
    assert "mnote-evidence build docs --out _docs" in text  # how the docs site is built


@pytest.mark.parametrize("doc", present_tense_documents())
def test_no_history_narration(doc):
    text = without_code(read(doc))
    found = [m.group(0) for pattern in (ROUNDS, HEX, NARRATION) for m in pattern.finditer(text)]
    assert not found, f"{doc} narrates history (it belongs in CHANGELOG.md): {found}"


def test_the_changelog_cites_no_work_rounds_or_commits():
    text = read("CHANGELOG.md")
    assert "## [Unreleased]" in text
    assert not ROUNDS.findall(text) and not HEX.findall(text)
