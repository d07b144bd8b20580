"""Shared fixtures: a fresh copy of content_fixtures/ and builds of it (real files, real parsers).

Three rules every test keeps through this module:
- Tests never read untracked files: `copy_workspace` copies only what git tracks in
  content_fixtures/ (a build of the sample workspace writes `*.ocr/` and `.mnote/` into it).
- A test that needs a system tool asks `require_tool`: absent, the test is skipped with a
  one-line install hint, except under `CI=true`, where absence is a failure (CI installs them).
- Tests never write into the real home: the installation key is in a temporary folder
  (`installation_key`).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import NoReturn

import jsonschema
import pytest
from referencing import Registry, Resource

from mnote_evidence.build.core.schemas import load_schema, schema_names
from mnote_evidence.build.core.trust import KEY_FILE_ENV
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.pipeline import BuildOptions, build
from mnote_evidence.build.workspace.scan import skip_dir

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "content_fixtures"
FACTS = json.loads((REPO / "tests" / "fixture_facts.json").read_text("utf-8"))

# screenshots for a reviewer: in the system's temporary folder, never in the repository
SCREENSHOTS = Path(
    os.environ.get("MNOTE_SCREENSHOTS", Path(tempfile.gettempdir()) / "mnote-evidence-screenshots")
)
CHROMIUM = "/usr/bin/chromium"  # Debian's package; Playwright drives it (never `playwright install`)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

SPEC_PDF = "Projects/Evidence Kernel.assets/evidence-kernel-spec.pdf"
CHEM_DOCX = "研究/化学笔记.assets/溶剂与杂环.docx"


# Markers, given here by what a test uses so no test can forget its own (docs/contributing.md):
#   browser: drives Chromium; knowledge: a real lightrag-server; ocr: OCR engines or their truth
#   sets; slow: a test file whose tests build whole workspaces or start servers (> ~2 s each).
# The fast path is `pytest -m "not slow"` (every other marker is slow too).
MARKERS = {
    "browser": "drives headless Chromium (Debian's /usr/bin/chromium)",
    "knowledge": "runs a real lightrag-server",
    "ocr": "runs an OCR engine on real images",
    "slow": "builds whole workspaces, starts servers or drives a browser; left out of the fast path",
}
BY_FIXTURE = {
    "page": "browser",
    "browser": "browser",
    "lightrag": "knowledge",
    "knowledge_site": "knowledge",
    "tesseract": "ocr",
}
BY_FOLDER = {"knowledge": "knowledge", "ocr": "ocr"}
SLOW_FILES: set[str] = set()  # filled from measured durations (tests/slow_tests.txt)
_SLOW_LIST = Path(__file__).with_name("slow_tests.txt")
if _SLOW_LIST.is_file():
    SLOW_FILES = {line.split("#")[0].strip() for line in _SLOW_LIST.read_text("utf-8").splitlines()} - {""}


def pytest_configure(config):
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")


def pytest_ignore_collect(collection_path, config):
    """The fast path (`-m "not slow"`) does not even import the slow files."""
    if config.getoption("markexpr", "").replace(" ", "") == "notslow":
        rel = Path(collection_path).resolve()
        return rel.is_file() and rel.relative_to(REPO).as_posix() in SLOW_FILES or None
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        rel = Path(str(item.path)).resolve().relative_to(REPO).as_posix()
        kinds = {BY_FIXTURE[f] for f in item.fixturenames if f in BY_FIXTURE}
        kinds |= {BY_FOLDER[part] for part in rel.split("/")[1:-1] if part in BY_FOLDER}
        if kinds or rel in SLOW_FILES or item.nodeid.split("[")[0] in SLOW_FILES:
            kinds.add("slow")
        for kind in sorted(kinds):
            item.add_marker(kind)


def tracked_fixture_files() -> list[str]:
    """content_fixtures/ paths (relative to it) that are part of the sample workspace.

    In a git checkout: exactly what git tracks. Elsewhere (an sdist, a copied tree): what a build
    would scan, i.e. without the folders a build writes into a workspace (`.mnote/`, `*.ocr/`; the
    README's Quick start builds content_fixtures in place)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(FIXTURES), "ls-files", "-z", "--", "."], capture_output=True, check=True
        ).stdout
        files = [f for f in out.decode("utf-8").split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(FIXTURES):
        dirnames[:] = [d for d in dirnames if not skip_dir(d)]
        files += [
            os.path.relpath(os.path.join(dirpath, f), FIXTURES) for f in filenames if not f.startswith(".")
        ]
    return files


def copy_workspace(dest: Path) -> Path:
    """A fresh copy of the sample workspace: its tracked files only (see `tracked_fixture_files`)."""
    for rel in tracked_fixture_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(FIXTURES / rel, target)
    dest.mkdir(parents=True, exist_ok=True)
    return dest


def require_tool(name: str, hint: str, path: str | None = None) -> str:
    """The path of system tool `name` (at `path` if given, else on PATH).

    Absent: skip the test with `hint` (how to install it); under `CI=true` fail instead, so a CI
    run that should have installed the tool can never go green by skipping."""
    found = path if path and os.access(path, os.X_OK) else shutil.which(name)
    if not found:
        tool_missing(f"{name} not found{f' at {path}' if path else ''}: {hint}")
    return found


def tool_missing(message: str) -> NoReturn:
    """Skip (or under CI=true fail) the current test because a system tool is missing."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (required when CI=true)", pytrace=False)
    pytest.skip(message)


# OCR results are cached by content hash; sharing the cache across the session's many
# workspace copies is correct (same bytes, same lines) and saves re-running the engine.
SHARED_OCR = OcrSettings(cache_dir=tempfile.mkdtemp(prefix="mnote-ocr-cache-"))


def run_build(root: Path, out: Path, **kw):
    """A library build; the site is only rendered where a test asks for it (site=True)."""
    kw.setdefault("jobs", 1)
    kw.setdefault("site", False)
    kw.setdefault("ocr", SHARED_OCR)
    return build(root, BuildOptions(out=out, **kw))


def connect(out: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{out / 'evidence.sqlite'}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


@pytest.fixture(scope="session", autouse=True)
def installation_key(tmp_path_factory) -> Path:
    """This run's installation key (build/core/trust.py) in a temporary folder, never the real home;
    the CLI processes the tests start inherit it."""
    path = tmp_path_factory.mktemp("state") / "cache.key"
    os.environ[KEY_FILE_ENV] = str(path)
    return path


@pytest.fixture
def workspace(tmp_path) -> Path:
    return copy_workspace(tmp_path / "ws")


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """(workspace, out, report) of one full build of the fixtures, shared read-only."""
    base = tmp_path_factory.mktemp("built")
    root = copy_workspace(base / "ws")
    out = base / "out"
    report = run_build(root, out)
    return root, out, report


def schema_validator(name: str) -> jsonschema.Draft202012Validator:
    registry = Registry().with_resources((n, Resource.from_contents(load_schema(n))) for n in schema_names())
    return jsonschema.Draft202012Validator(load_schema(name), registry=registry)


@pytest.fixture(scope="session")
def validate():
    validators = {n: schema_validator(n) for n in schema_names()}

    def check(name: str, doc) -> None:
        errors = sorted(validators[name].iter_errors(doc), key=str)
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])

    return check


@pytest.fixture(scope="session")
def tesseract() -> str:
    """Tesseract with its Chinese model (the alternative OCR engine)."""
    binary = require_tool(
        "tesseract", "apt-get install tesseract-ocr tesseract-ocr-chi-sim (the alternative OCR engine)"
    )
    languages = subprocess.run([binary, "--list-langs"], capture_output=True, text=True).stdout.split()
    if "chi_sim" not in languages:
        tool_missing("tesseract has no chi_sim model: apt-get install tesseract-ocr-chi-sim")
    return binary


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    chromium = require_tool(
        "chromium", "apt-get install chromium (the browser tests drive Debian's Chromium)", path=CHROMIUM
    )
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.dialogs, pg.console_errors = [], []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    context.close()


def shoot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
