"""Page-spanning queries, known-item queries and exact phrases on real manuals: this tree's search
against a baseline tree's, on the same evidence.sqlite, in the same run.

    python bench/page_queries.py [--manuals DIR] [--baseline-tree DIR] [--work DIR]

The manuals (asymptote.pdf, debian-reference.en.pdf, debian-reference.zh-cn.pdf and, held apart as the
documents the ranking was never tried on while it was written, debian-edu-bookworm-manual.pdf) are cut to
`PAGES` pages each and built once with this tree (`--no-ocr`). The queries are made by a seeded procedure
over the built blocks, never picked by hand:
- page-spanning: a page's two body blocks, a rare term from each (a word of 5+ letters, or for Chinese a
  3-character run, held by at most `RARE` blocks), kept only if no single block holds both; found@10: the
  page is the page of one of the first 10 results;
- known-item: a block's 3 rarest terms; R@1 / R@10: the block is the 1st / among the first 10 results;
- exact phrase: 3 consecutive words of a block whose words some other block also holds (not as the
  phrase); the rank of the first result holding the phrase.
Both trees answer through `evidence.search` (the baseline in a subprocess with its tree on PYTHONPATH);
latency is each query's handler time, median and p95.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANUALS = {  # file: pages kept (1-based, inclusive)
    "asymptote.pdf": (60, 139),
    "debian-reference.en.pdf": (150, 229),
    "debian-reference.zh-cn.pdf": (150, 229),
    "debian-edu-bookworm-manual.pdf": (10, 59),
}
HELD_OUT = {"debian-edu-bookworm-manual.pdf"}
PAGE_QUERIES = {"asymptote.pdf": 8, "debian-reference.en.pdf": 8, "debian-reference.zh-cn.pdf": 8}
HELD_OUT_QUERIES = 8
KNOWN_ITEMS = 80
PHRASES = 40
RARE = 3  # page-spanning terms: held by at most this many blocks
MID = (4, 30)  # and a second set of terms held by this many blocks: more than the any-term fallback shows
SEED = 29
WORD = re.compile(r"[^\W\d_]{5,}")
CJK3 = re.compile(r"[\u4e00-\u9fff]{3}")


def answer(db: str, queries: list[str]) -> list[dict]:
    """Each query's answer (top 10) and handler time, from whichever mnote_evidence is importable."""
    from mnote_evidence.functions.core.contracts import Context
    from mnote_evidence.functions.core.db import EvidenceDB
    from mnote_evidence.functions.handlers.evidence import search

    ctx = Context(EvidenceDB(Path(db)))
    out = []
    for q in queries:
        t0 = time.perf_counter()
        body = search({"query": q, "topK": 10}, ctx)
        ms = (time.perf_counter() - t0) * 1000
        out.append(
            {
                "ms": ms,
                "results": [
                    [r["evidenceId"], r["source"]["resourcePath"], r["source"].get("page"), r["quote"]]
                    for r in body["results"]
                ],
            }
        )
    return out


def build(manuals: Path, work: Path) -> Path:
    import pymupdf

    ws, out = work / "ws", work / "out"
    if (out / "evidence.sqlite").exists():
        return out / "evidence.sqlite"
    ws.mkdir(parents=True, exist_ok=True)
    for name, (first, last) in MANUALS.items():
        src = pymupdf.open(manuals / name)
        doc = pymupdf.open()
        doc.insert_pdf(src, from_page=first - 1, to_page=min(last, src.page_count) - 1)
        doc.set_toc([])
        doc.save(ws / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mnote_evidence",
            "build",
            str(ws),
            "--out",
            str(out),
            "--no-site",
            "--no-ocr",
        ],
        check=True,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
    )
    return out / "evidence.sqlite"


