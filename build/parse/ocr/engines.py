"""Local OCR engines behind one small interface: `recognise(image path) -> [OcrLine]`.

Both work with no network: RapidOCR's ONNX models ship inside its wheel (`use_cls=False`: the
default direction classifier garbles English lines, another model would download), Tesseract and its
`chi_sim`/`eng` data come from Debian packages. Lines come back with boxes in the image's pixel
coordinates, normalised text and a 0..1 confidence.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import shutil
import subprocess
from pathlib import Path

from mnote_evidence.build.parse.libraries import library_version
from mnote_evidence.build.parse.ocr.normalize import REVISION as NORMALIZE_REVISION
from mnote_evidence.build.parse.ocr.normalize import OcrLine, normalize_line, respaced


class OcrUnavailable(RuntimeError):
    """The configured engine is not installed (the message says how to install it)."""


DEVICE_ENV = "MNOTE_OCR_DEVICE"  # auto (the default) | cpu | cuda
_CUDA = "CUDAExecutionProvider"


def ocr_device() -> str:
    """Where RapidOCR runs: "cuda" when onnxruntime's GPU build is installed and an NVIDIA driver is
    loaded (or `MNOTE_OCR_DEVICE=cuda` asks for it), else "cpu". Decided from package metadata and the
    driver's files, not by importing onnxruntime (0.6 s that a no-op build would pay)."""
    wanted = os.environ.get(DEVICE_ENV, "auto").strip().lower() or "auto"
    if wanted not in ("auto", "cpu", "cuda"):
        raise OcrUnavailable(f"{DEVICE_ENV}={wanted!r} is not a device: use auto, cpu or cuda")
    if wanted == "cpu":
        return "cpu"
    gpu = _gpu_runtime()
    if wanted == "cuda" and not gpu:
        raise OcrUnavailable(
            f"{DEVICE_ENV}=cuda, but no GPU runtime is here: install the NVIDIA driver and "
            "`pip install onnxruntime-gpu` (matching its CUDA and cuDNN) in place of onnxruntime, "
            f"or set {DEVICE_ENV}=cpu"
        )
    return "cuda" if gpu else "cpu"


def _gpu_runtime() -> bool:
    try:
        library_version("onnxruntime-gpu")
    except Exception:
        return False
    return Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidiactl").exists()


class RapidOcrEngine:
    name = "rapidocr"

    def version(self) -> str:
        """From package metadata: importing rapidocr pulls in OpenCV and onnxruntime. The GPU path is
        part of the version (its results may differ in the last digit), the CPU path's is unchanged."""
        try:
            base = f"rapidocr-{library_version('rapidocr')}-det+rec-nocls+n{NORMALIZE_REVISION}"
        except Exception as exc:
            raise OcrUnavailable("RapidOCR is not installed: pip install rapidocr onnxruntime") from exc
        return base + ("+cuda" if ocr_device() == "cuda" else "")

    def __init__(self):
        self._engines: dict[str, object] = {}

    def _engine(self):
        """The engine for the device chosen at this call (one per device: the choice follows
        `MNOTE_OCR_DEVICE`, and a result is never computed on another device than its version says)."""
        device = ocr_device()
        if device not in self._engines:
            self._engines[device] = _rapidocr(device == "cuda")
        return self._engines[device]

    def recognise(self, image: Path) -> list[OcrLine]:
        result = self._engine()(str(image), return_word_box=True)
        if result.txts is None:
            return []
        lines = []
        words = result.word_results or [None] * len(result.txts)
        for text, score, quad, pieces in zip(result.txts, result.scores, result.boxes, words):
            xs, ys = [p[0] for p in quad], [p[1] for p in quad]
            box = [
                round(float(min(xs)), 1),
                round(float(min(ys)), 1),
                round(float(max(xs)), 1),
                round(float(max(ys)), 1),
            ]
            text = normalize_line(respaced(text, word_pieces(pieces)) if pieces else text)
            if text:
                lines.append(OcrLine(text, box, round(float(score), 4)))
        return lines


def word_pieces(pieces) -> list[tuple[str, float, float]]:
    """RapidOCR's word results as (text, x0, x1) in the line's order (quads -> horizontal extent)."""
    return [
        (text, float(min(p[0] for p in quad)), float(max(p[0] for p in quad)))
        for text, _score, quad in pieces
    ]


def _rapidocr(cuda: bool):
    try:
        from rapidocr import RapidOCR
    except ImportError as exc:
        raise OcrUnavailable("RapidOCR is not installed: pip install rapidocr onnxruntime") from exc
    logging.getLogger("RapidOCR").setLevel(logging.WARNING)
    if cuda:
        import onnxruntime

        if _CUDA not in onnxruntime.get_available_providers():
            raise OcrUnavailable(
                f"onnxruntime-gpu is installed but its {_CUDA} does not load (CUDA or cuDNN "
                f"missing?); set {DEVICE_ENV}=cpu to OCR on the CPU"
            )
    return RapidOCR(
        params={
            "Global.use_cls": False,
            "Global.log_level": "warning",
            "EngineConfig.onnxruntime.use_cuda": cuda,
        }
    )


class TesseractEngine:
    name = "tesseract"
    languages = "chi_sim+eng"

    def version(self) -> str:
        out = subprocess.run([self._binary(), "--version"], capture_output=True, text=True).stdout
        return (
            "tesseract-" + (out.split()[1] if out else "unknown") + f"-{self.languages}+n{NORMALIZE_REVISION}"
        )

    @staticmethod
    def _binary() -> str:
        found = shutil.which("tesseract")
        if not found:
            raise OcrUnavailable(
                "tesseract is not installed: apt-get install tesseract-ocr tesseract-ocr-chi-sim"
            )
        return found

    def recognise(self, image: Path) -> list[OcrLine]:
        proc = subprocess.run(
            [self._binary(), str(image), "-", "-l", self.languages, "tsv"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"tesseract failed: {proc.stderr.strip()[:300]}")
        groups: dict[tuple, list[dict]] = {}
        for row in csv.DictReader(io.StringIO(proc.stdout), delimiter="\t", quoting=csv.QUOTE_NONE):
            if row.get("level") == "5" and (row.get("text") or "").strip():
                key = (row["block_num"], row["par_num"], row["line_num"])
                groups.setdefault(key, []).append(row)
        lines = []
        for words in groups.values():
            x0 = min(int(w["left"]) for w in words)
            y0 = min(int(w["top"]) for w in words)
            x1 = max(int(w["left"]) + int(w["width"]) for w in words)
            y1 = max(int(w["top"]) + int(w["height"]) for w in words)
            text = normalize_line(" ".join(w["text"] for w in words))
            conf = sum(float(w["conf"]) for w in words) / len(words) / 100
            if text:
                lines.append(OcrLine(text, [float(x0), float(y0), float(x1), float(y1)], round(conf, 4)))
        return lines


ENGINES = {"rapidocr": RapidOcrEngine, "tesseract": TesseractEngine}
ENGINE_NAMES = (*ENGINES, "mineru")
