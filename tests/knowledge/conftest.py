"""One real lightrag-server for the module (API key on), and the fixtures built into it."""

from __future__ import annotations

import os

import pytest

from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context
from tests.conftest import copy_workspace, run_build
from tests.knowledge.harness import LightRag

API_KEY = "lrk-test-9d3f71c2aa"
TWINS = {
    "A/notes.md": "# Alpha notes\n\nThe zebrafish retina regenerates after injury.\n",
    "B/notes.md": "# Beta notes\n\nThe axolotl limb regrows completely.\n",
}


@pytest.fixture(scope="session")
def lightrag(tmp_path_factory):
    previous = os.environ.get("LIGHTRAG_API_KEY")
    os.environ["LIGHTRAG_API_KEY"] = API_KEY  # the client reads it from the environment only
    server = LightRag(tmp_path_factory.mktemp("lightrag"), api_key=API_KEY)
    server.start()
    yield server
    server.close()
    if previous is None:
        os.environ.pop("LIGHTRAG_API_KEY", None)
    else:
        os.environ["LIGHTRAG_API_KEY"] = previous


@pytest.fixture(scope="session")
def knowledge_site(lightrag, tmp_path_factory):
    """(workspace, out, report): fixtures + two files with the same name, built, ingested, rendered."""
    base = tmp_path_factory.mktemp("kws")
    root = copy_workspace(base / "ws")
    for rel, text in TWINS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    out = base / "out"
    report = run_build(root, out, site=True, lightrag=LightRagConfig(lightrag.url))
    return root, out, report


@pytest.fixture
def kctx(knowledge_site, lightrag):
    _, out, _ = knowledge_site
    return Context(EvidenceDB(out / "evidence.sqlite"), "", LightRagConfig(lightrag.url, timeout=20))
