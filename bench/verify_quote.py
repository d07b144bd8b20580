"""Verified quotes: what the check costs per citation, and how many real citations it verifies.

    python bench/verify_quote.py [--blocks N] [--samples S] [--skip-truth | --skip-cost]

1. Cost, on an N-block database (default 100,000; bench/query_latency.py's generator: our schema and
   segmentation, synthetic mixed Chinese/English blocks in 1,000 PDF resources, cached in
   bench/_work/), for S sampled blocks, in process, warm, one connection:
   - `quoteCheck`: what every search result and citation pays (functions/search/quote_check.py
     `mark_results` on 10 results, divided by 10: one indexed read for all, the quote matched in the
     block's text);
   - `verify_quote` by blockId, by citationUrl (`…pdf.html#blockId`) and by page URL (`#page-N`), the
     quote there; and by blockId with a quote that is not there (best match from the index's FTS).
   Target: <= 2 ms per citation (p50 and p95 reported, wall and this process's CPU time: the machine
   is shared).
   And the build-time half: the PDF provider's parse CPU time with and without the box check
   (R-exts.pdf, R-intro.pdf when installed, and a committed manual), interleaved, best of 5.
2. Share verified, on the citation-truth workspace (bench/real_workspace.py: Debian manual PDFs,
   python-docx files, the fixtures; 48 questions through the tests' offline lightrag-server): every
   citation's `quoteVerified`, its `diagnostics.quoteCheck`, and `verify_quote` asked independently
   with each citation's `displayQuote` and `citationUrl` (does the handler agree?). Also how many PDF
   blocks the build found with a box that does not hold their words.
Results: bench/results/verify_quote.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import results_path
from bench.query_latency import WORK, make_db
from mnote_evidence.build.core.text import SEGMENTATION_VERSION
from mnote_evidence.build.index.schema import SCHEMA_VERSION
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.verify import verify_quote
from mnote_evidence.functions.search.quote_check import mark_results

HERE = Path(__file__).resolve().parent
RESULT = results_path("verify_quote.json")


def database(blocks: int) -> Path:
    """The generated N-block index, with this code's build_meta (so the handlers accept it)."""
    path = WORK / f"verify-{blocks}-v{SCHEMA_VERSION}.sqlite"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        make_db(path, blocks)
        conn = sqlite3.connect(path)
        meta = {"schema_version": SCHEMA_VERSION, "segmentation_version": SEGMENTATION_VERSION}
        conn.executemany("INSERT OR REPLACE INTO build_meta VALUES (?, ?)", meta.items())
        conn.execute("UPDATE evidence_block_row SET box_holds_text = 1")  # as the PDF provider records it
        valid_ids(conn)
        conn.commit()
        conn.close()
        print(f"generated {path} in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    return path


def valid_ids(conn: sqlite3.Connection) -> None:
    """The generator's ids (`b-000000001234`) in the id alphabet a build uses (`[a-z2-7]`), so a
    citation URL's `#b-…` fragment is read as the block it names, as in a real index."""
    table = str.maketrans("0123456789", "abcdefghij")
    rows = conn.execute("SELECT id, block_id FROM evidence_block_row").fetchall()
    # locators (evidence_block view) and the index's block_id (external content) follow the stored column
    conn.executemany(
        "UPDATE evidence_block_row SET block_id = ? WHERE id = ?",
        [("b-" + bid[2:].translate(table), i) for i, bid in rows],
    )


def quote_of(text: str, rnd: random.Random) -> str:
    """A quote as a citation shows one: a run of the block's text (about 60 characters, at spaces)."""
    words = text.split()
    if len(words) < 4:
        return text
    a = rnd.randrange(0, max(1, len(words) - 3))
    return " ".join(words[a : a + rnd.randint(3, 8)])


def stats(wall: list[float], cpu: list[float]) -> dict:
    def pct(xs: list[float], p: int) -> float:
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000, 3)

    return {
        "n": len(wall),
        "wallMsP50": pct(wall, 50),
        "wallMsP95": pct(wall, 95),
        "cpuMsP50": pct(cpu, 50),
        "cpuMsP95": pct(cpu, 95),
    }