def terms_of(text: str) -> set[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    return set(WORD.findall(text)) | set(CJK3.findall(text))


def make_queries(db: Path) -> dict:
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT b.block_id, r.source_root_relative_path, b.page, b.text FROM evidence_block_row b "
        "JOIN evidence_resource r USING (resource_id) WHERE b.role = 'body' AND r.status = 'ok' "
        "ORDER BY b.id"
    ).fetchall()
    blocks = [(bid, path, page, text, terms_of(text)) for bid, path, page, text in rows]
    df: dict[str, int] = {}
    for *_, terms in blocks:
        for t in terms:
            df[t] = df.get(t, 0) + 1
    every = [b[4] for b in blocks]
    rnd = random.Random(SEED)
    by_page: dict[tuple, list] = {}
    for b in blocks:
        by_page.setdefault((b[1], b[2]), []).append(b)
    pages = sorted(by_page)
    rnd.shuffle(pages)

    def rare(b, lo=1, hi=RARE):
        return sorted((t for t in b[4] if lo <= df[t] <= hi), key=lambda t: (df[t], t))

    def spanning_set(lo: int, hi: int) -> list[dict]:
        out, wanted = [], dict(PAGE_QUERIES, **{n: HELD_OUT_QUERIES for n in HELD_OUT})
        for key in pages:
            if wanted.get(key[0], 0) <= 0 or len(by_page[key]) < 2:
                continue
            a, b = rnd.sample(by_page[key], 2)
            ta = [t for t in rare(a, lo, hi) if t not in b[4]]
            tb = [t for t in rare(b, lo, hi) if t not in a[4]]
            if not ta or not tb:
                continue
            pair = (ta[0], tb[0])
            if any(pair[0] in s and pair[1] in s for s in every):
                continue
            out.append({"query": f"{pair[0]} {pair[1]}", "path": key[0], "page": key[1]})
            wanted[key[0]] -= 1
        return out

    spanning = spanning_set(1, RARE)
    mid = spanning_set(*MID)
    known = []
    for b in rnd.sample(blocks, len(blocks)):
        if len(known) == KNOWN_ITEMS:
            break
        terms = rare(b)[:3]
        if len(terms) == 3:
            known.append({"query": " ".join(terms), "id": b[0], "path": b[1]})
    phrases = []
    for b in rnd.sample(blocks, len(blocks)):
        if len(phrases) == PHRASES:
            break
        words = re.findall(r"[A-Za-z]{3,}", b[3])
        if len(words) < 6 or re.search(r"[\u4e00-\u9fff]", b[3]):
            continue
        at = rnd.randrange(0, len(words) - 3)
        phrase = " ".join(words[at : at + 3])
        if phrase.lower() not in " ".join(re.findall(r"[A-Za-z]{3,}", b[3])).lower():
            continue
        lows = [w.lower() for w in words[at : at + 3]]
        rivals = [
            x
            for x in blocks
            if all(re.search(rf"\b{w}\b", x[3], re.I) for w in lows) and not _holds(x[3], phrase)
        ]
        if rivals and _holds(b[3], phrase):
            phrases.append({"query": phrase, "id": b[0]})
    return {"spanning": spanning, "mid": mid, "known": known, "phrases": phrases}


def _holds(text: str, phrase: str) -> bool:
    return " ".join(re.findall(r"[A-Za-z]{3,}", text)).lower().find(phrase.lower()) >= 0 and bool(
        re.search(r"\b" + r"\W+".join(map(re.escape, phrase.split())) + r"\b", text, re.I)
    )


