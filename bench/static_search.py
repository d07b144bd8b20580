"""Search on a static host, three ways over the same pages, in Chromium on an emulated network.

    python bench/static_search.py [--corpus real|synthetic|both] [--notes 1000 10000] [--no-pagefind]
                                  [--latency-ms 30] [--mbit 10] [--queries 52] [--passages 50]

Corpora (built under bench/_work/static_search/, git-ignored): `real` = content_fixtures/ + the real
documents in tests/real_documents/ (manuals, Word files, a GB2312 Chinese vimtutor), built without OCR;
`synthetic-N` = N generated notes of mixed Chinese/English paragraphs (bench/fts_recall.py's corpus).
Each workspace is built twice with `mnote-evidence build --no-ocr` in a child process (timed):

- **evidence.sqlite** (the baseline): built by the code of the commit before the one that added
  build/render/search_index.py (`bench/_util.py` `before_added`, `baseline_tree`, PYTHONPATH), whose
  pages and `_static/search.js` open the whole `evidence.sqlite` with sql.js-httpvfs (one file, 4 KiB
  range requests);
- **_search/**: built by this checkout, whose box reads `_search/` (term shards, block buckets and text
  fragments, each fetched whole, only those a query needs; build/render/search_index.py) with
  `_static/search_index.js`; its write is also timed alone;
- **Pagefind** (PyPI `pagefind[extended]`, `--force-language zh` so Chinese is segmented) indexes the
  second build's pages (timed); its JS API runs in the same pages.

Network: every browser context gets CDP `Network.emulateNetworkConditions` (latency, down/up
throughput). sql.js-httpvfs (the baseline) and Pagefind fetch from dedicated workers; the emulation covers
them (a worker's 1 MB range read is timed against its floor, `network.worker_check`). Servers:
tests/range_server.py (honours Range, like GitHub Pages / S3 / nginx) for everything; `python -m
http.server` (no ranges: each file fetched whole) for the first query of the baseline and ours (Pagefind
fetches whole files anyway).

Per contender: the first query on a fresh page (new context, empty cache): Enter pressed in the box ->
first result in the list, timed in the page (Pagefind: `search()` and its top 10 results' `data()`, as its
UI needs them), and the bytes and requests of the search machinery (engine: sql.js-httpvfs /
search_index.js and its tokenizer table / pagefind.js and wasm; index: the database's files / Pagefind's
index and fragments) until the network is quiet; then the query set in one warm page, later queries
alone (median, p95: bytes, requests, ms). Queries (`--queries`, seeded): Chinese
substrings of two and four characters, English words and two-word phrases sampled from the indexed text,
plus fixed terms. Agreement: the box's top 10 (ids in order) against `mnote-evidence search`'s handler
(functions/handlers/evidence.py `search`, topK 10) in this process. Known-item recall (`--passages`,
seeded): a body block's own 4-8 consecutive words (a CJK character counts as a word) as the query; a hit
when the block's page (its `openAction` page) is among the top 10 results' pages (and, for ours, the
block itself among the top 10 passages). With `--bucket-rows N`, each synthetic site's `_search/` is also
written with N rows per block bucket (`search_index.BUCKET`, into a hard-linked copy of the site) and
its first queries are timed interleaved with the default's (`bucket_variant`). Results:
bench/results/static_search.json.
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
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import baseline_tree, before_added, results_path
from bench.fts_recall import TERMS, corpus
from mnote_evidence.build.core.defaults import DEFAULT_SEARCH_FILE_MIB
from mnote_evidence.build.core.fsutil import durable_batch
from mnote_evidence.build.core.text import CJK_RUN
from mnote_evidence.build.render import search_index
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import search
from tests.servers import free_port, start, stop

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / "_work" / "static_search"
RESULTS = results_path("static_search.json")
SEARCH_INDEX = (
    "build/render/search_index.py"  # the baseline: the tree before it (the box reads evidence.sqlite)
)
FIXED = ["线程作用域", "吗啉", "线程", "吡咯烷", "retention period", "evidence", "MIME", "libtasn1"]
WORD = re.compile(r"[A-Za-z0-9]+|[\u3400-\u9fff\uf900-\ufaff]")


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


# -- builds --------------------------------------------------------------------------------------------
def cli_build(ws: Path, out: Path, pythonpath: Path) -> tuple[float, dict]:
    """`mnote-evidence build WS --out OUT` of the code on `pythonpath`, in a child process started outside
    the checkout (whose folders would shadow that code): (seconds, its --json report)."""
    cmd = [sys.executable, "-m", "mnote_evidence", "build", str(ws), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    t = time.perf_counter()
    done = subprocess.run(
        [*cmd, "--no-ocr", "-j", "2", "--json"], cwd=WORK, env=env, capture_output=True, text=True, check=True
    )
    return time.perf_counter() - t, json.loads(done.stdout)


def built(label: str, make, **kw) -> tuple[Path, Path, dict]:
    """(baseline site, this checkout's site, build facts), each built once per corpus."""
    base = WORK / label
    info = base / "build.json"
    sites = base / "baseline" / "_site", base / "current" / "_site"
    if info.exists() and all((s / "evidence.sqlite").exists() for s in sites):
        return *sites, json.loads(info.read_text())
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    make(base / "ws", **kw)
    shutil.copytree(base / "ws", base / "ws-baseline")  # the build writes sidecars into its workspace
    baseline = baseline_tree(before_added(SEARCH_INDEX), "static_search")
    baseline_s, _ = cli_build(base / "ws-baseline", sites[0], baseline)
    current_s, report = cli_build(base / "ws", sites[1], REPO)
    db = sites[1] / "evidence.sqlite"
    with tempfile.TemporaryDirectory() as tmp:  # the `_search/` write alone, as the render does it
        t = time.perf_counter()
        with durable_batch():  # its files committed together, as in a build
            search_index.write(Path(tmp), db, int(DEFAULT_SEARCH_FILE_MIB * 2**20))
        write_s = time.perf_counter() - t
    conn = sqlite3.connect(db)
    stats = {
        "blocks": conn.execute("SELECT count(*) FROM evidence_block").fetchone()[0],
        "pages": sum(1 for _ in sites[1].rglob("*.html")),
        "baseline_build_s": round(baseline_s, 1),
        "build_s": round(current_s, 1),
        "search_index_write_s": round(write_s, 2),
        "build_report_search": (report.get("site") or {}).get("search"),
    }
    conn.close()
    info.write_text(json.dumps(stats))
    return *sites, stats


def pagefind_index(site: Path) -> float:
    out = site / "_pagefind"
    stamp = site.parent / "pagefind.seconds"
    if not out.exists() or not stamp.exists():
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, "-m", "pagefind", "--site", str(site), "--output-subdir", "_pagefind"]
        t = time.perf_counter()
        subprocess.run([*cmd, "--force-language", "zh"], check=True, capture_output=True)
        stamp.write_text(str(time.perf_counter() - t))
    return float(stamp.read_text())


