"""Why the FTS column holds CJK bigrams: recall, size and speed against the stock tokenizers.

    python bench/fts_recall.py [--blocks N]

A synthetic corpus of mixed Chinese/English blocks (Chinese drawn from real
domain terms, so terms sit inside longer runs as they do in notes). Ground
truth for each query = blocks whose text contains it (Python substring
test, English case-insensitively as whole words). Designs, same rows:
  unicode61   - stock tokenizer on raw text (a CJK run is one token)
  trigram     - stock trigram tokenizer, MATCH with the query as a phrase
  bigram      - ours: build.text.segment_for_index + build.text.fts_query
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import median_ms
from mnote_evidence.build.core.text import fts_query, segment_for_index

TERMS = [
    "线程作用域",
    "线程",
    "作用域",
    "吗啉",
    "吡咯烷",
    "N-甲基吡咯烷酮",
    "三乙基硅",
    "三甲基硅",
    "证据",
    "引用",
    "页码",
    "溶剂",
    "并发",
    "借用检查",
    "生命周期",
    "所有权",
    "索引",
    "全文检索",
    "分词",
    "缓存",
]
FILLER = "的了是在和有这个我们可以进行使用通过对于一种以及其中如果因为所以但是已经"
WORDS = [
    "thread",
    "scope",
    "evidence",
    "citation",
    "page",
    "index",
    "solvent",
    "borrow",
    "cache",
    "token",
    "the",
    "and",
    "of",
    "retention",
    "policy",
    "audit",
]
QUERIES = ["线程作用域", "吗啉", "线程", "吡咯烷", "借用检查", "citation", "retention policy"]


def paragraphs(seed: int = 7) -> Iterator[str]:
    """An endless, seeded stream of mixed Chinese/English blocks (bench/scale.py's notes are made of it
    too)."""
    rnd = random.Random(seed)
    while True:
        parts = []
        for _ in range(rnd.randint(3, 9)):
            if rnd.random() < 0.6:
                run = "".join(rnd.choice(FILLER) for _ in range(rnd.randint(0, 4)))
                run += rnd.choice(TERMS) if rnd.random() < 0.5 else ""
                run += "".join(rnd.choice(FILLER) for _ in range(rnd.randint(0, 4)))
                parts.append(run)
            else:
                parts.append(" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 5))))
        yield "，".join(p for p in parts if p) or "空"


def corpus(n: int, seed: int = 7) -> list[str]:
    return list(itertools.islice(paragraphs(seed), n))


def truth(texts: list[str], q: str) -> set[int]:
    if re.search(r"[a-z]", q):
        words = [re.compile(rf"\b{w}\b", re.I) for w in q.split()]
        return {i for i, t in enumerate(texts) if all(w.search(t) for w in words)}
    return {i for i, t in enumerate(texts) if q in t}


DESIGNS = {
    "unicode61": ("unicode61", lambda t: t, lambda q: " AND ".join(f'"{w}"' for w in q.split())),
    "trigram": ("trigram", lambda t: t, lambda q: " AND ".join(f'"{w}"' for w in q.split())),
    "bigram (ours)": ("unicode61 remove_diacritics 2", segment_for_index, fts_query),
}


def run_design(name: str, texts: list[str], workdir: Path) -> dict:
    tokenizer, prep, query = DESIGNS[name]
    path = workdir / f"{name.split()[0]}.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{tokenizer}')")
    t0 = time.perf_counter()
    conn.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", ((i, prep(x)) for i, x in enumerate(texts)))
    conn.commit()
    build_s = time.perf_counter() - t0
    result = {
        "index_mib": round(os.path.getsize(path) / 2**20, 1),
        "build_s": round(build_s, 2),
        "queries": {},
    }
    for q in QUERIES:
        expected = truth(texts, q)
        try:
            found = {r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", [query(q)])}
        except sqlite3.OperationalError:  # e.g. trigram cannot match a 2-character term
            found = set()
        samples = []
        for _ in range(5):  # what a search does: the 10 best by bm25
            t = time.perf_counter()
            conn.execute(
                "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10", [query(q)]
            ).fetchall()
            samples.append(time.perf_counter() - t)
        result["queries"][q] = {
            "recall": round(len(found & expected) / max(len(expected), 1), 3),
            "precision": round(len(found & expected) / max(len(found), 1), 3),
            "top10_median_ms": round(median_ms(samples), 1),
            "relevant": len(expected),
        }
    conn.close()
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=200_000)
    args = ap.parse_args()
    texts = corpus(args.blocks)
    with tempfile.TemporaryDirectory() as tmp:
        out = {
            "blocks": args.blocks,
            "sqlite": sqlite3.sqlite_version,
            "designs": {name: run_design(name, texts, Path(tmp)) for name in DESIGNS},
        }
    print(json.dumps(out, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
