"""English word forms: the stemmed index (Porter over unicode61) against the same index unstemmed.

    python bench/word_forms.py

Corpora (built without OCR under bench/_work/word_forms/, git-ignored, reused while the package's code is
the same commit):
  manuals  - 7 real PDF manuals: tests/real_documents/manuals/*.pdf (R FAQ, libtasn1, shared-mime-info) and
             Debian's nettle, fontconfig, bzip2 and CRC guide PDFs under /usr/share/doc (gunzipped);
  chinese  - content_fixtures/ (the sample workspace) and tests/real_documents/ocr/gnupg-help-zh_CN.pdf.
Stemmed: the build's own `evidence_fts` (tokenizer build/index/schema.py FTS_TOKENIZE). Baseline, in the
same run: a copy of the database whose `evidence_fts` is rebuilt from the same blocks' segmented text
(build/core/text.py segment_for_index) with the unstemmed tokenizer `unicode61 remove_diacritics 2`,
optimized as the build's layout step optimizes the stemmed one.
English: 32 singular/plural, -ing and -ed pairs, each form queried (build/core/text.py fts_query, every
match) for the other (64 queries). Recall = share of the blocks the unstemmed index finds for the other
form that this form also finds; precision = share of a query's hits whose text holds an inflection of
the same word (the pair's base with -s, -es, -ed, -ing, -d, y/ies, a final e dropped).
Chinese: 20 queries ranked by functions/search/fts.py `rank` (depth 1000) on both indexes: the same block
ids in the same order, the same scores and totals.
Sizes: bytes of the FTS index's pages (dbstat: evidence_fts_data + evidence_fts_idx) and distinct terms
(fts5vocab). Results: bench/results/word_forms.json.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import WORK, code_commit, machine, results_path
from mnote_evidence.build.core.text import fts_query, segment_for_index
from mnote_evidence.build.index.schema import FTS_TOKENIZE
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.pipeline import BuildOptions, build
from mnote_evidence.functions.search.fts import Filters, rank

REPO = Path(__file__).resolve().parent.parent
HERE = WORK / "word_forms"
RESULTS = results_path("word_forms.json")
UNSTEMMED = "unicode61 remove_diacritics 2"
DOC = Path("/usr/share/doc")
DEBIAN_PDFS = [  # (package, file): Debian documentation packages
    ("nettle-dev", "nettle.pdf.gz"),
    ("fontconfig", "fontconfig-user.pdf.gz"),
    ("bzip2", "manual.pdf.gz"),
    ("zlib1g-dev", "crc-doc.1.0.pdf.gz"),
]
PAIRS = [
    *[("constant", "constants"), ("error", "errors"), ("cipher", "ciphers"), ("element", "elements")],
    *[("reference", "references"), ("version", "versions"), ("output", "outputs"), ("number", "numbers")],
    *[("hash", "hashes"), ("match", "matches"), ("alias", "aliases"), ("subclass", "subclasses")],
    *[("library", "libraries"), ("directory", "directories"), ("property", "properties")],
    *[("binary", "binaries"), ("copy", "copies")],
    *[("encrypt", "encrypted"), ("return", "returned"), ("document", "documented"), ("contain", "contained")],
    *[("support", "supported"), ("order", "ordered"), ("call", "called")],
    *[("hash", "hashing"), ("read", "reading"), ("process", "processing"), ("sign", "signing")],
    *[("create", "creating"), ("provide", "providing"), ("decode", "decoding"), ("include", "including")],
]
CHINESE = [
    *[
        "信任网络",
        "密钥",
        "签名",
        "加密",
        "算法",
        "电子邮件地址",
        "用户标识",
        "数字签名算法",
        "私钥",
        "修改注释",
    ],
    *[
        "吗啉",
        "吡咯烷",
        "线程作用域",
        "线程",
        "沸点",
        "研究",
        "杂环化合物",
        "数据",
        "安全方面的专家",
        "日期格式",
    ],
]
WORD = re.compile(r"[A-Za-z]+")


# -- corpora -------------------------------------------------------------------------------------------
def manuals(ws: Path) -> None:
    ws.mkdir(parents=True)
    for pdf in sorted((REPO / "tests/real_documents/manuals").glob("*.pdf")):
        shutil.copy2(pdf, ws / pdf.name)
    for package, name in DEBIAN_PDFS:
        src = DOC / package / name
        if not src.exists():
            raise SystemExit(f"needs {src} (Debian: apt-get install {package})")
        (ws / name.removesuffix(".gz")).write_bytes(gzip.decompress(src.read_bytes()))


def chinese(ws: Path) -> None:
    shutil.copytree(REPO / "content_fixtures", ws)
    shutil.copy2(REPO / "tests/real_documents/ocr/gnupg-help-zh_CN.pdf", ws / "gnupg-help-zh_CN.pdf")


def built(name: str, make) -> tuple[Path, float | None]:
    """(evidence.sqlite, build seconds when built in this run)."""
    base = HERE / name
    db, stamp = base / "_site" / "evidence.sqlite", base / "commit"
    if db.exists() and stamp.exists() and stamp.read_text() == code_commit():
        return db, None
    shutil.rmtree(base, ignore_errors=True)
    make(base / "ws")
    t = time.perf_counter()
    build(base / "ws", BuildOptions(out=base / "_site", jobs=2, ocr=OcrSettings(engine="none")))
    stamp.write_text(code_commit())
    return db, round(time.perf_counter() - t, 1)


def unstemmed_copy(db: Path, dest: Path) -> sqlite3.Connection:
    """A copy of `db` whose evidence_fts is the same index with the unstemmed tokenizer."""
    shutil.copyfile(db, dest)
    conn = sqlite3.connect(dest, isolation_level=None)
    conn.execute("DROP TABLE evidence_fts")
    conn.execute(
        "CREATE VIRTUAL TABLE evidence_fts USING fts5(text, block_id UNINDEXED, content = "
        f"'evidence_block_row', content_rowid = 'id', tokenize = '{UNSTEMMED}')"
    )
    rows = conn.execute("SELECT id, text FROM evidence_block_row ORDER BY id").fetchall()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO evidence_fts (rowid, text, block_id) VALUES (?, ?, '')",
        ((i, segment_for_index(t)) for i, t in rows),
    )
    conn.execute("COMMIT")
    conn.execute("INSERT INTO evidence_fts(evidence_fts) VALUES ('optimize')")
    conn.execute("VACUUM")
    return conn


def tokenizer(conn: sqlite3.Connection) -> str:
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'evidence_fts'").fetchone()[0]
    return re.search(r"tokenize\s*=\s*'([^']*)'", sql).group(1)


def index_size(conn: sqlite3.Connection) -> dict:
    pages = dict(
        conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat WHERE name IN ('evidence_fts_data', 'evidence_fts_idx') "
            "GROUP BY name"
        )
    )
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, 'evidence_fts', 'row')")
    terms = conn.execute("SELECT count(*) FROM temp.v").fetchone()[0]
    conn.execute("DROP TABLE temp.v")
    return {"fts_bytes": sum(pages.values()), "terms": terms, **{f"{k}_bytes": v for k, v in pages.items()}}


# -- English word forms --------------------------------------------------------------------------------
def family(base: str, other: str) -> set[str]:
    forms = {base, other, base + "s", base + "es", base + "ed", base + "ing", base + "d"}
    if base.endswith("e"):
        forms |= {base[:-1] + "ing", base[:-1] + "ed"}
    if base.endswith("y"):
        forms |= {base[:-1] + "ies", base[:-1] + "ied"}
    return forms


def hits(conn: sqlite3.Connection, q: str) -> set[int]:
    return {
        r
        for (r,) in conn.execute("SELECT rowid FROM evidence_fts WHERE evidence_fts MATCH ?", [fts_query(q)])
    }


def word_forms(stemmed: sqlite3.Connection, plain: sqlite3.Connection) -> dict:
    words = {
        i: {w.lower() for w in WORD.findall(t)}
        for i, t in stemmed.execute("SELECT id, text FROM evidence_block_row")
    }
    rows, outside = [], {}
    for a, b in PAIRS:
        forms = family(a, b)
        for q, other in ((a, b), (b, a)):
            target = hits(plain, other)
            got = {"stemmed": hits(stemmed, q), "unstemmed": hits(plain, q)}
            row = {"query": q, "other": other, "other_blocks": len(target)}
            for name, found in got.items():
                related = [i for i in found if words[i] & forms]
                row[name] = {
                    "found_of_other": len(found & target),
                    "hits": len(found),
                    "related": len(related),
                }
            for i in got["stemmed"]:
                if not words[i] & forms:  # what the stem folds in beside the inflections
                    for w in words[i]:
                        if w[:4] == a[:4] and w not in forms:
                            outside.setdefault(a, {}).setdefault(w, 0)
                            outside[a][w] += 1
            rows.append(row)

    def total(name: str, key: str) -> int:
        return sum(r[name][key] for r in rows)

    other = sum(r["other_blocks"] for r in rows)
    summary = {"queries": len(rows), "pairs": len(PAIRS), "other_blocks": other}
    for name in ("stemmed", "unstemmed"):
        found, hit, rel = total(name, "found_of_other"), total(name, "hits"), total(name, "related")
        summary[name] = {
            "recall": round(found / other, 4),
            "found_of_other": found,
            "precision": round(rel / hit, 4) if hit else None,
            "related_hits": rel,
            "hits": hit,
        }
    folded = {a: dict(sorted(c.items(), key=lambda kv: -kv[1])[:4]) for a, c in outside.items()}
    return {"summary": summary, "folded_in_outside_the_inflections": folded, "queries": rows}


# -- Chinese -------------------------------------------------------------------------------------------
def chinese_same(stemmed: sqlite3.Connection, plain: sqlite3.Connection) -> dict:
    rows = []
    for q in CHINESE:
        x, y = (rank(c, q, 1000, 50, Filters()) for c in (stemmed, plain))
        ids = ([h.block_id for h in x.hits], [h.block_id for h in y.hits])
        scores = ([h.score for h in x.hits], [h.score for h in y.hits])
        rows.append(
            {
                "query": q,
                "hits": len(ids[0]),
                "total": [x.total, y.total],
                "same": ids[0] == ids[1] and scores[0] == scores[1] and x.total == y.total,
            }
        )
    return {
        "queries": len(rows),
        "same_ids_order_scores_totals": sum(r["same"] for r in rows),
        "hits_compared": sum(r["hits"] for r in rows),
        "rows": rows,
    }


def main() -> None:
    out: dict = {
        "machine_start": machine(),
        "stemmed_tokenizer": FTS_TOKENIZE,
        "baseline_tokenizer": UNSTEMMED,
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("manuals", manuals), ("chinese", chinese)):
            db, build_s = built(name, make)
            stemmed = sqlite3.connect(db)
            assert tokenizer(stemmed) == FTS_TOKENIZE, tokenizer(stemmed)
            plain = unstemmed_copy(db, Path(tmp) / f"{name}.sqlite")
            files = stemmed.execute("SELECT count(*) FROM evidence_resource WHERE status = 'ok'").fetchone()[
                0
            ]
            blocks = stemmed.execute("SELECT count(*) FROM evidence_block_row").fetchone()[0]
            size = {"stemmed": index_size(stemmed), "unstemmed": index_size(plain)}
            size["stemmed_over_unstemmed"] = round(
                size["stemmed"]["fts_bytes"] / size["unstemmed"]["fts_bytes"], 4
            )
            out[name] = {"files_ok": files, "blocks": blocks, "build_s": build_s, "sizes": size}
            if name == "manuals":
                out[name].update(word_forms(stemmed, plain))
            else:
                out[name].update(chinese_same(stemmed, plain))
            stemmed.close()
            plain.close()
    out["machine_end"] = machine()
    RESULTS.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", "utf-8")
    m, c = out["manuals"], out["chinese"]
    s, u = m["summary"]["stemmed"], m["summary"]["unstemmed"]
    print(
        f"manuals: {m['files_ok']} files, {m['blocks']} blocks, {m['summary']['queries']} queries: recall "
        f"{s['found_of_other']}/{m['summary']['other_blocks']} = {s['recall']:.1%} (unstemmed "
        f"{u['found_of_other']} = {u['recall']:.1%}); precision {s['related_hits']}/{s['hits']} = "
        f"{s['precision']:.1%} (unstemmed {u['related_hits']}/{u['hits']} = {u['precision']:.1%}); FTS bytes "
        f"{m['sizes']['stemmed']['fts_bytes']} vs {m['sizes']['unstemmed']['fts_bytes']}; chinese: "
        f"{c['same_ids_order_scores_totals']}/{c['queries']} the same, FTS bytes "
        f"{c['sizes']['stemmed']['fts_bytes']} vs {c['sizes']['unstemmed']['fts_bytes']}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
