"""Sidecars and caches in a hostile workspace (docs/security.md): they are input, never truth.

A workspace can ship its sidecar folders (`.mnote/`, `Note.ocr/`) as symlinks or as files, its sidecar
text as a device, a FIFO or a path out of the root, names longer than the file system allows, and
sidecars or OCR cache entries forged from a clean build. Every build completes (no traceback), writes
nothing outside the root, indexes the files' own text, and records what it could not write as a
`sidecar_not_written` warning of the resource. Real builds (library and CLI), real parsers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pymupdf

from mnote_evidence.build.parse.ocr.settings import OcrSettings
from tests.conftest import FACTS, FIXTURES, connect, run_build

NO_OCR = OcrSettings(engine="none")
NOTE = "# Note\n\nSolvent notes. ![[spec.pdf]]\n"
PDF = "Note.assets/spec.pdf"
FACT = "the boiling point of the solvent is 87 C"
CLI_SECONDS = 120  # a build of three files: a FIFO read would hang it for ever


def _workspace(root: Path) -> Path:
    """A note owning a one-page PDF (its sidecars go to `Note.ocr/` with `--sidecars beside`, as every
    build here asks, the note's to `.mnote/`)."""
    (root / "Note.assets").mkdir(parents=True)
    (root / "Note.md").write_text(NOTE, "utf-8")
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), FACT)
    doc.save(root / PDF)
    return root


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mnote_evidence", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=CLI_SECONDS,
    )