def timed(fn, items, per: int = 1) -> dict:
    wall, cpu = [], []
    for item in items:
        t, c = time.perf_counter(), time.process_time()
        fn(item)
        wall.append((time.perf_counter() - t) / per)
        cpu.append((time.process_time() - c) / per)
    return stats(wall, cpu)


def cost(blocks: int, samples: int) -> dict:
    path = database(blocks)
    ctx = Context(EvidenceDB(path))
    conn = ctx.db.connect()
    total = conn.execute("SELECT count(*) FROM evidence_block").fetchone()[0]
    rnd = random.Random(11)
    picked = [
        conn.execute(
            "SELECT b.block_id, b.text, b.page, r.source_root_relative_path FROM evidence_block b "
            "JOIN evidence_resource r USING (resource_id) WHERE b.id = ?",
            [rnd.randint(1, total)],
        ).fetchone()
        for _ in range(samples)
    ]
    cases = [(bid, quote_of(text, rnd), page, path_) for bid, text, page, path_ in picked]
    ask = lambda req: call(lambda r: verify_quote(r, ctx), req)[1]  # noqa: E731
    for bid, quote, _, _ in cases[:20]:  # warm the page cache, as a served index is
        ask({"quote": quote, "blockId": bid})

    def results(batch):
        mark_results(
            conn, [{"evidenceId": bid, "quote": q, "source": {"precision": "bbox"}} for bid, q, _, _ in batch]
        )

    batches = [cases[i : i + 10] for i in range(0, len(cases), 10)]
    out = {
        "blocks": total,
        "dbMiB": round(path.stat().st_size / 2**20),
        "quoteCheckPerResult": timed(results, batches, per=10),
    }
    verdicts: Counter[str] = Counter()

    def by(field):
        def run(case):
            bid, quote, page, path_ = case
            page_url = path_ + ".html"
            request = {
                "blockId": {"quote": quote, "blockId": bid},
                "citationUrl": {"quote": quote, "citationUrl": f"https://example.org/site/{page_url}#{bid}"},
                "pageUrl": {"quote": quote, "citationUrl": f"{page_url}#page-{page}"},
                "absent": {"quote": quote + " 不存在的句子 zebra", "blockId": bid},
            }[field]
            verdicts[f"{field}:{ask(request)['verdict']}"] += 1

        return run

    for field in ("blockId", "citationUrl", "pageUrl", "absent"):
        out[f"verifyQuote_{field}"] = timed(by(field), cases)
    out["verdicts"] = dict(sorted(verdicts.items()))
    return out


BUILD_PDFS = [
    "/usr/share/R/doc/manual/R-exts.pdf",
    "/usr/share/R/doc/manual/R-intro.pdf",
    "tests/real_documents/manuals/shared-mime-info-spec.pdf",
]


def build_cost(rounds: int = 5) -> dict:
    """The PDF provider's parse with and without the box check, interleaved, best of `rounds` (CPU time)."""
    from mnote_evidence.build.parse.ocr.settings import OcrSettings
    from mnote_evidence.build.parse.providers import pdf as provider
    from mnote_evidence.build.parse.providers.base import ParseInput

    out = {}
    real_check = provider.check_page
    for name in BUILD_PDFS:
        path = Path(name) if Path(name).is_absolute() else HERE.parent / name
        if not path.exists():
            continue
        best = {"with": [], "without": []}
        for _ in range(rounds):
            for label, check in (("with", real_check), ("without", lambda blocks, textpage: None)):
                provider.check_page = check
                c = time.process_time()
                artifact = provider.PdfProvider(OcrSettings(engine="none")).parse(
                    ParseInput(path.parent, path.name, "sha256:bench")
                )
                best[label].append(time.process_time() - c)
        provider.check_page = real_check
        pages, blocks = len(artifact.pages), len(artifact.blocks)
        w, wo = min(best["with"]), min(best["without"])
        out[path.name] = {
            "pages": pages,
            "blocks": blocks,
            "parseCpuSecondsWithout": round(wo, 3),
            "parseCpuSecondsWith": round(w, 3),
            "checkMsPerPage": round((w - wo) * 1000 / pages, 2),
            "overheadPct": round(100 * (w - wo) / wo, 1),
        }
    return out