def files_of(paths: list[Path]) -> dict:
    sizes = [p.stat().st_size for p in paths]
    return {"files": len(sizes), "bytes": sum(sizes), "largest_file": max(sizes)}


# -- queries -------------------------------------------------------------------------------------------
def body_blocks(db: Path) -> list[tuple[str, str, str]]:
    """(block id, text, its page) of every body block of a parsed file."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT b.block_id, b.text, b.locator_json FROM evidence_block b JOIN evidence_resource r "
            "USING (resource_id) WHERE r.status = 'ok' AND b.role = 'body' ORDER BY b.id"
        ).fetchall()
    finally:
        conn.close()
    return [(b, t, page_of(json.loads(loc)["openAction"]["url"])) for b, t, loc in rows]


def page_of(url: str) -> str:
    return unquote(url.split("#")[0].split("?")[0]).lstrip("/").removeprefix("./")


def queries(texts: list[str], n: int, seed: int = 3) -> list[str]:
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
    return out[:n]


def passages(blocks: list[tuple[str, str, str]], n: int, seed: int = 7) -> list[dict]:
    """`n` known items: a block's own 4-8 consecutive words, the block and its page."""
    rnd = random.Random(seed)
    pool = [b for b in blocks if len(WORD.findall(b[1])) >= 8]
    out = []
    for block_id, text, page in rnd.sample(pool, min(n, len(pool))):
        words = list(WORD.finditer(text))
        k = rnd.randint(4, 8)
        i = rnd.randrange(0, len(words) - k + 1)
        out.append(
            {"query": text[words[i].start() : words[i + k - 1].end()], "block": block_id, "page": page}
        )
    return out


def reference(site: Path, qs: list[str]) -> dict[str, list[str]]:
    ctx = Context(EvidenceDB(site / "evidence.sqlite"))
    return {q: [r["evidenceId"] for r in search({"query": q, "topK": 10}, ctx)["results"]] for q in qs}


