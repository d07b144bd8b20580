"""A build leaves the vault clean: nothing a note editor lists as a note is added unless asked
(sidecars under the hidden `.mnote/` by default, `Note.ocr/` kept where a workspace already uses it,
the choice remembered with the workspace), and a site is never built into, nor indexed from, the
notes it is built from. Real builds (library and CLI), real parsers, a small vault of a note owning
a PDF and a note linking a manual beside it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pymupdf

from mnote_evidence.build.parse.ocr.settings import OcrSettings
from tests.conftest import connect, run_build

NO_OCR = OcrSettings(engine="none")
OWNED = {
    "Note.assets/spec.pdf": "the boiling point of the solvent is 87 C",
    "Projects/manual.pdf": "the retention period is seven years",
}
CLI_SECONDS = 120


def vault(root: Path) -> Path:
    """Two notes, each owning a one-page PDF: one in its `X.assets/` folder, one linked beside it."""
    (root / "Note.assets").mkdir(parents=True)
    (root / "Projects").mkdir()
    (root / "Note.md").write_text("# Note\n\nSolvent notes. ![[spec.pdf]]\n", "utf-8")
    (root / "Projects/Plan.md").write_text("# Plan\n\nSee the [manual](manual.pdf).\n", "utf-8")
    for rel, fact in OWNED.items():
        doc = pymupdf.open()
        doc.new_page().insert_text((72, 72), fact)
        doc.save(root / rel)
    return root


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def visible(root: Path) -> set[str]:
    """What a note editor (Obsidian, MkDocs) lists: every file outside dot folders."""
    return {p for p in files(root) if not any(part.startswith(".") for part in p.split("/"))}


def sidecars(out: Path) -> dict[str, str]:
    """resource path -> its source map's path, for every owned resource the index holds."""
    conn = connect(out)
    try:
        rows = conn.execute(
            "SELECT source_root_relative_path, source_map_path FROM evidence_resource "
            "WHERE status = 'ok' AND kind != 'markdown'"
        )
        return dict(rows)
    finally:
        conn.close()


def indexed(out: Path) -> set[str]:
    conn = connect(out)
    try:
        return {p for (p,) in conn.execute("SELECT source_root_relative_path FROM evidence_resource")}
    finally:
        conn.close()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mnote_evidence", *args], capture_output=True, text=True, timeout=CLI_SECONDS
    )


def test_a_default_build_adds_nothing_a_note_editor_lists(tmp_path):
    root = vault(tmp_path / "notes")
    before = visible(root)
    report = run_build(root, tmp_path / "out", ocr=NO_OCR)
    assert report.status_counts["ok"] == 4
    assert visible(root) == before  # no Note.ocr/, no *.parse.md among the notes
    maps = sidecars(tmp_path / "out")
    assert set(maps) == set(OWNED)
    assert all(m.startswith(".mnote/sidecars/") and (root / m).is_file() for m in maps.values()), maps


def test_the_layout_is_remembered_with_the_workspace_not_the_output_folder(tmp_path):
    root = vault(tmp_path / "notes")
    run_build(root, tmp_path / "a", ocr=NO_OCR, sidecars="beside")
    beside = {p: b for p, b in files(root).items() if ".ocr/" in p}
    assert len([p for p in beside if p.endswith(".source-map.json")]) == 2

    # another output folder, no option: the workspace's choice, its sidecars reused where they are
    other = run_build(root, tmp_path / "b", ocr=NO_OCR)
    assert other.reused_sidecars == 2 and sidecars(tmp_path / "b") == sidecars(tmp_path / "a")
    assert {p: b for p, b in files(root).items() if ".ocr/" in p} == beside

    # told otherwise: moved under .mnote/ (reused, not parsed), and that is what the next output keeps
    moved = run_build(root, tmp_path / "b", ocr=NO_OCR, sidecars="mnote")
    assert moved.reused_sidecars == 2 and not [p for p in files(root) if ".ocr/" in p]
    third = run_build(root, tmp_path / "c", ocr=NO_OCR)
    assert third.reused_sidecars == 2 and visible(root) == visible(vault(tmp_path / "fresh"))
    assert sidecars(tmp_path / "c") == sidecars(tmp_path / "b")


def test_a_workspace_that_has_note_ocr_sidecars_keeps_them(tmp_path):
    """A vault with `Note.ocr/` folders (MNote's convention, an earlier build's default) and no
    remembered choice: its sidecars are read where they are, and new ones go beside too."""
    root = vault(tmp_path / "notes")
    run_build(root, tmp_path / "a", ocr=NO_OCR, sidecars="beside")
    shutil.rmtree(root / ".mnote")  # nothing remembered: what a vault from MNote holds
    report = run_build(root, tmp_path / "b", ocr=NO_OCR)
    assert report.reused_sidecars == 2
    assert all(".ocr/" in m for m in sidecars(tmp_path / "b").values())


def test_an_output_folder_inside_the_workspace_is_refused(tmp_path):
    root = vault(tmp_path / "notes")
    result = cli("build", str(root), "--out", str(root / "site"), "--no-ocr")
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: ") and "inside the workspace" in line and "--out" in line, line
    assert "Traceback" not in result.stderr and not (root / "site").exists()

    # a site already there (from another version) stays as it was
    run_build(root, tmp_path / "site", ocr=NO_OCR, site=True)
    shutil.copytree(tmp_path / "site", root / "Published")
    shutil.rmtree(root / ".mnote")
    snapshot = files(root)
    again = cli("build", str(root), "--out", str(root / "Published"), "--no-ocr")
    assert again.returncode == 2 and files(root) == snapshot, again.stderr


def test_an_output_folder_the_scan_skips_is_accepted_and_never_indexed(tmp_path):
    root = vault(tmp_path / "notes")
    out = root / ".site"
    for _ in range(2):
        report = run_build(root, out, ocr=NO_OCR, site=True)
        assert indexed(out) == {"Note.md", "Projects/Plan.md", *OWNED}
    assert report.changed is False and (out / "index.html").is_file()


def test_a_built_site_inside_the_workspace_is_left_out_with_a_warning(tmp_path):
    root = vault(tmp_path / "notes")
    run_build(root, tmp_path / "old", ocr=NO_OCR, site=True)
    shutil.copytree(tmp_path / "old", root / "Archive/site")  # an older build's output, moved in
    report = run_build(root, tmp_path / "out", ocr=NO_OCR, site=True)
    assert indexed(tmp_path / "out") == {"Note.md", "Projects/Plan.md", *OWNED}
    [warning] = [w for w in report.warnings if w["code"] == "site_in_workspace"]
    assert warning["path"] == "Archive/site" and "not indexed" in warning["message"]
    shown = cli("build", str(root), "--out", str(tmp_path / "out"), "--no-ocr")
    assert "[site_in_workspace]" in shown.stderr, shown.stderr


def test_no_message_suggests_building_into_the_notes_folder(tmp_path):
    root = vault(tmp_path / "notes")
    for command in (["search", "solvent", "--site"], ["verify", "the boiling point", "--site"], ["mcp"]):
        result = cli(*command, str(root))
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
        message = result.stderr
        assert f"--out {root}" not in message and "--out " + json.dumps(str(root)) not in message, message
        assert f"build {root}" in message and "notes" in message, message
    missing = cli("search", "solvent", "--site", str(tmp_path / "nowhere"))
    assert f"--out {tmp_path / 'nowhere'}" in missing.stderr  # not a notes folder: build into it
    assert set(os.listdir(root)) == {"Note.assets", "Projects", "Note.md"}  # nothing written there
