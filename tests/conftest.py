"""Shared fixtures: a fresh copy of content_fixtures/ and builds of it (real files, real parsers)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import sqlite3
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

from mnote_evidence.build.ocr.settings import OcrSettings
from mnote_evidence.build.pipeline import BuildOptions, build
from mnote_evidence.build.schemas import load_schema, schema_names

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "content_fixtures"
FACTS = json.loads((REPO / "tests" / "fixture_facts.json").read_text("utf-8"))

SCREENSHOTS = Path(os.environ.get("MNOTE_SCREENSHOTS", REPO / "test-artifacts"))
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

SPEC_PDF = "Projects/Evidence Kernel.assets/evidence-kernel-spec.pdf"
CHEM_DOCX = "研究/化学笔记.assets/溶剂与杂环.docx"


def copy_workspace(dest: Path) -> Path:
    shutil.copytree(FIXTURES, dest)
    return dest


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
    registry = Registry().with_resources(
        (n, Resource.from_contents(load_schema(n))) for n in schema_names())
    return jsonschema.Draft202012Validator(load_schema(name), registry=registry)


@pytest.fixture(scope="session")
def validate():
    validators = {n: schema_validator(n) for n in schema_names()}

    def check(name: str, doc) -> None:
        errors = sorted(validators[name].iter_errors(doc), key=str)
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])

    return check


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
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