# -- Chromium ------------------------------------------------------------------------------------------
def server(site: Path, ranges: bool):
    port = free_port()
    cmd = (
        [sys.executable, "-m", "tests.range_server", str(site), str(port)]
        if ranges
        else [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(site)]
    )
    return start(cmd, f"http://127.0.0.1:{port}/", cwd=REPO), f"http://127.0.0.1:{port}/"


class Net:
    """A browser context on the emulated network, logging every finished request (workers' included)."""

    def __init__(self, browser, net: dict, bypass_csp: bool = False):
        self.ctx = browser.new_context(bypass_csp=bypass_csp)
        self.page = self.ctx.new_page()
        cdp = self.ctx.new_cdp_session(self.page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {"offline": False, **net})
        self.log: list[tuple[str, int]] = []
        self.ctx.on("requestfinished", self._finished)

    def _finished(self, req) -> None:
        size = req.sizes()["responseBodySize"]
        if not size and req.method == "GET" and (resp := req.response()) is not None:  # a worker's script
            size = int(resp.headers.get("content-length", 0))
        self.log.append((req.url, size))

    def quiet(self, ms: int = 500) -> None:
        """Wait until no request has finished for `ms`."""
        while True:
            seen = len(self.log)
            self.page.wait_for_timeout(ms)
            if len(self.log) == seen:
                return

    def close(self) -> None:
        self.ctx.close()


def worker_check(browser, net: dict, base: str, path: str) -> dict:
    """A dedicated worker's 1 MB range read on the emulated network, against its floor."""
    session = Net(browser, net, bypass_csp=True)  # the site's CSP allows no blob: worker
    session.page.goto(base + "index.html")
    js = """async (url) => {
      const src = `(async () => { const t = performance.now();
        const r = await fetch(${JSON.stringify(url)}, {headers: {Range: "bytes=0-999999"},
          cache: "no-store"});
        const n = (await r.arrayBuffer()).byteLength; postMessage([n, performance.now() - t]); })();`;
      const w = new Worker(URL.createObjectURL(new Blob([src], {type: "text/javascript"})));
      return await new Promise(res => { w.onmessage = e => res(e.data); });
    }"""
    got, ms = session.page.evaluate(js, base + path)
    session.close()
    floor = got / net["downloadThroughput"] * 1000 + net["latency"]
    return {"bytes": got, "ms": round(ms), "floor_ms": round(floor), "emulated": ms >= floor * 0.9}


def kind_of(url: str, index: str) -> str | None:
    """'engine', 'index' or None (the page itself) for a request of the search machinery."""
    path = url.split("?")[0]
    if "/_static/vendor/" in path or path.endswith(("/_static/search_index.js", "/_static/search_fold.js")):
        return "engine"
    if "/_pagefind/" in path:
        return "engine" if path.endswith(".js") or "/wasm." in path else "index"
    return "index" if index in path else None


def tally(log: list[tuple[str, int]], index: str) -> dict:
    out = {"engine_bytes": 0, "engine_requests": 0, "index_bytes": 0, "index_requests": 0}
    for url, size in log:
        kind = kind_of(url, index)
        if kind:
            out[f"{kind}_bytes"] += size
            out[f"{kind}_requests"] += 1
    out["bytes"] = out["engine_bytes"] + out["index_bytes"]
    out["requests"] = out["engine_requests"] + out["index_requests"]
    return out


PAGEFIND_JS = """async (q) => {
  if (!window.__pf) { window.__pf = await import('/_pagefind/pagefind.js'); await window.__pf.init(); }
  const r = await window.__pf.search(q);
  const data = await Promise.all(r.results.slice(0, 10).map(x => x.data()));
  return data.map(d => d.url);
}"""
BOX_JS = """async (q) => {
  const r = await window.mnoteEvidence.search(q, [], 10);
  return r.results.slice(0, 10).map(x => [x.evidenceId, x.source.openAction.url]);
}"""