def truth() -> dict:
    """quoteVerified over the citation-truth bench's citations, and verify_quote's independent answer."""
    from bench.citation_truth import answered_workspace
    from mnote_evidence.functions.citations.mapper import CitationMapper

    with answered_workspace(site=False) as run_:
        out, answers = run_.out, run_.answers
    ctx = Context(EvidenceDB(out / "evidence.sqlite"))
    conn = sqlite3.connect(f"file:{out / 'evidence.sqlite'}?mode=ro", uri=True)
    tally: Counter[str] = Counter()
    failures = []
    for q, data in answers:
        mapper = CitationMapper(conn, q["q"], "")
        for rank, chunk in enumerate(c for c in data.get("chunks") or [] if isinstance(c, dict)):
            c = mapper.citation(chunk, rank)
            if c is None:
                continue
            tally["citations"] += 1
            tally["quoteVerified"] += c["quoteVerified"]
            tally[f"precision:{c['locatorPrecision']}"] += 1
            if not c["quoteVerified"]:
                tally[f"quoteCheck:{c['diagnostics'].get('quoteCheck')}"] += 1
                text = conn.execute(
                    "SELECT text FROM evidence_block WHERE block_id = ?", [c.get("blockId")]
                ).fetchone()
                failures.append(
                    {
                        "sourcePath": c["sourcePath"],
                        "blockId": c.get("blockId"),
                        "reason": c["diagnostics"].get("quoteCheck"),
                        "displayQuote": c["displayQuote"],
                        "blockText": text[0][:600] if text else None,
                    }
                )
            status, answer = call(
                lambda r: verify_quote(r, ctx), {"quote": c["displayQuote"], "citationUrl": c["citationUrl"]}
            )
            tally[f"verifyQuote:{answer['verdict'] if status == 200 else status}"] += 1
            tally["agree"] += (status == 200 and answer["found"]) == c["quoteVerified"]
    boxes = dict(
        conn.execute(
            "SELECT coalesce(box_holds_text, -1), count(*) FROM evidence_block b JOIN "
            "evidence_resource r USING (resource_id) WHERE r.kind = 'pdf' GROUP BY 1"
        )
    )
    n = tally["citations"]
    return {
        "questions": len(answers),
        **dict(sorted(tally.items())),
        "quoteVerifiedPct": round(100 * tally["quoteVerified"] / n, 1) if n else None,
        "handlerAgreesPct": round(100 * tally["agree"] / n, 1) if n else None,
        "pdfBlocksBoxHolds": boxes.get(1, 0),
        "pdfBlocksBoxFails": boxes.get(0, 0),
        "pdfBlocksUnchecked (OCR lines)": boxes.get(-1, 0),
        "notVerifiedSample": failures[:5],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=100_000)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--skip-truth", action="store_true")
    ap.add_argument("--skip-cost", action="store_true")
    args = ap.parse_args()
    result = {} if args.skip_cost else {"cost": cost(args.blocks, args.samples), "buildCost": build_cost()}
    if not args.skip_truth:
        result["citationTruth"] = truth()
    result["medianNote"] = "per call, in process, warm; wall and CPU time of this process (machine shared)"
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if not (args.skip_truth or args.skip_cost):
        RESULT.write_text(text + "\n", "utf-8")
    print(text)


if __name__ == "__main__":
    main()
