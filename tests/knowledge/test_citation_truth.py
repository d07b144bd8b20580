"""Citation truth on real documents (tests/real_documents/) through a real lightrag-server (SPEC §10).

Debian documentation PDFs, python-docx's own test files and a rendered scan, built and ingested
into their own offline lightrag-server; the `suite` questions of questions.json asked through
`knowledge.query`; every citation validated against schemas/citation.schema.json and checked by
tests/knowledge/truth.py against the sidecars on disk and PyMuPDF's text under each box.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import unicodedata

import pytest

from mnote_evidence.build.knowledge.ingest import source_name
from mnote_evidence.build.knowledge.lightrag import LightRag as Client
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.citations.block_choice import choose, meaning_terms
from mnote_evidence.functions.citations.mapper import CitationMapper
from mnote_evidence.functions.core.cleaning import clean_text
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.evidence import Context
from mnote_evidence.functions.handlers.knowledge import query
from tests.conftest import REPO, connect, run_build
from tests.knowledge.harness import LightRag
from tests.knowledge.truth import Tally, check

REAL = REPO / "tests" / "real_documents"
QUESTIONS = [
    q for q in json.loads((REAL / "questions.json").read_text("utf-8"))["questions"] if q["set"] == "suite"
]
MIME_SPEC = "manuals/shared-mime-info-spec.pdf"


@pytest.fixture(scope="module")
def real_site(tmp_path_factory):
    base = tmp_path_factory.mktemp("real")
    root = base / "ws"
    for sub in ("manuals", "python-docx", "scans"):
        shutil.copytree(REAL / sub, root / sub)
    server = LightRag(base / "lightrag")
    server.start()
    try:
        report = run_build(root, base / "out", lightrag=LightRagConfig(server.url, timeout=120))
        assert report.knowledge["error"] is None and report.knowledge["failed"] == 0
        yield root, base / "out", server
    finally:
        server.close()


@pytest.fixture(scope="module")
def answers(real_site):
    """(question, knowledge.query response, full chunk texts by id) for every suite question."""
    root, out, server = real_site
    ctx = Context(EvidenceDB(out / "evidence.sqlite"), "", LightRagConfig(server.url, timeout=60))
    got = []
    with Client(LightRagConfig(server.url, timeout=60)) as client:
        for q in QUESTIONS:
            result = query({"query": q["q"], "mode": "naive", "topK": 10}, ctx)
            chunks = {c["chunk_id"]: c["content"] for c in client.query_data(q["q"], "naive", 10)["chunks"]}
            got.append((q, result, chunks))
    return got


def test_ingested_text_is_kept_and_block_ranges_index_it(real_site):
    root, out, _ = real_site
    conn = connect(out)
    kept = {r[0]: r[1] for r in conn.execute("SELECT source_root_relative_path, text FROM knowledge_text")}
    assert set(kept) == {
        r[0]
        for r in conn.execute(
            "SELECT source_root_relative_path FROM knowledge_source WHERE status = 'processed'"
        )
    }
    text = kept[MIME_SPEC]
    parsed = (root / ".mnote/sidecars" / (MIME_SPEC + ".parse.md")).read_text("utf-8")
    assert len(text) == len(parsed)  # furniture is blanked, never cut: offsets stay the parse's
    rows = conn.execute(
        "SELECT b.text, b.char_range_json, b.role FROM evidence_block b JOIN evidence_resource r "
        "USING (resource_id) WHERE r.source_root_relative_path = ?",
        [MIME_SPEC],
    ).fetchall()
    body = [(t, cr) for t, cr, role in rows if role == "body"]
    furniture = [json.loads(cr) for _, cr, role in rows if role == "furniture"]
    assert body and all(text.__getitem__(slice(*json.loads(cr))) == t for t, cr in body)
    assert len(furniture) >= 30 and all(not text[a:b].strip() for a, b in furniture)  # headers never sent
    assert all(parsed[a:b].strip() for a, b in furniture)


def test_citations_on_real_documents_are_true(real_site, answers, validate):
    root, out, _ = real_site
    conn = connect(out)
    tally, cache, pdfs = Tally(), {}, {}
    kinds = set()
    for _question, result, chunks in answers:
        assert result["ok"], result
        for c in result["citations"]:
            validate("citation.schema.json", c)
            kinds.add(c["resourceKind"])
        check(root, conn, result["citations"], chunks, tally, cache, pdfs)
    rates = tally.rates()
    print("citation truth:", json.dumps(rates))  # shown with -s (docs/performance.md quotes the bench's)
    assert len(QUESTIONS) >= 15 and tally.with_block >= 60, rates
    assert kinds >= {"pdf", "office"}, kinds
    assert rates["chunksLocatedPct"] == 100.0, rates
    assert rates["quoteFullyInBlockPct"] >= 95 and rates["blockInChunkPct"] >= 98, (rates, tally.failures[:5])
    assert rates["regionsInChunkPct"] >= 95 and rates["boxesHoldTextPct"] == 100.0, (
        rates,
        tally.failures[:5],
    )
    assert rates["quotesWithPageMarkers"] == 0 and tally.boxes >= 40
    assert rates["furnitureCited"] == 0, rates


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def test_where_the_chunk_holds_the_fact_the_citation_opens_it(real_site, answers):
    _, out, _ = real_site
    conn = connect(out)
    asked = hits = 0
    for q, result, chunks in answers:
        fact = _norm(q["fact"])
        cited = [
            c
            for c in result["citations"]
            if "blockId" in c and fact in _norm(chunks.get(c["diagnostics"]["chunkId"], ""))
        ]
        if not cited:
            continue
        asked += 1
        texts = [
            conn.execute("SELECT text FROM evidence_block WHERE block_id = ?", [c["blockId"]]).fetchone()[0]
            for c in cited
        ]
        hits += any(fact in _norm(t) for t in texts)
    assert asked >= 5 and hits >= asked - 1, (hits, asked)


def test_the_quote_shown_is_the_cited_block_and_stopwords_never_decide(answers):
    for q, result, _ in answers:
        terms = {t.text for t in meaning_terms(q["q"])}
        for c in result["citations"]:
            if c["quoteSource"] == "sidecar":
                assert c["quoteVerified"] is True
                assert c["searchQuery"] in terms or c["diagnostics"]["blockMatch"] == "position", c[
                    "searchQuery"
                ]
            assert "<!--" not in c["displayQuote"]


def test_a_chunk_not_in_the_ingested_text_is_cited_at_file_precision(real_site):
    _, out, _ = real_site
    conn = sqlite3.connect(f"file:{out / 'evidence.sqlite'}?mode=ro", uri=True)
    chunk = {
        "file_path": source_name(MIME_SPEC),
        "chunk_id": "x-chunk-000",
        "content": "The default weight value is 50, and the maximum is 100. (reworded since ingest)",
    }
    c = CitationMapper(conn, "default glob weight", "").citation(chunk, 0)
    assert c["locatorPrecision"] == "file" and c["quoteVerified"] is False and "blockId" not in c
    assert c["diagnostics"]["blockMatch"] == "unlocated" and "bbox" not in c and "regions" not in c


def test_an_identical_passage_elsewhere_is_not_cited(real_site):
    """The chunk is located by offset: of two identical copies, only the one inside the chunk's span is
    cited."""
    root, out, _ = real_site
    conn = sqlite3.connect(f"file:{out / 'evidence.sqlite'}?mode=ro", uri=True)
    text = conn.execute(
        "SELECT text FROM knowledge_text WHERE source_root_relative_path = ?", [MIME_SPEC]
    ).fetchone()[0]
    rows = conn.execute(
        "SELECT b.block_id, b.text, b.char_range_json FROM evidence_block b JOIN evidence_resource r "
        "USING (resource_id) WHERE r.source_root_relative_path = ? AND b.role = 'body' "
        "ORDER BY b.ordinal",
        [MIME_SPEC],
    ).fetchall()
    seen: dict[str, list] = {}
    for bid, t, cr in rows:
        if len(t) > 15:
            seen.setdefault(t, []).append((bid, json.loads(cr)))
    repeated = [copies for copies in seen.values() if len(copies) > 1]
    assert repeated, "the spec repeats some passages (its running header is furniture, never cited)"
    bid, (a, b) = repeated[0][-1]
    chunk = {"file_path": source_name(MIME_SPEC), "chunk_id": "c", "content": text[a - 300 : b + 300]}
    term = max(meaning_terms(text[a:b]), key=lambda t: len(t.text)).text
    c = CitationMapper(conn, term, "").citation(chunk, 0)
    start, end = c["diagnostics"]["chunkSpan"]
    assert a - 300 <= start <= a and b <= end <= b + 300
    cited = json.loads(
        conn.execute(
            "SELECT char_range_json FROM evidence_block WHERE block_id = ?", [c["blockId"]]
        ).fetchone()[0]
    )
    assert cited[0] < end and cited[1] > start
    assert c["blockId"] not in [other for other, _ in repeated[0][:-1]]


def test_a_chunk_across_a_running_header_never_cites_or_highlights_it(real_site):
    """Page furniture is blanked in the ingested text and never a citation candidate."""
    _, out, _ = real_site
    conn = sqlite3.connect(f"file:{out / 'evidence.sqlite'}?mode=ro", uri=True)
    text = conn.execute(
        "SELECT text FROM knowledge_text WHERE source_root_relative_path = ?", [MIME_SPEC]
    ).fetchone()[0]
    rows = conn.execute(
        "SELECT b.block_id, b.role, b.char_range_json FROM evidence_block b JOIN evidence_resource r "
        "USING (resource_id) WHERE r.source_root_relative_path = ? ORDER BY b.ordinal",
        [MIME_SPEC],
    ).fetchall()
    role = {bid: r for bid, r, _ in rows}
    headers = [json.loads(cr) for _, r, cr in rows if r == "furniture"]
    checked = 0
    for a, b in headers[2:8]:
        chunk = {"file_path": source_name(MIME_SPEC), "chunk_id": "c", "content": text[a - 200 : b + 200]}
        for question in ("Shared MIME-info Database", "MIME database"):
            c = CitationMapper(conn, question, "").citation(chunk, 0)
            assert c["diagnostics"]["chunkSpan"][0] <= a and "blockId" in c
            assert role[c["blockId"]] == "body", c["displayQuote"]
            assert all(role[r["blockId"]] == "body" for r in c.get("regions", []))
            checked += 1
    assert checked >= 10


def test_terms_stopwords_whole_words_and_chinese():
    assert [t.text for t in meaning_terms("What is the default weight of a glob?")] == [
        "default",
        "weight",
        "glob",
    ]
    assert [t.text for t in meaning_terms("吡咯烷的沸点是多少")] == ["吡咯烷", "沸点"]
    assert meaning_terms("is the a 的 吗") == []
    psi = meaning_terms("psi")
    index, _ = choose([("Upsilon and Omega", False), ("the psi function", False)], psi)
    assert index == 1
    index, _ = choose([("Upsilon", False)], psi)
    assert index is None
    # a term found in every block decides nothing; the rarer one does; ties go to the earlier block
    index, term = choose(
        [("gnuplot draws", False), ("gnuplot key position", False), ("gnuplot key", False)],
        meaning_terms("gnuplot key position"),
    )
    assert index == 1 and term.text == "position"


def test_cleaning_keeps_angle_bracket_text_and_unpaired_asterisks():
    assert clean_text("install into <MIME>/packages/ now") == "install into <MIME>/packages/ now"
    assert clean_text("index <m> selects only set <m>;") == "index <m> selects only set <m>;"
    assert clean_text("** a**b") == "** a**b"
    assert (
        clean_text("That is, <a><b/><c/></a> means", markdown=False, markup=False)
        == "That is, <a><b/><c/></a> means"
    )
    assert clean_text("x <!-- page 3 -->\n\ny <!-- pa") == "x y"
    assert clean_text("a <sup>2</sup> <br> b") == "a 2 b"


@pytest.mark.parametrize(
    "typed, pointer",
    [("Citation", ()), ("CitationDiagnostics", ("diagnostics",)), ("Region", ("regions", "items"))],
)
def test_citation_typed_dicts_match_the_schema(typed, pointer):
    from mnote_evidence.build.core.schemas import load_schema
    from mnote_evidence.functions.citations import model as citation_model

    node = load_schema("citation.schema.json")
    assert node["$id"] == citation_model.CITATION_SCHEMA
    for key in pointer:
        node = node["properties"][key] if key in node.get("properties", {}) else node[key]
    cls = getattr(citation_model, typed)
    assert set(cls.__required_keys__) | set(cls.__optional_keys__) == set(node["properties"])
    assert set(cls.__required_keys__) == set(node.get("required", []))


def test_an_older_index_gets_the_ingested_text_without_re_sending(real_site, tmp_path):
    root, out, server = real_site
    older = tmp_path / "out"
    shutil.copytree(out, older)
    conn = sqlite3.connect(older / "evidence.sqlite")
    conn.execute("DROP TABLE knowledge_text")  # as an index written before the table existed
    conn.commit()
    conn.close()
    report = run_build(root, older, lightrag=LightRagConfig(server.url, timeout=120))
    assert report.knowledge["inserted"] == 0 and report.knowledge["deleted"] == 0
    kept = dict(connect(older).execute("SELECT source_root_relative_path, text FROM knowledge_text"))
    assert kept == dict(connect(out).execute("SELECT source_root_relative_path, text FROM knowledge_text"))


def test_a_quote_not_in_its_block_is_not_verified():
    from mnote_evidence.functions.citations.mapper import verified

    block = "The default weight value is 50, and the maximum is 100."
    assert verified("The default weight value is 50", block, markup=False)
    assert verified("…weight value is 50, and the…", block, markup=False)
    assert not verified("The default weight value is 60", block, markup=False)
    assert not verified("", block, markup=False)


def test_a_schema_change_keeps_lightrag_documents_and_re_sends_a_changed_text(real_site, tmp_path):
    """A new index schema (e.g. 2: block roles) rebuilds the index, not LightRAG: its registry is kept
    (re-inserting under the same names answered HTTP 409 forever). A re-parsed file whose text differs
    from the text sent (page furniture now blanked) is deleted and sent again."""
    root, out, server = real_site
    older = tmp_path / "out"
    shutil.copytree(out, older)
    conn = sqlite3.connect(older / "evidence.sqlite")
    conn.execute("UPDATE build_meta SET value = '1' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    before = dict(connect(out).execute("SELECT source_root_relative_path, text FROM knowledge_text"))
    report = run_build(root, older, lightrag=LightRagConfig(server.url, timeout=120))
    assert report.redone.get("schema") and report.knowledge["error"] is None
    assert report.knowledge["inserted"] == 0 and report.knowledge["unchanged"] == len(before)
    assert (
        dict(connect(older).execute("SELECT source_root_relative_path, text FROM knowledge_text")) == before
    )
    conn = sqlite3.connect(older / "evidence.sqlite")
    conn.execute("UPDATE build_meta SET value = '1' WHERE key = 'schema_version'")
    conn.execute(
        "UPDATE knowledge_text SET text_hash = 'sha256:' || hex(randomblob(32)) "
        "WHERE source_root_relative_path = ?",
        [MIME_SPEC],
    )  # as if the header had been sent
    conn.commit()
    conn.close()
    report = run_build(root, older, lightrag=LightRagConfig(server.url, timeout=120))
    assert (
        report.knowledge["error"] is None
        and report.knowledge["deleted"] == 1
        and report.knowledge["inserted"] == 1
    )
    rows = dict(connect(older).execute("SELECT source_root_relative_path, status FROM knowledge_source"))
    assert rows[MIME_SPEC] == "processed"
    assert (
        dict(connect(older).execute("SELECT source_root_relative_path, text FROM knowledge_text")) == before
    )


UNSEEN = [
    q for q in json.loads((REAL / "questions.json").read_text("utf-8"))["questions"] if q["set"] == "unseen"
]


@pytest.fixture(scope="module")
def unseen_answers(tmp_path_factory):
    """The `unseen` questions over tests/real_documents/unseen/ (manual pages in English and Chinese, a
    scanned page as a PNG and as an image-only PDF, pandoc's Word test files), built and ingested into
    their own lightrag-server: (workspace, index, [(question, response, chunk texts by id)])."""
    base = tmp_path_factory.mktemp("unseen")
    root = base / "ws"
    for sub in ("manuals", "scans", "docx"):
        shutil.copytree(REAL / "unseen" / sub, root / sub)
    server = LightRag(base / "lightrag")
    server.start()
    try:
        config = LightRagConfig(server.url, timeout=120)
        report = run_build(root, base / "out", lightrag=config)
        assert report.knowledge["error"] is None and report.knowledge["failed"] == 0
        ctx = Context(EvidenceDB(base / "out" / "evidence.sqlite"), "", config)
        got = []
        with Client(config) as client:
            for q in UNSEEN:
                result = query({"query": q["q"], "mode": "naive", "topK": 10}, ctx)
                chunks = {
                    c["chunk_id"]: c["content"] for c in client.query_data(q["q"], "naive", 10)["chunks"]
                }
                got.append((q, result, chunks))
        yield root, base / "out", got
    finally:
        server.close()


def test_citations_on_unseen_documents_open_the_chunk_at_the_precision_they_state(unseen_answers, validate):
    """Every cited block lies in the chunk LightRAG retrieved, and the unit each precision names (box,
    page, Word body paragraph, block) holds the words shown, read back from the original file."""
    root, out, got = unseen_answers
    conn = connect(out)
    tally, cache, pdfs = Tally(), {}, {}
    precisions = set()
    for _q, result, chunks in got:
        assert result["ok"], result
        for c in result["citations"]:
            validate("citation.schema.json", c)
            precisions.add((c["resourceKind"], c["locatorPrecision"]))
        check(root, conn, result["citations"], chunks, tally, cache, pdfs)
    rates = tally.rates()
    print("unseen citation truth:", json.dumps(rates))
    assert len(UNSEEN) >= 30 and tally.with_block >= 150, rates
    assert {("pdf", "bbox"), ("image", "bbox"), ("office", "paragraph"), ("office", "block")} <= precisions
    assert rates["blockInChunkPct"] == 100.0 and rates["precisionHeldPct"] == 100.0, (
        rates,
        tally.failures[:5],
    )
    assert rates["quoteFullyInBlockPct"] == 100.0 and rates["boxesHoldTextPct"] == 100.0, tally.failures[:5]
    assert rates["furnitureCited"] == 0 and rates["quotesWithPageMarkers"] == 0, rates
