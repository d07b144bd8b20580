"""OCR on real manuals, against their own text layer: Latin words in Chinese lines, and no text twice.

    python bench/ocr_manuals.py [--manuals DIR] [--baseline-ref REF]   # bench/results/ocr_manuals.json

DIR (default bench/_work/manuals) holds Debian's debian-reference.{en,zh-cn}.pdf and
debian-edu-bookworm-manual{,.zh-cn}.pdf; missing ones are skipped. RapidOCR reads each page once
(rendered at the build's 200 dpi, grey); both sides of each figure use that same engine output.

- `mixed_script`: text-layer pages rendered to images. Latin-word recall on Chinese pages, CJK character
  recall, English word recall (tests/ocr/truth.py), with the normalisation of REF (default: the commit
  before the last change of build/parse/ocr/normalize.py) and with this tree's.
- `overlap`: every page of the Debian Edu manuals that the PDF provider OCRs (`needs_ocr`). Indexed text =
  the text layer + the OCR lines kept: all of them (REF's merge) or those `ocr/overlap.py` keeps. Truth =
  the text layer + the OCR of each image alone (its rectangle rendered by itself). Word precision =
  indexed words in the truth (multisets) / indexed words; `repeated_lines` = OCR lines dropped as copies.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import pymupdf

from bench._util import REPO, WORK, git_output, results_path
from mnote_evidence.build.parse.ocr import normalize
from mnote_evidence.build.parse.ocr.engines import RapidOcrEngine, word_pieces
from mnote_evidence.build.parse.ocr.normalize import OcrLine
from mnote_evidence.build.parse.ocr.overlap import new_lines
from mnote_evidence.build.parse.providers.pdf import needs_ocr, text_flags
from tests.ocr.truth import cjk_chars, compare, latin_words

DPI = 200
# (file, pages, language); pages marked held out were never looked at while the rules were chosen
MIXED = [
    ("debian-reference.zh-cn.pdf", [51, 98, 106, 114, 131, 170, 215, 240], "zh", False),
    ("debian-edu-bookworm-manual.zh-cn.pdf", [10], "zh", False),
    ("debian-reference.zh-cn.pdf", [60, 150, 190, 230], "zh", True),
    ("debian-edu-bookworm-manual.zh-cn.pdf", [60, 80], "zh", True),
    ("debian-reference.en.pdf", [40, 120, 200], "en", True),
]
OVERLAP = ["debian-edu-bookworm-manual.pdf", "debian-edu-bookworm-manual.zh-cn.pdf"]


class Reader:
    """RapidOCR's raw output per rendered region, kept so every variant normalises the same reading."""

    def __init__(self) -> None:
        self.engine = RapidOcrEngine()._engine

    def read(self, page: pymupdf.Page, clip: pymupdf.Rect | None = None):
        zoom = DPI / 72
        with tempfile.TemporaryDirectory() as tmp:
            png = Path(tmp) / "page.png"
            page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, clip=clip).save(png)
            result = self.engine(str(png), return_word_box=True)
        if result.txts is None:
            return []
        x0, y0 = (clip.x0, clip.y0) if clip else (0.0, 0.0)
        out = []
        for text, quad, pieces in zip(result.txts, result.boxes, result.word_results or [None] * 10**6):
            xs, ys = [p[0] for p in quad], [p[1] for p in quad]
            box = [x0 + min(xs) / zoom, y0 + min(ys) / zoom, x0 + max(xs) / zoom, y0 + max(ys) / zoom]
            out.append((text, box, word_pieces(pieces) if pieces else None))
        return out


def lines(raw, norm) -> list[OcrLine]:
    out = []
    for text, box, pieces in raw:
        text = norm.normalize_line(norm.respaced(text, pieces) if pieces else text)
        if text:
            out.append(OcrLine(text, box, 1.0))
    return out


def baseline_normalize(ref: str):
    source = git_output("show", f"{ref}:build/parse/ocr/normalize.py")
    path = WORK / "ocr_manuals" / "baseline_normalize.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("baseline_normalize", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def score(truth: Counter, found: Counter) -> dict:
    s = compare(truth, found)
    return {"hit": sum((truth & found).values()), **s.to_json(), "foundUnits": sum(found.values())}