def _build_cli(root: Path, out: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    result = _cli(
        "build", str(root), "--out", str(out), "--no-ocr", "--no-site", "--sidecars", "beside", env=env
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return result


def _rows(out: Path) -> dict[str, tuple[str, list[str]]]:
    """path -> (status, warning codes) of every resource the index holds."""
    conn = connect(out)
    try:
        rows = conn.execute("SELECT source_root_relative_path, status, warnings_json FROM evidence_resource")
        return {path: (status, [w["code"] for w in json.loads(warnings)]) for path, status, warnings in rows}
    finally:
        conn.close()


def _text(out: Path, path: str) -> str:
    conn = connect(out)
    try:
        return "\n".join(
            t
            for (t,) in conn.execute(
                "SELECT b.text FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
                "WHERE r.source_root_relative_path = ? ORDER BY b.ordinal",
                (path,),
            )
        )
    finally:
        conn.close()


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# -- sidecar folders that are symlinks: nothing written, pruned or removed outside the root --------


def test_sidecar_folders_that_are_symlinks_are_never_written_through(tmp_path):
    outside = tmp_path / "outside"
    victims = {
        "mnote/sidecars/Note.md.source-map.json": b"victim map",
        "ocr/spec.pdf.parse.md": b"victim text",
        "ocr/spec.pdf.source-map.json": b"victim map",
    }
    for rel, data in victims.items():
        (outside / rel).parent.mkdir(parents=True, exist_ok=True)
        (outside / rel).write_bytes(data)
    root = _workspace(tmp_path / "ws")
    os.symlink(outside / "mnote", root / ".mnote")
    os.symlink(outside / "ocr", root / "Note.ocr")
    out = tmp_path / "out"

    report = run_build(root, out, ocr=NO_OCR, sidecars="beside")
    assert _tree(outside) == victims
    assert _rows(out) == {"Note.md": ("ok", ["sidecar_not_written"]), PDF: ("ok", ["sidecar_not_written"])}
    assert FACT in _text(out, PDF)
    assert {(w["path"], w["code"]) for w in report.warnings} >= {
        ("Note.md", "sidecar_not_written"),
        (PDF, "sidecar_not_written"),
    }

    # sidecars written into real folders, which then become symlinks: removing the files unlinks
    # and prunes nothing through them
    (root / ".mnote").unlink()
    (root / "Note.ocr").unlink()
    run_build(root, out, ocr=NO_OCR, sidecars="beside")
    assert (root / "Note.ocr/spec.pdf.parse.md").is_file()
    assert _rows(out) == {"Note.md": ("ok", []), PDF: ("ok", [])}
    shutil.rmtree(root / ".mnote")
    shutil.rmtree(root / "Note.ocr")
    os.symlink(outside / "mnote", root / ".mnote")
    os.symlink(outside / "ocr", root / "Note.ocr")
    (root / PDF).unlink()
    (root / "Note.md").unlink()
    run_build(root, out, ocr=NO_OCR, sidecars="beside")  # stale
    run_build(root, out, ocr=NO_OCR, sidecars="beside")  # removed, with their sidecars
    assert _rows(out) == {}
    assert _tree(outside) == victims


# -- a shipped sidecar that is not what the build writes: parsed again, never read --------------


def test_sidecar_text_that_is_a_device_fifo_or_path_out_of_the_root_is_parsed_again(tmp_path):
    (tmp_path / "secret.txt").write_text(FACT.replace("87", "99") + " secret", "utf-8")
    root = _workspace(tmp_path / "ws")
    out = tmp_path / "out"
    _build_cli(root, out)
    text_file = root / "Note.ocr/spec.pdf.parse.md"
    map_file = root / "Note.ocr/spec.pdf.source-map.json"
    genuine_text, genuine_map = text_file.read_bytes(), map_file.read_bytes()

    plants = (
        lambda p: os.symlink("/dev/zero", p),
        os.mkfifo,
        lambda p: os.symlink(tmp_path / "secret.txt", p),
    )
    for plant in plants:
        text_file.unlink()
        plant(text_file)
        shutil.rmtree(out)  # a first build of the workspace: its sidecars are candidates for reuse
        result = _build_cli(root, out)
        assert "reused sidecars 0" in result.stdout, result.stdout
        assert _rows(out)[PDF] == ("ok", []) and FACT in _text(out, PDF)
        assert text_file.read_bytes() == genuine_text and not text_file.is_symlink()

    # a source map naming a text file elsewhere (absolute, or `..`), its hash recomputed
    secret = (tmp_path / "secret.txt").read_text("utf-8")
    for name in (str(tmp_path / "secret.txt"), "../../secret.txt"):
        doc = json.loads(genuine_map)
        doc["textFile"] = name
        doc["textHash"] = "sha256:" + hashlib.sha256(secret.encode()).hexdigest()
        map_file.write_text(json.dumps(doc), "utf-8")
        shutil.rmtree(out)
        _build_cli(root, out)
        assert "secret" not in _text(out, PDF) and FACT in _text(out, PDF)


def test_a_file_where_a_sidecar_folder_goes_is_a_recorded_warning(tmp_path):
    root = _workspace(tmp_path / "ws")
    (root / ".mnote").write_text("not a folder", "utf-8")
    (root / "Note.ocr").write_text("not a folder either", "utf-8")
    out = tmp_path / "out"
    result = _build_cli(root, out)
    assert _rows(out)["Note.md"] == ("ok", ["sidecar_not_written"])
    assert _rows(out)[PDF] == ("ok", ["sidecar_not_written"])
    assert "[sidecar_not_written]" in result.stderr and FACT in _text(out, PDF)
    assert (root / ".mnote").read_text("utf-8") == "not a folder"
    assert (root / "Note.ocr").read_text("utf-8") == "not a folder either"


# -- long names: short temp names; a name the file system refuses is a warning ------------------


def test_long_note_names_are_indexed_and_never_crash_the_build(tmp_path):
    cjk = "溶" * 80 + ".md"  # 243 bytes: a realistic title
    ascii_ = "a" * 240 + ".md"
    fits = "b" * 227 + ".md"  # its source map's name fits in 255 bytes; a temp name must too
    root = tmp_path / "ws"
    root.mkdir()
    for name in (cjk, ascii_, fits):
        (root / name).write_text(f"# Title\n\nsearchable {name[:1]} body text\n", "utf-8")
    out = tmp_path / "out"
    result = _cli("build", str(root), "--out", str(out), "--no-ocr")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    rows = _rows(out)
    assert rows[cjk] == ("ok", ["sidecar_not_written"]) and rows[ascii_] == ("ok", ["sidecar_not_written"])
    assert rows[fits] == ("ok", [])
    assert (root / ".mnote/sidecars" / (fits + ".source-map.json")).is_file()
    assert "searchable 溶 body text" in _text(out, cjk)
    assert not [p for p in [*out.rglob("*"), *root.rglob("*")] if p.name.endswith(".tmp")]
    again = _cli("build", str(root), "--out", str(out), "--no-ocr")
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr


# -- forged sidecars and OCR cache entries: only what this installation wrote is trusted ---------


def test_a_forged_sidecar_with_a_matching_source_hash_is_not_trusted(tmp_path):
    root = _workspace(tmp_path / "ws")
    out = tmp_path / "out"
    run_build(root, out, ocr=NO_OCR, sidecars="beside")
    text_file = root / "Note.ocr/spec.pdf.parse.md"
    map_file = root / "Note.ocr/spec.pdf.source-map.json"
    genuine_text = text_file.read_bytes()
    forged_text = text_file.read_text("utf-8").replace("87 C", "99 C")
    doc = json.loads(map_file.read_text("utf-8").replace("87 C", "99 C"))
    doc["textHash"] = "sha256:" + hashlib.sha256(forged_text.encode()).hexdigest()
    text_file.write_text(forged_text, "utf-8")
    map_file.write_text(json.dumps(doc), "utf-8")
    shutil.rmtree(out)  # the workspace as shipped: a first build

    report = run_build(root, out, ocr=NO_OCR, sidecars="beside")
    assert report.reused_sidecars == 0
    assert FACT in _text(out, PDF) and "99 C" not in _text(out, PDF)
    assert text_file.read_bytes() == genuine_text  # parsed again and rewritten

    # what this installation wrote is reused (incremental speed)
    shutil.rmtree(out)
    report = run_build(root, out, ocr=NO_OCR, sidecars="beside")
    assert report.reused_sidecars == 1 and report.parsed == 1  # the PDF reused, the note parsed


def test_without_an_installation_key_nothing_in_the_workspace_is_trusted(tmp_path):
    root = _workspace(tmp_path / "ws")
    out = tmp_path / "out"
    _build_cli(root, out)
    blocker = tmp_path / "a-file"
    blocker.write_text("a file, so no folder can be made under it", "utf-8")
    shutil.rmtree(out)
    result = _build_cli(root, out, env={"MNOTE_EVIDENCE_KEY_FILE": str(blocker / "cache.key")})
    assert "[evidence_key_unavailable]" in result.stderr and "reused sidecars 0" in result.stdout
    assert _rows(out)[PDF] == ("ok", []) and FACT in _text(out, PDF)


IMAGE = FACTS["image"]


def test_ocr_cache_in_the_workspace_is_neither_written_through_a_symlink_nor_trusted_forged(tmp_path):
    root = tmp_path / "ws"
    (root / "Notes.assets").mkdir(parents=True)
    shutil.copy(FIXTURES / IMAGE["path"], root / "Notes.assets/shot.png")
    (root / "Notes.md").write_text("# Notes\n\n![[shot.png]]\n", "utf-8")
    outside = tmp_path / "outside"
    (outside / "ocr-cache").mkdir(parents=True)
    (root / ".mnote").mkdir()
    os.symlink(outside / "ocr-cache", root / ".mnote/ocr-cache")
    out = tmp_path / "out"
    ocr = OcrSettings()  # the cache in the workspace, `.mnote/ocr-cache`
    run_build(root, out, ocr=ocr, sidecars="beside")
    assert _tree(outside) == {}
    assert IMAGE["text"] in _text(out, "Notes.assets/shot.png")

    (root / ".mnote/ocr-cache").unlink()
    shutil.rmtree(out)
    shutil.rmtree(root / "Notes.ocr")
    run_build(root, out, ocr=ocr, sidecars="beside")
    entries = list((root / ".mnote/ocr-cache").rglob("*.json"))
    assert len(entries) == 1
    entries[0].write_text(entries[0].read_text("utf-8").replace(IMAGE["text"], "伪造的文字"), "utf-8")
    shutil.rmtree(out)
    shutil.rmtree(root / "Notes.ocr")
    run_build(root, out, ocr=ocr, sidecars="beside")
    assert IMAGE["text"] in _text(out, "Notes.assets/shot.png")
    assert "伪造" not in _text(out, "Notes.assets/shot.png")