# Timed in the page (performance.now): Playwright's own selector polling runs on the page's main thread
# and would add its CPU to the box's time.
PAGEFIND_TIMED_JS = (
    f"async (q) => {{ const t = performance.now(); await ({PAGEFIND_JS})(q); return performance.now() - t; }}"
)
ENTER_TO_RESULT_JS = """() => { window.__firstResult = new Promise(done => {
  let t0 = null;
  document.querySelector("form.search input").addEventListener("keydown", e => {
    if (e.key === "Enter" && t0 === null) t0 = performance.now();
  }, true);
  new MutationObserver((_, obs) => {
    if (t0 !== null && document.querySelector("#search-results .result")) {
      obs.disconnect();
      done(performance.now() - t0);
    }
  }).observe(document.body, { childList: true, subtree: true });
}); }"""


def first_query(browser, net: dict, base: str, query: str, contender: str) -> dict:
    """A fresh page's first query: ms from Enter (Pagefind: from the call) to the first result, timed in
    the page, and the search machinery's bytes and requests until the network is quiet."""
    session = Net(browser, net, bypass_csp=contender == "pagefind")
    page = session.page
    page.goto(base + "index.html")
    page.wait_for_load_state("load")
    if contender == "pagefind":
        ms = page.evaluate(PAGEFIND_TIMED_JS, query)
    else:
        page.evaluate(ENTER_TO_RESULT_JS)
        page.fill("form.search input", query)
        page.press("form.search input", "Enter")
        ms = page.evaluate("() => window.__firstResult")
    session.quiet()
    out = {"ms": round(ms), **tally(session.log, INDEX[contender])}
    session.close()
    return out


INDEX = {"baseline": "evidence.sqlite", "search_index": "/_search/", "pagefind": "/_pagefind/"}


def warm_queries(browser, net: dict, base: str, qs: list[str], known: list[dict], contender: str, ref):
    """The query set, then the known items, in one page: later queries alone, agreement, recall."""
    session = Net(browser, net, bypass_csp=contender == "pagefind")
    page = session.page
    page.goto(base + "index.html")
    page.wait_for_load_state("load")
    js = PAGEFIND_JS if contender == "pagefind" else BOX_JS
    per, same_order = [], []
    for q in qs:
        before = len(session.log)
        t = time.perf_counter()
        got = page.evaluate(js, q)
        ms = (time.perf_counter() - t) * 1000
        page.wait_for_timeout(30)  # let the request events arrive
        per.append({"ms": ms, **tally(session.log[before:], INDEX[contender])})
        if contender != "pagefind":
            same_order.append([g[0] for g in got] == ref[q])
    page_hits, block_hits = [], []
    for item in known if contender != "baseline" else []:
        got = page.evaluate(js, item["query"])
        pages = [page_of(g if contender == "pagefind" else g[1]) for g in got]
        page_hits.append(item["page"] in pages)
        if contender != "pagefind":
            block_hits.append(item["block"] in [g[0] for g in got])
    session.close()
    later = per[1:]

    def dist(key: str) -> dict:
        xs = sorted(x[key] for x in later)
        return {"median": round(statistics.median(xs), 1), "p95": round(xs[int(len(xs) * 0.95) - 1], 1)}

    out = {
        "queries": len(qs),
        "first_in_page": {k: round(v) for k, v in per[0].items()},
        "later": {k: dist(k) for k in ("bytes", "requests", "ms")},
        "bytes_all_queries": sum(x["bytes"] for x in per),
    }
    if same_order:
        out["same_top10_in_order"] = round(sum(same_order) / len(same_order), 4)
    if page_hits:
        out["known_item_page_in_top10"] = round(sum(page_hits) / len(page_hits), 4)
        out["known_items"] = len(page_hits)
    if block_hits:
        out["known_item_passage_in_top10"] = round(sum(block_hits) / len(block_hits), 4)
    return out


def contender(browser, net, site: Path, name: str, qs, known, ref, cold: int) -> dict:
    out: dict = {}
    proc, base = server(site, True)
    try:
        firsts = [first_query(browser, net, base, qs[i], name) for i in range(cold)]
        out["first_query"] = {
            "runs": firsts,
            "median": {k: statistics.median(f[k] for f in firsts) for k in firsts[0]},
        }
        out["warm"] = warm_queries(browser, net, base, qs, known, name, ref)
    finally:
        stop(proc)
    if name != "pagefind":
        proc, base = server(site, False)
        try:
            out["first_query_no_ranges"] = first_query(browser, net, base, qs[0], name)
        finally:
            stop(proc)
    return out


