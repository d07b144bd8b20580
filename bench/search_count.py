"""What the search box's count line costs on a static host: bytes and requests of a search alone against
the same search followed by its count.

    python bench/search_count.py [--notes 1000]

Site: N generated notes (bench/scale.py's `make_notes`, the same bytes for the same N), built without OCR
into bench/_work/search_count/ (git-ignored, reused while the package's code is the same commit, with
this checkout's site_templates/_static copied over it), served by tests/range_server.py (a static server
that honours Range, like GitHub Pages / S3 / nginx). In Debian's Chromium (Playwright, `executable_path`),
per query, each in a fresh page:
  search        - `window.mnoteEvidence.search(request)`: what the box asks (topK 20, prefixLast, as typed);
  search+count  - the same search, then `window.mnoteEvidence.countMatches(request, matchMode)`: what
                  search_query.js `staticCount` reads of the index for search_query.js `countQuery`.
Bytes and requests: the index's (`searchStats`: every `_search/` file fetched), the search's and the
count's share. Check: the count the browser gives equals the `countQuery` statement run by Python's
sqlite3 on evidence.sqlite.
Results: bench/results/search_count.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import WORK, code_commit, machine, results_path
from bench.scale import make_notes
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.pipeline import BuildOptions, build
from tests.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.servers import free_port, start, stop

REPO = Path(__file__).resolve().parent.parent
HERE = WORK / "search_count"
RESULTS = results_path("search_count.json")
QUERIES = ["thread", "线程", "policy solvent", "线程作用域", "note 512", "吗啉 retention"]


def site(notes: int) -> tuple[Path, float | None]:
    """The built site (and its build's seconds when it was built in this run)."""
    base = HERE / f"notes-{notes}"
    out, stamp = base / "_site", base / "commit"
    if (out / "evidence.sqlite").exists() and stamp.exists() and stamp.read_text() == code_commit():
        shutil.copytree(REPO / "site_templates/_static", out / "_static", dirs_exist_ok=True)
        return out, None
    shutil.rmtree(base, ignore_errors=True)
    make_notes(base / "ws", notes)
    t = time.perf_counter()
    build(base / "ws", BuildOptions(out=out, jobs=2, ocr=OcrSettings(engine="none")))
    stamp.write_text(code_commit())
    return out, round(time.perf_counter() - t, 1)


def python_count(db: Path, q: dict) -> dict:
    """countQuery's statement (sql, named params) run by Python's sqlite3 on the same file."""
    conn = sqlite3.connect(db)
    try:
        row = conn.execute(q["sql"], q["params"]).fetchone()
    finally:
        conn.close()
    return {"passages": row[0], "files": row[1], "more": row[2] > q["cap"]}


def measure_query(browser, base: str, db: Path, query: str) -> dict:
    request = {"query": query, "topK": 20, "resourceKinds": [], "prefixLast": True}
    row: dict = {"query": query}
    for label in ("search", "search+count"):
        ctx = browser.new_context()
        page = ctx.new_page()
        page.route("**/favicon.*", lambda r: r.fulfill(status=204, body=""))
        page.goto(base + "index.html")
        page.wait_for_load_state("load")
        t = time.perf_counter()
        data = page.evaluate("r => window.mnoteEvidence.search(r)", request)
        search_ms = (time.perf_counter() - t) * 1000
        s1 = page.evaluate("window.mnoteEvidence.searchStats()")
        if label == "search":
            row.update(
                search_bytes=s1["bytes"],
                search_requests=s1["requests"],
                search_ms=round(search_ms),
                results=len(data["results"]),
                total=data["total"],
                total_is_lower_bound=data["totalIsLowerBound"],
                match_mode=data["matchMode"],
            )
        else:
            t = time.perf_counter()
            counted = page.evaluate(
                "([r, mode]) => window.mnoteEvidence.countMatches(r, mode)", [request, data["matchMode"]]
            )
            count_ms = (time.perf_counter() - t) * 1000
            s2 = page.evaluate("window.mnoteEvidence.searchStats()")
            statement = page.evaluate(
                "([r, mode]) => window.mnoteSearchQuery.countQuery(r, mode)", [request, data["matchMode"]]
            )
            row.update(
                with_count_search_bytes=s1["bytes"],
                count_bytes=s2["bytes"] - s1["bytes"],
                count_requests=s2["requests"] - s1["requests"],
                total_bytes=s2["bytes"],
                total_requests=s2["requests"],
                count_ms=round(count_ms, 1),
                counted=counted,
                python_counted=python_count(db, statement),
            )
        ctx.close()
    row["count_matches_python"] = row["counted"] == row["python_counted"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=1000)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    out, build_s = site(args.notes)
    db = out / "evidence.sqlite"
    conn = sqlite3.connect(db)
    blocks = conn.execute("SELECT count(*) FROM evidence_block").fetchone()[0]
    conn.close()
    result: dict = {
        "notes": args.notes,
        "blocks": blocks,
        "db_bytes": db.stat().st_size,
        "build_s": build_s,
        "machine_start": machine(),
        "queries": [],
    }
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    proc = start([sys.executable, "-m", "tests.range_server", str(out), str(port)], base, cwd=REPO)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for q in QUERIES:
                    row = measure_query(browser, base, db, q)
                    result["queries"].append(row)
                    print(json.dumps(row, ensure_ascii=False), file=sys.stderr, flush=True)
            finally:
                browser.close()
    finally:
        stop(proc)
    rows = result["queries"]
    result["summary"] = {
        "queries": len(rows),
        "search_bytes_total": sum(r["search_bytes"] for r in rows),
        "search_requests_total": sum(r["search_requests"] for r in rows),
        "count_bytes_total": sum(r["count_bytes"] for r in rows),
        "count_requests_total": sum(r["count_requests"] for r in rows),
        "count_bytes_max": max(r["count_bytes"] for r in rows),
        "count_requests_max": max(r["count_requests"] for r in rows),
        "queries_with_count_requests": sum(r["count_requests"] > 0 for r in rows),
        "count_matches_python": sum(r["count_matches_python"] for r in rows),
    }
    result["machine_end"] = machine()
    RESULTS.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", "utf-8")
    print(json.dumps(result, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
