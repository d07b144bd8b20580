"""Page furniture on real manuals: detected running lines and page numbers labelled, body lines not.

    python bench/furniture.py                        # writes bench/results/furniture.json
    python bench/furniture.py --baseline-path DIR    # the baseline: an installed tree (PYTHONPATH=DIR)
    python bench/furniture.py --baseline-ref REF     # the baseline: REF's sources (default HEAD)

Documents: Debian packages unpacked under bench/_work/debs/x (`apt-get download` of the packages in
`PACKAGES` when a file is missing; missing ones are skipped). Each side (the baseline, this checkout)
builds them into its own evidence.sqlite (no OCR, no site) in a child process.

Truth, from PyMuPDF's lines alone (`detect`): on each page the two outermost rows at the top and at the
bottom are edge lines; an edge line is furniture when its text (with a letter; digits as #) is an edge
line within `SAME_Y` points of the same height on 3 pages and such repeats fill half of the pages with an
edge line there, or when its text is a page number (arabic or roman, `- 3 -`, `Page 3`, `3 / 17`) whose
value minus the page index is that of 3 pages. A detected line maps to the block holding its centre.
Reported per PDF and side: detected lines whose block is `furniture`, and, of the hand-checked body
lines at page edges in `bench/furniture_body_sample.json` (text, page; each read against the page),
those labelled furniture. `heldOut` lists the documents never looked at while tuning. For this checkout
also: every furniture text (digits as #) with its count, and for title-like queries the share of
furniture in the top 10 with `includeFurniture` and by default.
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
from collections import Counter
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import REPO, WORK, baseline_tree, before_added, machine, results_path

HERE = WORK / "furniture"
DEBS = WORK / "debs"
SAME_Y = 3.0
SAMPLE = Path(__file__).with_name("furniture_body_sample.json")
SEQUENCE_TEST = "tests/providers/test_furniture_sequence.py"
PACKAGES = [
    "r-doc-pdf",
    "libtasn1-doc",
    "shared-mime-info",
    "gnuplot-doc",
    "texlive-lang-chinese",
    "debian-reference-en",
    "debian-reference-zh-cn",
    "debian-edu-doc-en",
    "debian-edu-doc-zh-cn",
    "asymptote-doc",
    "pari-doc",
]
R = "usr/share/R/doc/manual"
ASY = "usr/share/doc/asymptote"
PARI = "usr/share/pari/doc"
EDU = "usr/share/doc/debian-edu-doc-{}/debian-edu-bookworm-manual.pdf"
TUNED = [
    f"{PARI}/tutorial.pdf",
    f"{PARI}/parallel.pdf",
    f"{PARI}/refcard.pdf",
    f"{ASY}/asy-latex.pdf",
    f"{ASY}/asyRefCard.pdf",
    "usr/share/debian-reference/debian-reference.en.pdf",
    EDU.format("en"),
    f"{R}/R-FAQ.pdf",
    f"{R}/R-data.pdf",
    f"{R}/R-intro.pdf",
    "usr/share/doc/libtasn1-doc/libtasn1.pdf",
    "usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
    "usr/share/doc/texlive-doc/latex/ctex/ctex.pdf",
]
HELD_OUT = [
    "usr/share/debian-reference/debian-reference.zh-cn.pdf",
    EDU.format("zh-cn"),
    f"{ASY}/asymptote.pdf",
    f"{R}/R-lang.pdf",
    f"{R}/R-admin.pdf",
    f"{R}/R-ints.pdf",
    f"{R}/R-exts.pdf",
    "usr/share/doc/gnuplot/gnuplot.pdf",
    f"{PARI}/develop.pdf",
    "usr/share/doc/texlive-doc/latex/ctex-faq/ctex-faq.pdf",
]
QUERIES = {  # title-like: the words of the PDF's running headers
    "shared-mime-info-spec.pdf": ["MIME database", "Shared MIME-info Database"],
    "libtasn1.pdf": ["Function reference", "Copying Information"],
    "R-FAQ.pdf": ["R Miscellanea", "R Basics"],
    "R-data.pdf": ["Relational databases", "Spreadsheet-like data"],
    "R-intro.pdf": ["Graphical procedures", "Statistical models in R"],
    "R-lang.pdf": ["Evaluation of expressions", "Object-oriented programming"],
    "R-admin.pdf": ["Platform notes", "Add-on packages"],
    "R-ints.pdf": ["R Internal Structures", "Graphics Devices"],
    "gnuplot.pdf": ["gnuplot 5.4", "gnuplot contents"],
}
BUILD = """
import sys
from pathlib import Path
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.pipeline import BuildOptions, build
options = BuildOptions(out=Path(sys.argv[2]), jobs=2, site=False, ocr=OcrSettings(engine="none"))
build(Path(sys.argv[1]), options)
"""
_NUMBER = re.compile(
    r"^(?:page\s*)?[-–—]?\s*(\d{1,4}|[ivxlcdm]{1,7})\s*[-–—]?(?:\s*(?:/|of)\s*\d{1,4})?$", re.I
)
_LETTER = re.compile(r"[^\W\d_]")
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


def _value(text: str) -> tuple[str, int] | None:
    m = _NUMBER.match(text)
    if not m:
        return None
    s = m.group(1).lower()
    if s.isdigit():
        return "a", int(s)
    v = [_ROMAN[c] for c in s]
    return "r", sum(-a if a < b else a for a, b in zip(v, v[1:] + [0]))


def lines_of(doc: pymupdf.Document) -> list[tuple[int, list[float], str]]:
    """(page, bbox, text) of every text line PyMuPDF reads."""
    out = []
    for n, page in enumerate(doc, 1):
        for block in page.get_text("dict")["blocks"]:
            for line in block.get("lines", []):
                text = " ".join("".join(s["text"] for s in line["spans"]).split())
                if text:
                    out.append((n, list(line["bbox"]), text))
    return out


def detect(lines: list[tuple[int, list[float], str]]) -> set[int]:
    """Indexes of the lines that are running headers, footers or page numbers (see the docstring)."""
    by_page: dict[int, list[int]] = {}
    for i, (page, _bbox, _text) in enumerate(lines):
        by_page.setdefault(page, []).append(i)
    edge: dict[int, str] = {}
    for ids in by_page.values():
        rows = sorted({round(lines[i][1][1]) for i in ids})
        for i in ids:
            y = round(lines[i][1][1])
            if any(abs(y - r) <= 2 for r in rows[:2]):
                edge[i] = "top"
            elif any(abs(y - r) <= 2 for r in rows[-2:]):
                edge[i] = "bottom"
    found = set()
    groups: dict[tuple[str, str], list[int]] = {}
    for i, side in edge.items():
        key = re.sub(r"\d+", "#", lines[i][2].lower())
        if _LETTER.search(key):
            groups.setdefault((side, key), []).append(i)
    repeats = set()
    for ids in groups.values():
        for i in ids:
            y = lines[i][1][1]
            if len({lines[j][0] for j in ids if abs(lines[j][1][1] - y) <= SAME_Y}) >= 3:
                repeats.add(i)
    for i in repeats:
        y, side = lines[i][1][1], edge[i]
        there = [j for j in edge if edge[j] == side and abs(lines[j][1][1] - y) <= SAME_Y]
        pages = {lines[j][0] for j in there}
        if len({lines[j][0] for j in there if j in repeats}) * 2 >= len(pages):
            found.add(i)
    offsets: dict[tuple[str, int], set[int]] = {}
    values = {}
    for i in edge:
        v = _value(lines[i][2])
        if v:
            values[i] = (v[0], v[1] - lines[i][0])
            offsets.setdefault(values[i], set()).add(lines[i][0])
    found |= {i for i, key in values.items() if len(offsets[key]) >= 3}
    return found


def blocks_of(conn: sqlite3.Connection, rel: str) -> dict[int, list[tuple[list[float], str, str]]]:
    out: dict[int, list] = {}
    for page, bbox, role, text in conn.execute(
        "SELECT b.page, b.bbox_json, b.role, b.text FROM evidence_block b JOIN evidence_resource r "
        "USING (resource_id) WHERE r.source_root_relative_path = ? AND b.bbox_json IS NOT NULL",
        [rel],
    ):
        out.setdefault(page, []).append((json.loads(bbox), role, text))
    return out


def role_at(blocks, page: int, bbox: list[float]) -> str | None:
    cx, cy = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    for (x0, y0, x1, y1), role, _text in blocks.get(page, []):
        if x0 - 1 <= cx <= x1 + 1 and y0 - 1 <= cy <= y1 + 1:
            return role
    return None


def measure(out: Path, ws: Path, docs: list[str], sample: dict) -> dict:
    conn = sqlite3.connect(f"file:{out / 'evidence.sqlite'}?mode=ro", uri=True)
    per = {}
    for rel in docs:
        doc = pymupdf.open(ws / rel)
        lines = lines_of(doc)
        doc.close()
        blocks = blocks_of(conn, rel)
        found = detect(lines)
        roles = [role_at(blocks, lines[i][0], lines[i][1]) for i in sorted(found)]
        body = sample["lines"].get(rel, [])
        wrong = [
            s for s in body if role_at(blocks, s["page"], s["bbox"]) == "furniture"
        ]  # a hand-checked body line labelled furniture
        per[rel] = {
            "detected": len(found),
            "labelled": roles.count("furniture"),
            "missed": sorted(
                {
                    f"p{lines[i][0]} {lines[i][2][:60]}"
                    for i, r in zip(sorted(found), roles)
                    if r != "furniture"
                }
            )[:8],
            "bodySample": len(body),
            "bodyLabelledFurniture": len(wrong),
            "bodyWrong": [f"p{s['page']} {s['text'][:60]}" for s in wrong],
        }
    conn.close()
    return per


def totals(per: dict, docs: list[str]) -> dict:
    rows = [per[d] for d in docs if d in per]
    det, lab = sum(r["detected"] for r in rows), sum(r["labelled"] for r in rows)
    return {
        "detected": det,
        "labelled": lab,
        "labelledPct": round(100 * lab / det, 1) if det else None,
        "bodySample": sum(r["bodySample"] for r in rows),
        "bodyLabelledFurniture": sum(r["bodyLabelledFurniture"] for r in rows),
    }


def build_side(name: str, pythonpath: Path, ws: Path) -> Path:
    out = HERE / name
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    subprocess.run([sys.executable, "-c", BUILD, str(ws), str(out)], cwd="/", env=env, check=True)
    return out


def fetch_documents() -> Path:
    root = DEBS / "x"
    if all((root / d).is_file() for d in TUNED + HELD_OUT):
        return root
    DEBS.mkdir(parents=True, exist_ok=True)
    for pkg in PACKAGES:
        if not list(DEBS.glob(f"{pkg}_*.deb")):
            subprocess.run(["apt-get", "download", pkg], cwd=DEBS, capture_output=True)
        for deb in DEBS.glob(f"{pkg}_*.deb"):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


def furniture_texts(out: Path) -> dict:
    """This checkout's furniture texts (digits as #) per PDF, and the title-like queries' top 10."""
    from mnote_evidence.functions.core.db import EvidenceDB
    from mnote_evidence.functions.handlers.evidence import Context, search

    ctx = Context(EvidenceDB(out / "evidence.sqlite"), "")
    conn = ctx.db.connect()
    per = {}
    for (path,) in conn.execute("SELECT source_root_relative_path FROM evidence_resource WHERE kind = 'pdf'"):
        rows = conn.execute(
            "SELECT b.block_id, b.text, b.role FROM evidence_block b JOIN evidence_resource r "
            "USING (resource_id) WHERE r.source_root_relative_path = ?",
            [path],
        ).fetchall()
        role = {r[0]: r[2] for r in rows}
        patterns = Counter(re.sub(r"\d+", "#", " ".join(r[1].split())) for r in rows if r[2] == "furniture")
        queries = {}
        for q in QUERIES.get(Path(path).name, []):
            queries[q] = {}
            for mode, flag in (("includeFurniture", True), ("default", False)):
                res = search({"query": q, "topK": 10, "pathPrefix": path, "includeFurniture": flag}, ctx)
                hits = res["results"]
                queries[q][mode] = {
                    "results": len(hits),
                    "furniture": sum(role.get(h["evidenceId"]) == "furniture" for h in hits),
                }
        per[path] = {"patterns": dict(patterns.most_common(12)), "queries": queries}
    return per


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-ref", help="git ref of the baseline (default: before the page sequence)")
    ap.add_argument("--baseline-path", type=Path, help="an installed tree to use as the baseline")
    args = ap.parse_args()
    root = fetch_documents()
    docs = [d for d in TUNED + HELD_OUT if (root / d).is_file()]
    ws = HERE / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    for rel in docs:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / rel, ws / rel)
    sample = json.loads(SAMPLE.read_text("utf-8"))
    if args.baseline_path:
        base_label, base_path = str(args.baseline_path), args.baseline_path
    else:
        ref = args.baseline_ref or before_added(SEQUENCE_TEST)
        base_label, base_path = ref, baseline_tree(ref, "furniture")
    base = measure(build_side("baseline", base_path, ws), ws, docs, sample)
    ours_out = build_side("ours", REPO, ws)
    ours = measure(ours_out, ws, docs, sample)
    texts = furniture_texts(ours_out)
    shares = {"includeFurniture": [], "default": []}
    for got in texts.values():
        for q in got["queries"].values():
            for mode, r in q.items():
                if r["results"]:
                    shares[mode].append(r["furniture"] / r["results"])
    held = [d for d in HELD_OUT if d in docs]
    result = {
        "baseline": base_label,
        "heldOut": held,
        "perPdf": {d: {"baseline": base[d], "ours": ours[d], **texts.get(d, {})} for d in docs},
        "tuned": {"baseline": totals(base, TUNED), "ours": totals(ours, TUNED)},
        "heldOutTotal": {"baseline": totals(base, held), "ours": totals(ours, held)},
        "overall": {"baseline": totals(base, docs), "ours": totals(ours, docs)},
        "meanFurnitureShareTop10Pct": {
            m: round(100 * sum(v) / len(v), 1) if v else None for m, v in shares.items()
        },
        "queries": sum(len(t["queries"]) for t in texts.values()),
        "machine": machine(),
    }
    text = json.dumps(result, indent=1, ensure_ascii=False)
    results_path("furniture.json").write_text(text + "\n", "utf-8")
    for d in docs:
        b, o = base[d], ours[d]
        print(
            f"{d}: detected {o['detected']}, labelled baseline {b['labelled']} / ours {o['labelled']}; "
            f"body sample {o['bodySample']}: labelled furniture baseline {b['bodyLabelledFurniture']} / "
            f"ours {o['bodyLabelledFurniture']}"
        )
    print(json.dumps({k: result[k] for k in ("tuned", "heldOutTotal", "overall")}, indent=1))


if __name__ == "__main__":
    main()
