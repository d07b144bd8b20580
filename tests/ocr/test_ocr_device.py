"""Where RapidOCR runs: the GPU when onnxruntime's CUDA build and a driver are present, else the CPU,
recorded in the provider version; asking for a GPU that is not there is a clear per-file error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mnote_evidence.build.parse.ocr.engines import DEVICE_ENV, ocr_device
from tests.conftest import FACTS, FIXTURES, connect

IMAGE = FACTS["image"]["path"]


@pytest.fixture
def image_ws(tmp_path):
    root = tmp_path / "ws"
    (root / "shots").mkdir(parents=True)
    (root / "shots/thread-scope.png").write_bytes((FIXTURES / IMAGE).read_bytes())
    (root / "note.md").write_text("# Beside\n\nA note beside the scan.\n")
    return root


def build(ws, out, device: str | None) -> dict:
    """A CLI build in its own process: the device is a process's setting, read where OCR runs."""
    env = {k: v for k, v in os.environ.items() if k != DEVICE_ENV}
    if device is not None:
        env[DEVICE_ENV] = device
    proc = subprocess.run(
        [sys.executable, "-m", "mnote_evidence", "build", str(ws), "--out", str(out), "--no-site"]
        + ["--jobs", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    return json.loads(proc.stdout)


def versions(out) -> dict[str, str]:
    rows = connect(out).execute("SELECT source_root_relative_path, provider_version FROM evidence_resource")
    return dict(rows.fetchall())


def test_the_device_is_chosen_automatically_and_recorded(image_ws, tmp_path):
    assert build(image_ws, tmp_path / "auto", None)["errors"] == []
    image = versions(tmp_path / "auto")["shots/thread-scope.png"]
    assert ("+cuda" in image) == (ocr_device() == "cuda")

    assert build(image_ws, tmp_path / "cpu", "cpu")["errors"] == []
    cpu = versions(tmp_path / "cpu")["shots/thread-scope.png"]
    assert "cuda" not in cpu
    if ocr_device() == "cpu":  # no GPU here: the automatic choice is exactly the CPU path
        assert cpu == image
    text = " ".join(r[0] for r in connect(tmp_path / "cpu").execute("SELECT text FROM evidence_block"))
    assert "Thread" in text


def test_a_gpu_asked_for_and_absent_is_a_clear_error_of_that_file(image_ws, tmp_path, monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    if ocr_device() == "cuda":
        pytest.skip("a GPU runtime is present: the request is met")
    [error] = build(image_ws, tmp_path / "out", "cuda")["errors"]
    assert (error["path"], error["code"]) == ("shots/thread-scope.png", "ocr_unavailable")
    assert "onnxruntime-gpu" in error["message"] and f"{DEVICE_ENV}=cpu" in error["message"]
    assert "note.md" in versions(tmp_path / "out")  # the rest of the build completes


def test_an_unknown_device_names_the_choices(image_ws, tmp_path):
    [error] = build(image_ws, tmp_path / "out", "tpu")["errors"]
    assert error["code"] == "ocr_unavailable" and "auto, cpu or cuda" in error["message"]