def mixed_script(reader: Reader, manuals: Path, base) -> dict:
    rows = []
    for name, pages, lang, held_out in MIXED:
        if not (manuals / name).exists():
            continue
        with pymupdf.open(manuals / name) as doc:
            for n in pages:
                truth, raw = doc[n - 1].get_text(), reader.read(doc[n - 1])
                row = {"pdf": name, "page": n, "lang": lang, "heldOut": held_out}
                for side, norm in (("baseline", base), ("yours", normalize)):
                    text = "\n".join(line.text for line in lines(raw, norm))
                    row[side] = {"words": score(latin_words(truth), latin_words(text))}
                    if lang == "zh":
                        row[side]["cjk"] = score(cjk_chars(truth), cjk_chars(text))
                rows.append(row)
                print(json.dumps(row, ensure_ascii=False), file=sys.stderr)
    summary = {}
    for group, keep in (
        ("zh", lambda r: r["lang"] == "zh"),
        ("zh held out", lambda r: r["lang"] == "zh" and r["heldOut"]),
        ("en", lambda r: r["lang"] == "en"),
    ):
        chosen = [r for r in rows if keep(r)]
        for side in ("baseline", "yours"):
            for unit in ("words", "cjk"):
                parts = [r[side][unit] for r in chosen if unit in r[side]]
                if parts:
                    hit, total = sum(p["hit"] for p in parts), sum(p["truthUnits"] for p in parts)
                    summary[f"{group} {unit} recall, {side}"] = f"{hit}/{total} = {hit / max(1, total):.4f}"
    return {"summary": summary, "pages": rows}


def overlap(reader: Reader, manuals: Path) -> dict:
    out = {}
    for name in OVERLAP:
        if not (manuals / name).exists():
            continue
        truth_words, truth_cjk = Counter(), Counter()
        sides = {side: [Counter(), Counter()] for side in ("baseline", "yours")}
        ocr_pages, repeated = 0, {"baseline": 0, "yours": 0}
        with pymupdf.open(manuals / name) as doc:
            for page in doc:
                layer = page.get_text()
                for c, part in ((truth_words, latin_words(layer)), (truth_cjk, cjk_chars(layer))):
                    c.update(part)
                for words, cjk in sides.values():
                    words.update(latin_words(layer))
                    cjk.update(cjk_chars(layer))
                blocks = page.get_textpage(flags=text_flags()).extractBLOCKS()
                native = [(list(b[:4]), b[4]) for b in blocks if b[6] == 0 and b[4].strip()]
                if not needs_ocr(page, sum(len(t) for _, t in native)):
                    continue
                ocr_pages += 1
                for info in page.get_image_info():
                    clip = pymupdf.Rect(info["bbox"]) & page.rect
                    if clip.is_valid and not clip.is_empty:
                        shown = "\n".join(line.text for line in lines(reader.read(page, clip), normalize))
                        truth_words.update(latin_words(shown))
                        truth_cjk.update(cjk_chars(shown))
                read = lines(reader.read(page), normalize)
                for side, kept in (("baseline", read), ("yours", new_lines(read, native))):
                    repeated[side] += len(read) - len(kept)
                    text = "\n".join(line.text for line in kept)
                    sides[side][0].update(latin_words(text))
                    sides[side][1].update(cjk_chars(text))
        out[name] = {"ocrPages": ocr_pages}
        for side, (words, cjk) in sides.items():
            out[name][side] = {
                "linesDroppedAsCopies": repeated[side],
                "wordPrecision": score(truth_words, words),
                "cjkPrecision": score(truth_cjk, cjk),
            }
        print(json.dumps({name: out[name]}, ensure_ascii=False), file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--manuals", type=Path, default=WORK / "manuals")
    last = subprocess.run(
        ["git", "-C", str(REPO), "log", "-1", "--format=%h", "--", "build/parse/ocr/normalize.py"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    ap.add_argument("--baseline-ref", default=f"{last}~1" if last else "HEAD")
    ap.add_argument("--only", choices=["mixed_script", "overlap"])
    args = ap.parse_args()
    reader = Reader()
    result = {"baselineRef": args.baseline_ref, "dpi": DPI}
    if args.only != "overlap":
        result["mixed_script"] = mixed_script(reader, args.manuals, baseline_normalize(args.baseline_ref))
    if args.only != "mixed_script":
        result["overlap"] = overlap(reader, args.manuals)
    path = results_path("ocr_manuals.json")
    if args.only and path.exists():  # one part redone: the other part's figures stay
        result = {**json.loads(path.read_text()), **result}
    path = results_path("ocr_manuals.json")
    if args.only and path.exists():  # one part redone: the other part's figures stay
        result = {**json.loads(path.read_text()), **result}
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps({k: v.get("summary", v) for k, v in result.items() if isinstance(v, dict)}, indent=1))


if __name__ == "__main__":
    main()
