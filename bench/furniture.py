"""Page furniture on real multi-page PDFs: how much of it leaves search, and what gets marked.

    python bench/furniture.py     # writes bench/results/furniture.json

Debian documentation PDFs (the R manuals from r-doc-pdf, libtasn1-doc, shared-mime-info, gnuplot-doc's
gnuplot.pdf via `apt-get download`; the list is bench/real_workspace.py's) are built into their own index
(bench/_work/furniture/, no OCR, no site). Reported per PDF:
- furniture blocks, and every furniture text (digits shown as #) with its count: the list to read by hand
  for body text wrongly marked; `suspects` are the marked texts most likely wrong (not a page number and
  on one page only) and `missedCandidates` body blocks whose text equals a furniture text (digits aside);
- for title-like queries (a running header's words, searched within that PDF): the share of furniture
  among the top 10 with `includeFurniture` (everything ranked, furniture included) and
  by default (furniture left out).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import results_path
from bench.real_workspace import SYSTEM_PDFS, gnuplot_pdf
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.providers.furniture import PAGE_NUMBER
from mnote_evidence.build.pipeline import BuildOptions, build
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context, search

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work" / "furniture"
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


def _key(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(text.split()))


def main() -> None:
    ws, out = WORK / "ws", WORK / "out"
    shutil.rmtree(WORK, ignore_errors=True)
    ws.mkdir(parents=True)
    for src in SYSTEM_PDFS + [str(gnuplot_pdf() or "")]:
        if src and Path(src).exists():
            shutil.copy(Path(src).resolve(), ws / Path(src).name)
    build(ws, BuildOptions(out=out, jobs=2, site=False, ocr=OcrSettings(engine="none")))
    ctx = Context(EvidenceDB(out / "evidence.sqlite"), "")
    conn = ctx.db.connect()
    per_pdf, shares = {}, {"includeFurniture": [], "default": []}
    for path, pages in conn.execute(
        "SELECT source_root_relative_path, page_count FROM evidence_resource "
        "WHERE kind = 'pdf' AND status = 'ok' ORDER BY 1"
    ).fetchall():
        rows = conn.execute(
            "SELECT b.block_id, b.text, b.page, b.role FROM evidence_block b JOIN evidence_resource r "
            "USING (resource_id) WHERE r.source_root_relative_path = ?",
            [path],
        ).fetchall()
        role = {r[0]: r[3] for r in rows}
        furniture = [(r[1], r[2]) for r in rows if r[3] == "furniture"]
        patterns = Counter(_key(t) for t, _ in furniture)
        pages_of = {}
        for t, p in furniture:
            pages_of.setdefault(_key(t), set()).add(p)
        suspects = sorted(
            k for k, ps in pages_of.items() if len(ps) == 1 and not PAGE_NUMBER.match(k.replace("#", "1"))
        )
        missed = sorted({_key(r[1]) for r in rows if r[3] == "body" and _key(r[1]) in patterns})
        queries = {}
        for q in QUERIES.get(path, []):
            got = {}
            for mode, flag in (("includeFurniture", True), ("default", False)):
                res = search({"query": q, "topK": 10, "pathPrefix": path, "includeFurniture": flag}, ctx)[
                    "results"
                ]
                n = sum(role.get(r["evidenceId"]) == "furniture" for r in res)
                got[mode] = {"results": len(res), "furniture": n}
                if res:
                    shares[mode].append(n / len(res))
            queries[q] = got
        per_pdf[path] = {
            "pages": pages,
            "blocks": len(rows),
            "furniture": len(furniture),
            "pagesWithFurniture": len({p for _, p in furniture}),
            "patterns": dict(patterns.most_common()),
            "suspects": suspects,
            "missedCandidates": missed,
            "queries": queries,
        }
        print(
            f"{path}: {pages} pages, {len(rows)} blocks, {len(furniture)} furniture on "
            f"{per_pdf[path]['pagesWithFurniture']} pages; suspects {suspects}; missed {missed}"
        )
        for q, got in queries.items():
            print(
                f"   {q!r}: furniture in top 10 with includeFurniture {got['includeFurniture']['furniture']}"
                f"/{got['includeFurniture']['results']}, by default {got['default']['furniture']}"
                f"/{got['default']['results']}"
            )
    summary = {mode: round(100 * sum(v) / len(v), 1) if v else None for mode, v in shares.items()}
    print("mean furniture share of top 10 (%):", summary)
    result = {
        "pdfs": per_pdf,
        "meanFurnitureShareTop10Pct": summary,
        "queries": sum(len(v) for v in QUERIES.values()),
    }
    results_path("furniture.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