def bucket_variant(browser, net: dict, site: Path, rows: int, qs: list[str], cold: int) -> dict:
    """First queries over `_search/` written with `rows` rows per bucket against the default, interleaved."""
    alt = site.parent.parent / f"buckets-{rows}"
    shutil.rmtree(alt, ignore_errors=True)
    subprocess.run(["cp", "-al", str(site), str(alt)], check=True)  # the pages shared, `_search/` its own
    shutil.rmtree(alt / "_search")
    default, search_index.BUCKET = search_index.BUCKET, rows
    try:
        search_index.write(alt, alt / "evidence.sqlite", int(DEFAULT_SEARCH_FILE_MIB * 2**20))
    finally:
        search_index.BUCKET = default
    servers = {default: server(site, True), rows: server(alt, True)}
    runs: dict[int, list[dict]] = {default: [], rows: []}
    try:
        for i in range(2 * cold):
            for k in (default, rows) if i % 2 == 0 else (rows, default):
                runs[k].append(first_query(browser, net, servers[k][1], qs[i % cold], "search_index"))
    finally:
        for proc, _ in servers.values():
            stop(proc)
        shutil.rmtree(alt)
    return {
        str(k): {f: statistics.median(r[f] for r in v) for f in ("ms", "bytes", "requests")}
        for k, v in runs.items()
    }


def measure(label: str, sites: tuple[Path, Path], stats: dict, args) -> dict:
    from playwright.sync_api import sync_playwright

    baseline, current = sites
    net = {
        "latency": args.latency_ms,
        "downloadThroughput": args.mbit * 1e6 / 8,
        "uploadThroughput": args.mbit * 1e6 / 8,
    }
    blocks = body_blocks(current / "evidence.sqlite")
    qs = queries([t for _, t, _ in blocks], args.queries)
    known = passages(blocks, args.passages)
    ref = reference(current, qs)
    out = {"corpus": label, **stats, "queries": qs, "known_items": known}
    out["sizes"] = {
        "baseline": files_of([baseline / "evidence.sqlite"]),
        "search_index": files_of(sorted(f for f in (current / "_search").rglob("*") if f.is_file())),
    }
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            proc, base = server(current, True)
            try:
                out["worker_check"] = worker_check(browser, net, base, "evidence.sqlite")
            finally:
                stop(proc)
            out["baseline"] = contender(browser, net, baseline, "baseline", qs, known, ref, args.cold)
            out["search_index"] = contender(browser, net, current, "search_index", qs, known, ref, args.cold)
            if not args.no_pagefind:
                out["pagefind_index_s"] = round(pagefind_index(current), 1)
                out["sizes"]["pagefind"] = files_of(
                    [f for f in (current / "_pagefind").rglob("*") if f.is_file()]
                )
                out["pagefind"] = contender(browser, net, current, "pagefind", qs, known, ref, args.cold)
            if args.bucket_rows and label.startswith("synthetic"):
                out["bucket_variant"] = bucket_variant(browser, net, current, args.bucket_rows, qs, args.cold)
        finally:
            browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", choices=["real", "synthetic", "both"], default="both")
    ap.add_argument("--notes", type=int, nargs="+", default=[1_000, 10_000], help="synthetic sizes")
    ap.add_argument("--no-pagefind", action="store_true")
    ap.add_argument("--latency-ms", type=float, default=30, help="emulated latency per request")
    ap.add_argument("--mbit", type=float, default=10, help="emulated throughput, down and up")
    ap.add_argument("--queries", type=int, default=52, help="queries in the warm page")
    ap.add_argument("--passages", type=int, default=50, help="known items for recall")
    ap.add_argument("--cold", type=int, default=3, help="fresh pages per contender (first query)")
    ap.add_argument(
        "--bucket-rows", type=int, default=0, help="also time first queries with N rows per bucket"
    )
    args = ap.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results = {k: v for k, v in results.items() if k == "network" or "search_index" in v}
    network = {"latency_ms": args.latency_ms, "mbit": args.mbit}
    if results.get("network") != network:
        results = {}  # measured on another network: not comparable
    results["network"] = network
    todo = [("real", real_workspace, {})] + [
        (f"synthetic-{n}", synthetic_workspace, {"notes": n}) for n in args.notes
    ]
    for label, make, kw in todo:
        if args.corpus not in (label.split("-")[0], "both"):
            continue
        baseline, current, stats = built(label, make, **kw)
        results[label] = measure(label, (baseline, current), stats, args)
        summary = {k: v for k, v in results[label].items() if k not in ("queries", "known_items")}
        print(json.dumps(summary, indent=1), flush=True)
        RESULTS.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(REPO))
    main()
