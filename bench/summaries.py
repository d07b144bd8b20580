"""The figures bench/run's summary (bench/results/summary.md) quotes from each benchmark's results JSON.

One function per benchmark: results dict in, markdown lines out, each line saying what its ratio compares.
A key a bench no longer writes gives "?" in place of the number (the summary never fails on one bench's
shape); the README's Benchmarks section quotes these lines.
"""

from __future__ import annotations

from typing import Any


def g(d: Any, path: str, default: Any = "?") -> Any:
    """d["a"]["b"]... for path "a.b..." (list indexes as numbers); `default` when anything is missing."""
    for part in path.split("."):
        try:
            d = d[int(part)] if isinstance(d, list) else d[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return default
    return d


def load(d: dict, key: str = "machine_start") -> str:
    m = d.get(key) or {}
    return f"load {g(m, 'loadavg.0')} on {g(m, 'cores')} cores"


def scale(d: dict) -> list[str]:
    rows = d.get("results", [])
    lines = [
        "| notes | tree: commit (last commit changing the package) | full build s | peak RSS MiB (tree PSS) "
        "| CPU s | DB / notes bytes | edit: in build / whole process / CPU s "
        "| no-op: in build / whole process / CPU s | load |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in sorted(rows, key=lambda r: (r["notes"], r["ref"] != "baseline")):
        f, e, n = r["full"], r["edit"], r["noop"]
        lines.append(
            f"| {r['notes']:,} | {r['ref']} {r['commit']}"
            + (f" (code {r['code_commit']})" if r.get("code_commit", r["commit"]) != r["commit"] else "")
            + " |"
            f" {g(f, 'wall_s.min')} | {g(f, 'peak_rss_mb.min')} "
            f"({g(f, 'peak_tree_pss_mb.min')}) | {g(f, 'cpu_s.min')} | {g(r, 'sizes.db_per_notes_byte')}× "
            f"({g(r, 'sizes.db_bytes', 0) / 2**20:.1f} MiB) | {g(e, 'build_s.min')} / {g(e, 'wall_s.min')} / "
            f"{g(e, 'cpu_s.min')} (median {g(e, 'build_s.median')} / {g(e, 'wall_s.median')}) | "
            f"{g(n, 'build_s.min')} / {g(n, 'wall_s.min')} / {g(n, 'cpu_s.min')} "
            f"(median {g(n, 'build_s.median')} / {g(n, 'wall_s.median')}) | "
            f"{g(r, 'machine_start.loadavg.0')}–{g(r, 'machine_end.loadavg.0')} |"
        )
    lines.append("")  # a paragraph, not one more table row
    lines.append(
        "Full build: min wall time of whole `python -m mnote_evidence build` processes (3 rounds up to 1,000 "
        "notes, else 1); edit/no-op: min (median) of 3, `seconds` of the BuildReport / process wall time / "
        "process CPU time (user + system, workers included: what load on the machine does not inflate); "
        "peak RSS: largest process (/usr/bin/time), in brackets the whole process tree's summed PSS "
        "(sampled)."
    )
    return lines


def ratio(a: Any, b: Any) -> Any:
    return round(a / b, 2) if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else "?"


def pdf_provider(d: dict) -> list[str]:
    out = []
    for p in d.get("pdfs", []):
        runs = p["runs"]
        ours = runs["ours (blocks+bbox+sections+sidecar)"]
        raw = next((v for k, v in runs.items() if k.startswith("raw PyMuPDF")), {})
        lite = next((v for k, v in runs.items() if k.startswith("liteparse")), {})
        plumber = runs.get("pdfplumber extract_words()", {})
        nol = runs.get("ours, no-outline path (font-size headings)", {})

        def vs(row: dict, ours: dict = ours) -> str:
            cpu, wall = ratio(ours["cpu_min_s"], row.get("cpu_min_s")), ratio(ours["min_s"], row.get("min_s"))
            return f"{cpu}× CPU ({wall}× wall)"

        out.append(
            f"- {p['pdf'].rsplit('/', 1)[-1]} ({p['pages']:,} pages; {load(p)}): ours {ours['cpu_min_s']} s "
            f"CPU, {ours['min_s']} s wall, peak RSS {p['peak_rss_mb_ours']} MB = **{vs(raw)}** raw "
            f'`get_text("dict")` ({raw.get("cpu_min_s")} s CPU); {vs(lite)} liteparse '
            f"({g(p, 'liteparse_pages_parsed.0')} pages parsed)"
            + (f"; {vs(plumber)} pdfplumber" if plumber else "")
            + f"; no-outline path {ratio(nol.get('cpu_min_s'), raw.get('cpu_min_s'))}× raw CPU"
        )
    out.append(
        "Ratios: our min time / the other's min, same PDF, interleaved rounds in one process; CPU = user + "
        "system of the process (all threads), which load on the machine inflates far less than wall time."
    )
    return out


def site_render(d: dict) -> list[str]:
    im = d.get("page_images", {})

    def cpu(name: str) -> Any:
        return g(im, f"{name}.cpu_min_s")

    full, edit = d.get("full_build", {}), d.get("one_paragraph_edit", {})
    return [
        f"- page images, {d.get('pages')} pages at zoom {d.get('zoom')} ({load(d)}): ours (1 worker) "
        f"{cpu('ours_1_worker')} s CPU = **{ratio(cpu('ours_1_worker'), cpu('raw_in_memory'))}× CPU** "
        f"({d.get('ours_1_worker_vs_raw_in_memory')}× wall) a raw `get_pixmap` + Pillow JPEG loop into "
        f"memory, **{ratio(cpu('ours_1_worker'), cpu('raw_to_files'))}× CPU** "
        f"({d.get('ours_1_worker_vs_raw_to_files')}× wall) the same loop writing files; pages/s (best wall) "
        f"{g(im, 'ours_1_worker.pages_per_s')} with 1 worker, {g(im, 'ours_2_workers.pages_per_s')} with 2 "
        f"(2 workers: {d.get('ours_2_workers_vs_1')}× the wall time, "
        f"{ratio(cpu('ours_2_workers'), cpu('ours_1_worker'))}× the CPU of 1)",
        f"- one-paragraph edit (fixtures + that PDF, with site), edit / full: inside `build()` "
        f"{edit.get('build_s')} / {full.get('build_s')} s = **{d.get('edit_vs_full_percent_in_build')} %**; "
        f"whole process {edit.get('wall_s')} / {full.get('wall_s')} s = "
        f"**{d.get('edit_vs_full_percent_whole_process')} %**; CPU (workers included) {edit.get('cpu_s')} / "
        f"{full.get('cpu_s')} s = {ratio(edit.get('cpu_s'), full.get('cpu_s'))}; "
        f"{edit.get('pages_written')} pages written",
    ]


def docx_provider(d: dict) -> list[str]:
    return [
        f"- {d.get('paragraphs_in_body')} paragraphs ({load(d)}): ours {d.get('ours_s')} s = "
        f"**{d.get('ours_vs_floor')}×** the zipfile + lxml iterparse floor "
        f"({d.get('floor_zipfile_lxml_iterparse_s')} s) in wall time, "
        f"{d.get('ours_vs_floor_cpu')}× in CPU time (min of 7 interleaved rounds); naive python-docx "
        f"{d.get('naive_vs_floor')}×"
    ]


def noop_rebuild(d: dict) -> list[str]:
    return [
        f"- {d.get('resources')} resources, --jobs {d.get('jobs')}: no-op {d.get('noop_rebuild_s')} s vs "
        f"full {d.get('full_build_s')} s = **{d.get('noop_vs_full_percent')} %** (in process, `build()` "
        f"only); one-note edit {d.get('one_note_edit_rebuild_s')} s"
    ]


def fts_recall(d: dict) -> list[str]:
    out = [f"- {d.get('blocks'):,} blocks, SQLite {d.get('sqlite')}:"]
    for name, row in (d.get("designs") or {}).items():
        qs = row.get("queries", {})
        recall = min((q.get("recall", 0) for q in qs.values()), default="?")
        out.append(
            f"  - {name}: index {row.get('index_mib')} MiB, build {row.get('build_s')} s, worst recall "
            f"{recall}"
        )
    return out


def query_latency(d: dict) -> list[str]:
    return [
        f"- {d.get('blocks'):,} blocks ({d.get('db_mib')} MiB): handler CPU p95 {g(d, 'cpu_ms.handler.p95')} "
        f"ms vs raw FTS5 {g(d, 'cpu_ms.raw_fts5.p95')} ms = **{g(d, 'cpu_p95_ratio.handler')}×** (grouped "
        f"{g(d, 'cpu_p95_ratio.handler_grouped')}×); wall p95 ratio handler {g(d, 'p95_ratio.handler')}×, "
        f"HTTP endpoint {g(d, 'p95_ratio.endpoint')}×"
    ]


def mcp_roundtrip(d: dict) -> list[str]:
    return [
        f"- stdio: MCP p50 {g(d, 'stdio.mcp_ms.p50')} ms vs in-process {g(d, 'stdio.in_process_ms.p50')} ms: "
        f"overhead **{g(d, 'stdio.overhead_p50_ms')} ms p50** (load {g(d, 'load_average.0')}); streamable "
        f"HTTP overhead {g(d, 'streamable_http.overhead_p50_ms')} ms"
    ]


def serve_load(d: dict) -> list[str]:
    return [
        f"- {d.get('clients')} clients × {d.get('seconds')} s, {d.get('resources')} resources: "
        f"{d.get('requests')} requests, **{d.get('errors')} errors**, p50 {g(d, 'latency_ms.p50')} ms, p99 "
        f"{g(d, 'latency_ms.p99')} ms; save → searchable {d.get('save_to_searchable_s')} s"
    ]


def ask_startup(d: dict) -> list[str]:
    m, r = d.get("medianMs", {}), d.get("overQueryData", {})
    return [
        f"- `ask --json` (module) {m.get('module')} ms vs warm /query/data {m.get('queryData')} ms = "
        f"**{r.get('module')}×**; baseline {d.get('baselineRef')}: {m.get('baselineModule')} ms = "
        f"{r.get('baselineModule')}× (load {d.get('loadAverage')})"
    ]


def citation_truth(d: dict) -> list[str]:
    o = d.get("ours", {})
    return [
        f"- {d.get('questions')} questions, {o.get('citations')} citations: quotes in block "
        f"{o.get('quoteFullyInBlockPct')} %, blocks in chunk {o.get('blockInChunkPct')} %, regions "
        f"{o.get('regionsInChunkPct')} %, boxes {o.get('boxesHoldTextPct')} %; mapping CPU median "
        f"{o.get('mappingCpuMsMedian')} ms (p95 {o.get('mappingCpuMsP95')}) vs baseline "
        f"{g(d, 'baseline.mappingCpuMsMedian')} ms"
    ]


def citation_truth_unseen(d: dict) -> list[str]:
    o, b = d.get("ours", {}), d.get("baseline", {})
    return [
        f"- {d.get('questions')} unseen questions, {o.get('withBlock')} citations with a block: "
        f"blocks in chunk {o.get('blockInChunkPct')} % (baseline {b.get('blockInChunkPct')} %), "
        f"precision held {o.get('precisionHeldPct')} % (baseline {b.get('precisionHeldPct')} %), "
        f"boxes {o.get('boxesHoldTextPct')} %"
    ]


def furniture(d: dict) -> list[str]:
    lines = []
    for label, key in (("tuned", "tuned"), ("held out", "heldOutTotal")):
        b, o = d.get(key, {}).get("baseline", {}), d.get(key, {}).get("ours", {})
        lines.append(
            f"- {label}: detected running lines and page numbers labelled furniture "
            f"{b.get('labelled')}/{b.get('detected')} baseline → "
            f"**{o.get('labelled')}/{o.get('detected')}**; "
            f"hand-checked body lines labelled furniture "
            f"{b.get('bodyLabelledFurniture')}/{b.get('bodySample')} "
            f"→ **{o.get('bodyLabelledFurniture')}/{o.get('bodySample')}**"
        )
    lines.append(
        f"- {d.get('queries')} title-like queries: furniture in the top 10 "
        f"{g(d, 'meanFurnitureShareTop10Pct.includeFurniture')} % with includeFurniture → "
        f"**{g(d, 'meanFurnitureShareTop10Pct.default')} %** by default"
    )
    return lines


def ocr_truth(d: dict) -> list[str]:
    return [
        f"- {name}: English word recall min {row.get('en_word_recall_min')}, Chinese character recall min "
        f"{row.get('zh_char_recall_min')}"
        for name, row in (d.get("summary") or {}).items()
    ]


def ocr_engines(d: dict) -> list[str]:
    out = [
        f"- {e['engine']} on {e['image']}: {e['seconds']} s, similarity {e['similarity']}"
        for e in d.get("engines", [])
    ]
    return out + [
        f"- OCR cache: rebuild {g(d, 'cache.rebuild_with_ocr_cache_s')} s vs first build "
        f"{g(d, 'cache.first_build_s')} s"
    ]


def verify_quote(d: dict) -> list[str]:
    c = d.get("cost", {})
    return [
        f"- {c.get('blocks')} blocks: quote check per result p50 {g(c, 'quoteCheckPerResult.cpuMsP50')} ms "
        f"CPU; verify_quote by blockId p95 {g(c, 'verifyQuote_blockId.wallMsP95')} ms; citations verified "
        f"{g(d, 'citationTruth.agree')}"
    ]


def page_image_formats(d: Any) -> list[str]:
    rows = d if isinstance(d, list) else d.get("rows", [])
    return [
        f"- {r.get('format')} zoom {r.get('zoom')}: {r.get('pages_per_s')} pages/s, {r.get('kb_per_page')} "
        f"KB/page, 7 pt x-height {r.get('x_height_px_7pt')} px"
        for r in rows
        if isinstance(r, dict)
    ]


def static_search(d: dict) -> list[str]:
    """bench/static_search.py: per corpus and contender (the baseline's whole evidence.sqlite, `_search/`,
    Pagefind), the index, the first query on a fresh page and the later queries, on the emulated network."""
    out = [f"- network: {g(d, 'network.latency_ms')} ms, {g(d, 'network.mbit')} Mbit/s"]
    for label, row in d.items():
        if not (isinstance(row, dict) and "corpus" in row):
            continue
        out.append(f"- {label}: {row.get('blocks')} blocks, {row.get('pages')} pages")
        for name in ("baseline", "search_index", "pagefind"):
            if name not in row:
                continue
            out.append(
                f"  - {name}: index {g(row, f'sizes.{name}.bytes')} bytes in {g(row, f'sizes.{name}.files')} "
                f"files (largest {g(row, f'sizes.{name}.largest_file')}); first query "
                f"{g(row, f'{name}.first_query.median.bytes')} bytes, "
                f"{g(row, f'{name}.first_query.median.requests')} requests, "
                f"{g(row, f'{name}.first_query.median.ms')} ms; later median "
                f"{g(row, f'{name}.warm.later.bytes.median')} bytes, "
                f"{g(row, f'{name}.warm.later.ms.median')} ms; "
                f"same top 10 as the API {g(row, f'{name}.warm.same_top10_in_order')}; known item's page "
                f"{g(row, f'{name}.warm.known_item_page_in_top10')}"
            )
        for rows, first in (row.get("bucket_variant") or {}).items():
            out.append(
                f"  - `_search/` with {rows} rows per bucket: first query {first.get('bytes')} bytes, "
                f"{first.get('requests')} requests, {first.get('ms')} ms (interleaved)"
            )
    return out


def search_count(d: dict) -> list[str]:
    """bench/search_count.py: bytes and requests of the box's count after its search, static range host."""
    out = [
        f"- {d.get('notes')} notes ({d.get('blocks')} blocks, db {d.get('db_bytes')} bytes), "
        f"{g(d, 'summary.queries')} queries: the count read {g(d, 'summary.count_bytes_total')} bytes in "
        f"{g(d, 'summary.count_requests_total')} requests after searches that read "
        f"{g(d, 'summary.search_bytes_total')} bytes in {g(d, 'summary.search_requests_total')}; the same "
        f"counts as Python's sqlite3 for {g(d, 'summary.count_matches_python')}"
    ]
    for r in d.get("queries", []):
        out.append(
            f"  - `{r.get('query')}`: search {r.get('search_bytes')} bytes / {r.get('search_requests')} "
            f"requests; count +{r.get('count_bytes')} bytes / +{r.get('count_requests')} requests, "
            f"{r.get('count_ms')} ms"
        )
    return out


def word_forms(d: dict) -> list[str]:
    """bench/word_forms.py: the stemmed index against the same blocks unstemmed (in-run baseline)."""
    m, s, u = d.get("manuals", {}), g(d, "manuals.summary.stemmed", {}), g(d, "manuals.summary.unstemmed", {})
    return [
        f"- {m.get('files_ok')} manuals, {m.get('blocks')} blocks, {g(m, 'summary.queries')} queries: recall "
        f"{g(s, 'found_of_other')}/{g(m, 'summary.other_blocks')} = {g(s, 'recall')} (unstemmed "
        f"{g(u, 'recall')}); precision {g(s, 'related_hits')}/{g(s, 'hits')} = {g(s, 'precision')}",
        f"- FTS bytes {g(m, 'sizes.stemmed.fts_bytes')} stemmed vs {g(m, 'sizes.unstemmed.fts_bytes')} "
        f"unstemmed; Chinese: {g(d, 'chinese.same_ids_order_scores_totals')}/{g(d, 'chinese.queries')} "
        "queries the same ids, order, scores and totals",
    ]


def page_queries(d: dict) -> list[str]:
    """bench/page_queries.py: page-spanning, known-item and phrase queries, this tree and the baseline's."""
    out = []
    for name in ("baseline", "ours"):
        r = d.get(name, {})
        out.append(
            f"- {name}: page-spanning found@10 {r.get('page_found_at_10')}/{r.get('page_queries')} (rare), "
            f"{r.get('mid_page_found_at_10')}/{r.get('mid_page_queries')} (4-30 blocks), held out "
            f"{r.get('held_out_mid_found_at_10')}/{r.get('held_out_mid_queries')}; known-item R@1 "
            f"{r.get('known_item_r1')}/{r.get('known_items')}, R@10 {r.get('known_item_r10')}; phrase 1st "
            f"{r.get('phrase_rank1')}/{r.get('phrases')}; {r.get('latency_ms_median')} ms median, "
            f"{r.get('latency_ms_p95')} ms p95"
        )
    return out


def sections(d: dict) -> list[str]:
    """bench/sections.py: body blocks in their outline entry's section, and code taken for headings."""
    out = []
    for part in ("tuned", "heldOutTotal"):
        base, ours = g(d, f"{part}.baseline", {}), g(d, f"{part}.ours", {})
        out.append(
            f"- {part}: right section {base.get('rightSection')}/{base.get('bodyBlocks')} → "
            f"**{ours.get('rightSection')}/{ours.get('bodyBlocks')}**; code sections (no outline) "
            f"{base.get('codeSections')}/{base.get('sections')} → "
            f"{ours.get('codeSections')}/{ours.get('sections')}"
        )
    return out + [f"- held out: {', '.join(p.rsplit('/', 1)[-1] for p in d.get('heldOut', []))}"]


def startup(d: dict) -> list[str]:
    """bench/startup.py: per command, wall and CPU ms (min of the rounds), this tree and the
    baseline ref's."""
    cur, base = d.get("current", {}), d.get("baseline", {})
    out = [
        f"- `python -c pass`: {g(d, 'bare.wallMs')} ms wall, {g(d, 'bare.cpuMs')} ms CPU "
        f"(load {d.get('loadAverage')}, {d.get('rounds')} rounds, entry `{d.get('entry')}`)"
    ]
    for name, row in cur.items():
        line = f"- `{name}`: {row.get('wallMs')} ms wall, {row.get('cpuMs')} ms CPU"
        if name in base:
            line += (
                f"; {d.get('baselineRef')}: {g(base, name + '.wallMs')} ms wall, "
                f"{g(base, name + '.cpuMs')} ms CPU"
            )
        out.append(line)
    return out


def engines(d: Any) -> list[str]:
    """bench/engines.py: per engine, cost per task and memory against the local pool, same run."""
    out = []
    for name, e in d.get("engines", {}).items():
        if "parse_per_task_ms" not in e:
            out.append(f"- {name}: not measured ({' '.join(e.get('missing_or_failed', []))[:120]})")
            continue
        mem = e.get("memory_mb", {})
        line = (
            f"- {name}: {e['parse_per_task_ms']} ms per parse task ({d.get('tasks')} in flight, 2 workers), "
            f"{e['parse_round_trip_ms']} ms round trip, start-up {e['startup_s']} s, "
            f"coordinator {mem.get('coordinator')} MB, workers {mem.get('per_worker')} MB"
        )
        if "install" in e:
            line += f", install {e['install']['mb']} MB"
        out.append(line)
    return out


def executor(d: Any) -> list[str]:
    """bench/executor.py: the same workspace on the local pool and on Dask, 2 workers each."""
    return [
        f"- {d.get('resources_parsed')} resources: best wall {d.get('best_wall_s')} s; overhead "
        f"{d.get('overhead_per_resource_ms')} ms per resource (target {d.get('target_ms')}); outputs "
        f"identical: {d.get('outputs_identical')}; coordinator outside parse: "
        f"{d.get('coordinator_outside_parse_share')}"
    ]


def generic(d: Any) -> list[str]:
    """Top-level numbers and strings of a results file whose shape has no summary of its own
    (e.g. startup)."""
    if not isinstance(d, dict):
        return [f"- {str(d)[:300]}"]
    return [
        f"- {k}: {v}" for k, v in d.items() if isinstance(v, (int, float, str)) and not k.startswith("_")
    ][:20]


SUMMARIES = {
    fn.__name__: fn
    for fn in (
        scale,
        pdf_provider,
        site_render,
        docx_provider,
        noop_rebuild,
        fts_recall,
        query_latency,
        mcp_roundtrip,
        serve_load,
        ask_startup,
        citation_truth,
        citation_truth_unseen,
        furniture,
        ocr_truth,
        ocr_engines,
        verify_quote,
        engines,
        executor,
        page_image_formats,
        static_search,
        search_count,
        word_forms,
        sections,
        page_queries,
        startup,
    )
}
