"""Search on a static host: `evidence.sqlite` read by range requests against Pagefind.

    python bench/static_search.py [--corpus real|synthetic|both] [--notes 10000] [--no-pagefind]

Corpora (built under bench/_work/static_search/, git-ignored): `real` = content_fixtures/ + the real
documents in tests/real_documents/ (manuals, Word files, a GB2312 Chinese vimtutor), built without OCR;
`synthetic` = N generated notes of mixed Chinese/English paragraphs (bench/fts_recall.py's corpus).
Queries (>= 50 per corpus, seeded): two-character and longer Chinese substrings, English words and
two-word phrases, sampled from the indexed text, plus fixed terms. Reference: `mnote-evidence search`'s
handler (functions/handlers/evidence.py `search`, topK 10) in this process.

(a) sqlite-range: the site's own search box (search.js + the vendored sql.js-httpvfs) in Chromium against
    tests/range_server.py (a static server that honours Range, like GitHub Pages / S3 / nginx) and
    `python -m http.server` (no ranges: the file is fetched whole). The build is timed with and without
    build/index/layout.py's step, and bytes are measured on both files.
(b) Pagefind (PyPI `pagefind[extended]`, --force-language zh so Chinese is segmented) over the same pages,
    its JS API in Chromium against the same range server. Pagefind returns pages (plus heading anchors),
    not blocks: its recall is counted per document (the reference's top-10 files) and per anchor.
Bytes: what the worker read (sql.js-httpvfs stats) / the resource timing entries (Pagefind), after the
first query and for the tenth alone. Latency: Enter pressed in a fresh page -> first result shown.
Results: bench/results/static_search.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import results_path
from bench.fts_recall import TERMS, corpus
from mnote_evidence.build.core.text import CJK_RUN
from mnote_evidence.build.index import layout
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.pipeline import BuildOptions, build
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import search
from tests.servers import free_port, start, stop

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / "_work" / "static_search"
RESULTS = results_path("static_search.json")
VENDOR = REPO / "site_templates/_static/vendor/sql.js-httpvfs"
FIXED = ["线程作用域", "吗啉", "线程", "吡咯烷", "retention period", "evidence", "MIME", "libtasn1"]


# -- corpora -------------------------------------------------------------------------------------------
def real_workspace(ws: Path) -> None:
    shutil.copytree(REPO / "content_fixtures", ws)
    docs = ws / "Reference"
    docs.mkdir()
    md = ["# Real documents", ""]
    for path in sorted((REPO / "tests/real_documents").rglob("*")):
        if path.suffix.lower() in (".pdf", ".docx", ".png") or path.name == "vimtutor-zh-gb2312.md":
            target = docs / "Real.assets" / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            rel = target.relative_to(docs).as_posix()
            md.append(f"- [{path.name}](<{rel}>)" if path.suffix != ".md" else f"- {path.name}")
    (docs / "Real.md").write_text("\n".join(md) + "\n", "utf-8")
    (docs / "Real.assets/encodings/vimtutor-zh-gb2312.md").rename(docs / "vimtutor-zh-gb2312.md")


def synthetic_workspace(ws: Path, notes: int) -> None:
    texts = corpus(notes * 4, seed=11)
    rnd = random.Random(5)
    for i in range(notes):
        folder = ws / f"f{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        paras = texts[i * 4 : (i + 1) * 4]
        body = [
            f"# Note {i} {paras[0][:12]}",
            "",
            paras[0],
            "",
            f"## Part {rnd.randint(1, 9)}",
            "",
            *paras[1:],
        ]
        (folder / f"note-{i:05d}.md").write_text("\n\n".join(body) + "\n", "utf-8")


def built(name: str, make, **kw) -> tuple[Path, dict]:
    """(site dir, build timings): built once with the layout step off (its cost is timed separately)."""
    base = WORK / name
    site, info = base / "_site", base / "build.json"
    if info.exists() and (site / "evidence.sqlite").exists():
        return site, json.loads(info.read_text())
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    make(base / "ws", **kw)
    real_lay_out, layout.lay_out = layout.lay_out, lambda conn, **kw: None
    try:
        t = time.perf_counter()
        build(base / "ws", BuildOptions(out=site, jobs=2, ocr=OcrSettings(engine="none")))
        build_s = time.perf_counter() - t
    finally:
        layout.lay_out = real_lay_out
    raw = site / "evidence.raw.sqlite"
    shutil.copyfile(site / "evidence.sqlite", raw)
    conn = sqlite3.connect(site / "evidence.sqlite", isolation_level=None)
    t = time.perf_counter()
    layout.lay_out(conn)
    layout_s = time.perf_counter() - t
    conn.close()
    scratch = base / "vacuum.sqlite"  # what a VACUUM (done when a fifth of the file is free) would add
    shutil.copyfile(site / "evidence.sqlite", scratch)
    conn = sqlite3.connect(scratch, isolation_level=None)
    t = time.perf_counter()
    conn.execute("VACUUM")
    vacuum_s = time.perf_counter() - t
    conn.close()
    scratch.unlink()
    stats = {
        "build_s": round(build_s, 1),
        "layout_s": round(layout_s, 2),
        "vacuum_s": round(vacuum_s, 2),
        "db_bytes_raw": raw.stat().st_size,
        "db_bytes": (site / "evidence.sqlite").stat().st_size,
        "blocks": sqlite3.connect(raw).execute("SELECT count(*) FROM evidence_block").fetchone()[0],
        "fts_segments_raw": segments(raw),
        "fts_segments": segments(site / "evidence.sqlite"),
    }
    info.write_text(json.dumps(stats))
    return site, stats


def segments(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:  # one row per b-tree segment in the %_idx table: distinct segids
        return conn.execute("SELECT count(DISTINCT segid) FROM evidence_fts_idx").fetchone()[0]
    finally:
        conn.close()


# -- queries -------------------------------------------------------------------------------------------
def queries(db: Path, n: int = 52, seed: int = 3) -> list[str]:
    conn = sqlite3.connect(db)
    texts = [
        t
        for (t,) in conn.execute(
            "SELECT b.text FROM evidence_block b JOIN evidence_resource r USING "
            "(resource_id) WHERE r.status = 'ok' AND b.role = 'body' ORDER BY b.id"
        )
    ]
    rnd = random.Random(seed)
    runs = [r for t in texts for r in CJK_RUN.findall(t) if len(r) >= 2]
    words = [w for t in texts for w in re.findall(r"[A-Za-z]{4,}", t)]
    pairs = [m.group(0) for t in texts for m in re.finditer(r"\b[A-Za-z]{3,} [A-Za-z]{3,}\b", t)]
    out = [q for q in FIXED if any(q in t for t in texts)]

    def pick(pool, k, cut=None):
        got = 0
        for _ in range(k * 20):
            if got >= k or not pool:
                break
            q = rnd.choice(pool)
            if cut:
                start = rnd.randrange(0, max(1, len(q) - cut + 1))
                q = q[start : start + cut]
            if q not in out:
                out.append(q)
                got += 1

    pick(runs, 12, cut=2)  # two-character terms
    pick(runs, 10, cut=4)
    pick([t for t in TERMS if any(t in x for x in texts)], 4)
    pick(words, 14)
    pick(pairs, max(0, n - len(out)))
    return out


def reference(site: Path, qs: list[str]) -> dict[str, list[dict]]:
    ctx = Context(EvidenceDB(site / "evidence.sqlite"))
    return {q: search({"query": q, "topK": 10}, ctx)["results"] for q in qs}


# -- Chromium ------------------------------------------------------------------------------------------
def server(site: Path, ranges: bool):
    port = free_port()
    cmd = (
        [sys.executable, "-m", "tests.range_server", str(site), str(port)]
        if ranges
        else [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(site)]
    )
    return start(cmd, f"http://127.0.0.1:{port}/", cwd=REPO), f"http://127.0.0.1:{port}/"


def first_result_ms(browser, base: str, query: str) -> float:
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(base + "index.html")
    page.wait_for_load_state("load")
    page.fill("form.search input", query)
    t = time.perf_counter()
    page.press("form.search input", "Enter")
    page.wait_for_selector("#search-results .result", timeout=600_000)
    ms = (time.perf_counter() - t) * 1000
    ctx.close()
    return ms


def run_sqlite(browser, site: Path, qs: list[str], ref: dict, ranges: bool) -> dict:
    proc, base = server(site, ranges)
    try:
        cold = [first_result_ms(browser, base, qs[i]) for i in range(3)]
        ctx = browser.new_context()
        page = ctx.new_page()
        page.goto(base + "index.html")
        page.wait_for_load_state("load")
        fetched, requests, per_query, overlap, top1, order = [], [], [], [], [], []
        for q in qs:
            t = time.perf_counter()
            data = page.evaluate("q => window.mnoteEvidence.search(q, [], 10)", q)
            per_query.append((time.perf_counter() - t) * 1000)
            stats = page.evaluate("window.mnoteEvidence.searchStats()")
            fetched.append(stats["totalFetchedBytes"])
            requests.append(stats["totalRequests"])
            got, want = [r["evidenceId"] for r in data["results"][:10]], [r["evidenceId"] for r in ref[q]]
            overlap.append(len(set(got) & set(want)) / len(want) if want else float(not got))
            top1.append(got[:1] == want[:1])
            order.append(got == want)  # the same passages in the same order
        ctx.close()
    finally:
        stop(proc)
    return {
        "first_result_ms_cold": [round(x) for x in cold],
        "query_ms_median": round(statistics.median(per_query), 1),
        "query_ms_p95": round(sorted(per_query)[int(len(per_query) * 0.95) - 1], 1),
        "db_bytes_after_first_query": fetched[0],
        "db_bytes_tenth_query_alone": fetched[9] - fetched[8],
        "db_bytes_after_all": fetched[-1],
        "requests_first_query": requests[0],
        "requests_tenth_query_alone": requests[9] - requests[8],
        "requests_per_query_median": statistics.median(b - a for a, b in zip(requests, requests[1:])),
        "overlap_top10": round(statistics.mean(overlap), 4),
        "same_top1": round(sum(top1) / len(top1), 4),
        "same_top10_in_order": round(sum(order) / len(order), 4),
        "queries": len(qs),
    }


PAGEFIND_JS = """async ([q, first]) => {
  if (!window.__pf) { window.__pf = await import('/_pagefind/pagefind.js'); await window.__pf.init(); }
  const r = await window.__pf.search(q);
  const data = await Promise.all(r.results.slice(0, 10).map(x => x.data()));
  return {urls: data.map(d => d.url), anchors: data.map(d => (d.sub_results[0] || {}).url || d.url)};
}"""  # Pagefind fetches from its own worker: bytes are counted from the context's finished requests


def run_pagefind(browser, site: Path, qs: list[str], ref: dict) -> dict:
    out = site / "_pagefind"
    if not out.exists():
        t = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pagefind",
                "--site",
                str(site),
                "--output-subdir",
                "_pagefind",
                "--force-language",
                "zh",
            ],
            check=True,
            capture_output=True,
        )
        (site / "_pagefind.time").write_text(str(time.perf_counter() - t))
    index_bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    proc, base = server(site, True)
    try:
        ctx = browser.new_context(bypass_csp=True)
        page = ctx.new_page()
        got = []
        ctx.on(
            "requestfinished",
            lambda req: got.append(req.sizes()["responseBodySize"]) if "/_pagefind/" in req.url else None,
        )
        page.goto(base + "index.html")
        bytes_seen, doc_overlap, doc_top1, anchor_top1, ms = [], [], [], [], []
        for q in qs:
            t = time.perf_counter()
            r = page.evaluate(PAGEFIND_JS, [q, False])
            ms.append((time.perf_counter() - t) * 1000)
            page.wait_for_timeout(50)  # let the request events arrive
            bytes_seen.append(sum(got))
            pages = [u.split("#")[0].lstrip("/") for u in r["urls"]]
            want_docs = list(dict.fromkeys(x["source"]["openAction"]["url"].split("#")[0] for x in ref[q]))
            want_docs = [re.sub("%20", " ", d) for d in want_docs]
            pages = [re.sub("%20", " ", p) for p in pages]
            doc_overlap.append(len(set(pages[:10]) & set(want_docs)) / len(want_docs) if want_docs else 1.0)
            doc_top1.append(pages[:1] == want_docs[:1])
            want = ref[q][0]["source"]["openAction"]["url"] if ref[q] else None
            anchor_top1.append(
                bool(r["anchors"])
                and want is not None
                and r["anchors"][0].lstrip("/").replace("%20", " ") == want.replace("%20", " ")
            )
        ctx.close()
    finally:
        stop(proc)
    return {
        "index_bytes": index_bytes,
        "index_seconds": round(float((site / "_pagefind.time").read_text()), 1),
        "bytes_after_first_query": bytes_seen[0],
        "bytes_tenth_query_alone": bytes_seen[9] - bytes_seen[8],
        "first_query_ms": round(ms[0]),
        "query_ms_median": round(statistics.median(ms), 1),
        "doc_overlap_top10": round(statistics.mean(doc_overlap), 4),
        "same_top1_doc": round(sum(doc_top1) / len(doc_top1), 4),
        "same_top1_anchor": round(sum(anchor_top1) / len(anchor_top1), 4),
    }


def measure(name: str, site: Path, stats: dict, with_pagefind: bool, previous: dict | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    shutil.copytree(
        REPO / "site_templates/_static", site / "_static", dirs_exist_ok=True
    )  # this checkout's box
    qs = queries(site / "evidence.sqlite")
    ref = reference(site, qs)
    engine = sum((VENDOR / f).stat().st_size for f in ("index.js", "sqlite.worker.js", "sql-wasm.wasm"))
    out = {"corpus": name, **stats, "engine_bytes": engine, "queries": qs}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            if previous:
                out = {**previous, "pagefind": run_pagefind(browser, site, qs, ref)}
                return out
            out["sqlite_range_laid_out"] = run_sqlite(browser, site, qs, ref, True)
            laid, raw = site / "evidence.sqlite", site / "evidence.raw.sqlite"
            keep = site / "evidence.laid.sqlite"
            laid.rename(keep)
            shutil.copyfile(raw, laid)
            try:
                out["sqlite_range_as_built_without_layout"] = run_sqlite(browser, site, qs, ref, True)
            finally:
                keep.replace(laid)
            out["sqlite_python_http_server"] = run_sqlite(browser, site, qs[:10], ref, False)
            if with_pagefind:
                out["pagefind"] = run_pagefind(browser, site, qs, ref)
        finally:
            browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", choices=["real", "synthetic", "both"], default="both")
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--no-pagefind", action="store_true")
    ap.add_argument("--pagefind-only", action="store_true", help="re-measure Pagefind, keep the rest")
    args = ap.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    old = json.loads(json.dumps(results))
    todo = {"real": (real_workspace, {}), "synthetic": (synthetic_workspace, {"notes": args.notes})}
    for name, (make, kw) in todo.items():
        if args.corpus not in (name, "both"):
            continue
        label = name if name == "real" else f"synthetic-{args.notes}"
        site, stats = built(label, make, **kw)
        previous = results.get(label) if args.pagefind_only else None
        results[label] = measure(label, site, stats, not args.no_pagefind, previous)
        kept = old.get(label, {}).get("pagefind")
        if args.no_pagefind and kept:
            results[label]["pagefind"] = kept  # measured by an earlier run, same corpus
        print(json.dumps({k: v for k, v in results[label].items() if k != "queries"}, indent=1))
        RESULTS.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(REPO))
    main()
