"""Section paths on real manuals: the share of body blocks filed under the right outline entry, and code
taken for headings where a PDF has no outline.

    python bench/sections.py                       # writes bench/results/sections.json
    python bench/sections.py --baseline-ref REF    # the baseline: REF's sources
    python bench/sections.py --baseline-path DIR   # the baseline: an installed tree (PYTHONPATH=DIR)

Documents: Debian packages unpacked under --root (default bench/_work/sections/debs): `apt-get download
debian-reference-en debian-reference-zh-cn debian-edu-doc-en debian-edu-doc-zh-cn asymptote-doc pari-doc`,
then `dpkg-deb -x <deb> <root>` for each; missing files are skipped. Each side (the baseline, this
checkout) builds them into its own evidence.sqlite (no OCR, no site), in a child process.

Truth, from PyMuPDF alone: for each native body block (role body) of a PDF with an outline, the innermost
outline entry whose destination (page, y) lies above the block's top, y less `SLACK` points (a TeX
destination sits up to ~1.5 pt below its heading's top); an entry without a point counts from its page's
top. Reported per PDF and overall: blocks whose `section_path_json` ends with that entry's title (both
NFKC, whitespace collapsed), with the denominator. For PDFs without an outline: sections whose title is
code, by PyMuPDF's spans under the section's first block (monospace flag or a monospace font name) or by
a numbered-listing / TeX-command pattern. `heldOut` lists the documents never used while tuning.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import unicodedata
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import REPO, WORK, baseline_tree, before_added, machine, results_path

HERE = WORK / "sections"
SLACK = 6.0
REF = "usr/share/debian-reference"
EDU = "usr/share/doc/debian-edu-doc-{}"
ASY = "usr/share/doc/asymptote"
PARI = "usr/share/pari/doc"
TUNED = [
    f"{REF}/debian-reference.en.pdf",
    f"{REF}/debian-reference.zh-cn.pdf",
    f"{EDU.format('en')}/debian-edu-bookworm-manual.pdf",
    f"{ASY}/asymptote.pdf",
    f"{PARI}/parallel.pdf",
    f"{ASY}/asy-latex.pdf",
]
HELD_OUT = [
    f"{EDU.format('zh-cn')}/debian-edu-bookworm-manual.pdf",
    f"{EDU.format('zh-cn')}/debian-edu-bullseye-manual.pdf",
    f"{PARI}/develop.pdf",
    f"{PARI}/tutorial.pdf",
    f"{PARI}/INSTALL.pdf",
    f"{ASY}/CAD.pdf",
]
BUILD = """
import sys
from pathlib import Path
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.pipeline import BuildOptions, build
options = BuildOptions(out=Path(sys.argv[2]), jobs=2, site=False, ocr=OcrSettings(engine="none"))
build(Path(sys.argv[1]), options)
"""
CODE_TITLE = re.compile(r"\\[A-Za-z@]{2,}|[{};]\s*$|^\d+\s+\S*[\\{}%#;=<>$]")
MONO_FONT = re.compile(r"mono|courier|code|^cmtt|^lmmono|tt\d", re.I)


def norm(text: str | None) -> str | None:
    return None if text is None else " ".join(unicodedata.normalize("NFKC", text).split())


def outline(doc: pymupdf.Document) -> list[tuple[int, float, str]]:
    """(1-based page, y, title) of each outline entry with a page, in outline order."""
    out = []
    if not doc.get_toc():
        return out

    def walk(node):
        while node is not None:
            if node.page is not None and node.page >= 0:
                y = node.y if node.y == node.y else float("-inf")  # NaN: no point, the page's top
                out.append((node.page + 1, y, node.title))
            if node.down is not None:
                walk(node.down)
            node = node.next

    walk(doc.outline)
    return out


def truth_title(entries, page: int, top: float) -> str | None:
    best, best_key = None, None
    for order, (p, y, title) in enumerate(entries):
        key = (p, y, order)
        if (p, y - SLACK) <= (page, top) and (best_key is None or key > best_key):
            best, best_key = title, key
    return norm(best)


def mono_or_code(page: pymupdf.Page, bbox: list[float], title: str) -> bool:
    if CODE_TITLE.search(title):
        return True
    chars = mono = 0
    rect = pymupdf.Rect(bbox)
    for block in page.get_text("dict", clip=rect)["blocks"]:
        for line in block.get("lines", []):
            for span in line["spans"]:
                n = len(span["text"].strip())
                chars += n
                if span["flags"] & pymupdf.TEXT_FONT_MONOSPACED or MONO_FONT.search(span["font"]):
                    mono += n
    return chars > 0 and mono * 2 > chars


def measure(out: Path, root: Path, docs: list[str]) -> dict:
    conn = sqlite3.connect(f"file:{out / 'evidence.sqlite'}?mode=ro", uri=True)
    per = {}
    for rel in docs:
        doc = pymupdf.open(root / rel)
        entries = outline(doc)
        blocks = conn.execute(
            "SELECT b.page, b.bbox_json, b.section_path_json, b.kind FROM evidence_block b "
            "JOIN evidence_resource r USING (resource_id) WHERE r.source_root_relative_path = ? "
            "AND b.role = 'body' AND b.kind != 'ocr_line'",
            [rel],
        ).fetchall()
        if entries:
            right = 0
            for page, bbox, path, _kind in blocks:
                ours = json.loads(path or "[]")
                right += norm(ours[-1] if ours else None) == truth_title(entries, page, json.loads(bbox)[1])
            per[rel] = {
                "outlineEntries": len(entries),
                "bodyBlocks": len(blocks),
                "rightSection": right,
                "share": round(right / len(blocks), 4) if blocks else None,
                "headingBlocks": sum(k == "heading" for *_, k in blocks),
            }
        else:
            sections = conn.execute(
                "SELECT s.title, (SELECT b.page || ' ' || b.bbox_json FROM evidence_block b "
                "WHERE b.section_id = s.section_id ORDER BY b.ordinal LIMIT 1) FROM evidence_section s "
                "JOIN evidence_resource r USING (resource_id) WHERE r.source_root_relative_path = ?",
                [rel],
            ).fetchall()
            code = []
            for title, where in sections:
                if where is None:
                    continue
                page, bbox = where.split(" ", 1)
                if mono_or_code(doc[int(page) - 1], json.loads(bbox), title):
                    code.append(title)
            per[rel] = {"sections": len(sections), "codeSections": len(code), "codeExamples": code[:5]}
        doc.close()
    conn.close()
    return per


def build_side(name: str, pythonpath: Path, ws: Path) -> Path:
    out = HERE / name
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-c", BUILD, str(ws), str(out)],
        cwd="/",
        env={**os.environ, "PYTHONPATH": str(pythonpath)},
        check=True,
    )
    return out


def totals(per: dict, docs: list[str]) -> dict:
    rows = [per[d] for d in docs if d in per and "bodyBlocks" in per[d]]
    right, blocks = sum(r["rightSection"] for r in rows), sum(r["bodyBlocks"] for r in rows)
    code = [per[d] for d in docs if d in per and "sections" in per[d]]
    return {
        "rightSection": right,
        "bodyBlocks": blocks,
        "share": round(right / blocks, 4) if blocks else None,
        "codeSections": sum(r["codeSections"] for r in code),
        "sections": sum(r["sections"] for r in code),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=HERE / "debs", help="where the .deb files are unpacked")
    ap.add_argument("--baseline-ref", help="git ref of the baseline (default: before the outline placement)")
    ap.add_argument("--baseline-path", type=Path, help="an installed tree to use as the baseline")
    args = ap.parse_args()
    docs = [d for d in TUNED + HELD_OUT if (args.root / d).is_file()]
    if not docs:
        sys.exit(f"no documents under {args.root}: see this script's docstring")
    ws = HERE / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    for rel in docs:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(args.root / rel, ws / rel)
    if args.baseline_path:
        base_label, base_path = str(args.baseline_path), args.baseline_path
    else:
        ref = args.baseline_ref or before_added("build/parse/providers/outline.py")
        base_label, base_path = ref, baseline_tree(ref, "sections")
    base = measure(build_side("baseline", base_path, ws), ws, docs)
    ours = measure(build_side("ours", REPO, ws), ws, docs)
    result = {
        "baseline": base_label,
        "slackPt": SLACK,
        "heldOut": [d for d in HELD_OUT if d in docs],
        "perPdf": {d: {"baseline": base[d], "ours": ours[d]} for d in docs},
        "tuned": {"baseline": totals(base, TUNED), "ours": totals(ours, TUNED)},
        "heldOutTotal": {"baseline": totals(base, HELD_OUT), "ours": totals(ours, HELD_OUT)},
        "overall": {"baseline": totals(base, docs), "ours": totals(ours, docs)},
        "machine": machine(),
    }
    text = json.dumps(result, indent=2, ensure_ascii=False)
    results_path("sections.json").write_text(text + "\n", "utf-8")
    print(text)


if __name__ == "__main__":
    main()