def score(qs: dict, answers: list[dict]) -> dict:
    n0, n1, n2 = len(qs["spanning"]), len(qs["mid"]), len(qs["known"])
    span, mid = answers[:n0], answers[n0 : n0 + n1]
    known, phr = answers[n0 + n1 : n0 + n1 + n2], answers[n0 + n1 + n2 :]

    def on_page(q, results):
        return [p == q["path"] and pg == q["page"] for _, p, pg, _ in results]

    found = [any(on_page(q, a["results"])) for q, a in zip(qs["spanning"], span)]
    first = [on_page(q, a["results"])[:1] == [True] for q, a in zip(qs["spanning"], span)]
    mid_found = [any(on_page(q, a["results"])) for q, a in zip(qs["mid"], mid)]
    mid_first = [on_page(q, a["results"])[:1] == [True] for q, a in zip(qs["mid"], mid)]
    held = [q["path"] in HELD_OUT for q in qs["spanning"]]
    mid_held = [q["path"] in HELD_OUT for q in qs["mid"]]
    ranks = [
        next((i + 1 for i, r in enumerate(a["results"]) if _holds(r[3], q["query"])), None)
        for q, a in zip(qs["phrases"], phr)
    ]
    ms = sorted(a["ms"] for a in answers)
    return {
        "page_found_at_10": sum(f for f, h in zip(found, held) if not h),
        "page_queries": sum(not h for h in held),
        "held_out_page_found_at_10": sum(f for f, h in zip(found, held) if h),
        "held_out_page_queries": sum(held),
        "page_found_at_1": sum(f for f, h in zip(first, held) if not h),
        "mid_page_found_at_10": sum(f for f, h in zip(mid_found, mid_held) if not h),
        "mid_page_found_at_1": sum(f for f, h in zip(mid_first, mid_held) if not h),
        "mid_page_queries": sum(not h for h in mid_held),
        "held_out_mid_found_at_10": sum(f for f, h in zip(mid_found, mid_held) if h),
        "held_out_mid_queries": sum(mid_held),
        "known_item_r1": sum(
            bool(a["results"]) and a["results"][0][0] == q["id"] for q, a in zip(qs["known"], known)
        ),
        "known_item_r10": sum(any(r[0] == q["id"] for r in a["results"]) for q, a in zip(qs["known"], known)),
        "known_items": n2,
        "phrase_rank1": sum(r == 1 for r in ranks),
        "phrase_in_top10": sum(r is not None for r in ranks),
        "phrases": len(ranks),
        "phrase_ranks": ranks,
        "latency_ms_median": round(statistics.median(ms), 2),
        "latency_ms_p95": round(ms[int(0.95 * (len(ms) - 1))], 2),
        "page_found": found,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--manuals", type=Path, default=Path("/tmp/h3/manuals"))
    ap.add_argument("--baseline-tree", type=Path, default=Path("/tmp/h3/base-site"))
    ap.add_argument("--work", type=Path, default=REPO / "bench/_work/page_queries")
    ap.add_argument("--answer", nargs=2, metavar=("DB", "QUERIES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.answer:
        print(json.dumps(answer(args.answer[0], json.loads(Path(args.answer[1]).read_text("utf-8")))))
        return
    sys.path.insert(0, str(REPO))
    from bench._util import results_path

    db = build(args.manuals, args.work)
    qs = make_queries(db)
    flat = [q["query"] for part in ("spanning", "mid", "known", "phrases") for q in qs[part]]
    qfile = args.work / "queries.json"
    qfile.write_text(json.dumps(flat, ensure_ascii=False), "utf-8")
    runs = {}
    for name, path in (("baseline", args.baseline_tree), ("ours", REPO)):
        env = dict(os.environ, PYTHONPATH=str(path))
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--answer", str(db), str(qfile)],
            cwd="/tmp",
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        runs[name] = score(qs, json.loads(done.stdout))
    result = {
        "documents": {n: f"pages {a}-{b}" for n, (a, b) in MANUALS.items()},
        "held_out": sorted(HELD_OUT),
        "queries": qs,
        **runs,
    }
    results_path("page_queries.json").write_text(json.dumps(result, ensure_ascii=False, indent=1), "utf-8")
    for name, run in runs.items():  # text, not JSON: the results file above is the bench's
        print(name, {x: y for x, y in run.items() if x not in ("page_found", "phrase_ranks")})


if __name__ == "__main__":
    main()
