"""A fixture build with one deleted (stale) file, and real server processes on free ports."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import REPO, copy_workspace, run_build
from tests.servers import start_datasette, stop

STALE_PDF = "Unfiled/orphan-report.pdf"
REAL = REPO / "tests" / "real_documents"


@pytest.fixture(scope="session")
def stale_site(tmp_path_factory):
    """(workspace, out): fixtures built with the site, then orphan-report.pdf deleted and rebuilt (stale)."""
    base = tmp_path_factory.mktemp("query")
    root = copy_workspace(base / "ws")
    out = base / "out"
    run_build(root, out, site=True)
    (root / STALE_PDF).unlink()
    run_build(root, out, site=True)
    return root, out


@pytest.fixture(scope="session")
def datasette_server(stale_site):
    """A real `datasette` process (plugin found by entry point) on the stale-site database."""
    _, out = stale_site
    proc, url = start_datasette(out / "evidence.sqlite")
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def real_index(tmp_path_factory):
    """The out folder of a build of tests/real_documents (manual PDFs, python-docx files, a scanned page)."""
    base = tmp_path_factory.mktemp("real-docs")
    root = base / "ws"
    for sub in ("manuals", "python-docx", "scans"):
        shutil.copytree(REAL / sub, root / sub)
    run_build(root, base / "out")
    return base / "out"
