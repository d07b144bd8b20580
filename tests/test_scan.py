"""Scan: the root is a wall, hidden and sidecar folders are skipped."""

from __future__ import annotations

import os

from mnote_evidence.build.workspace.scan import scan


def test_symlinks_leaving_the_root_are_refused_and_not_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# secret")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "ok.md").write_text("# ok")
    os.symlink(outside / "secret.md", root / "leak.md")
    os.symlink(outside, root / "dirlink")
    files = {f.path: f for f in scan(root)}
    assert files["leak.md"].refused[0] == "outside_root" and files["leak.md"].sha256 is None
    assert files["dirlink"].refused[0] == "outside_root"
    assert "dirlink/secret.md" not in files
    assert files["ok.md"].refused is None


def test_hidden_sidecar_and_output_folders_are_skipped(tmp_path):
    for rel in [
        "a.md",
        ".git/x.md",
        "a.ocr/spec.pdf.parse.md",
        ".mnote/sidecars/a.md.source-map.json",
        "_site/index.md",
        "sub/b.md",
    ]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("# x")
    assert [f.path for f in scan(tmp_path, exclude=[tmp_path / "_site"])] == ["a.md", "sub/b.md"]
