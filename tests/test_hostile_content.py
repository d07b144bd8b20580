"""Hostile note content: what a note writes stays inside its own page and its own budget.

- placement: two sources never share a page, not even on a file system or host that ignores case
  or Unicode form; the loser moves (`page_collision`) and the index's URLs are the site's;
- amplification: front matter aliases, embeds and tags are bounded before they cost memory or
  output; what passes a bound is a recorded warning and the rest of the note (and the build) stands;
- TeX: the MathML a formula becomes carries only allowlisted elements and attributes, so no formula
  styles, scripts or links out of the page.
Every test builds a real workspace and reads what the build wrote (pages, evidence.sqlite, the report).
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.evidence import Context, open_
from mnote_evidence.functions.handlers.verify import verify_quote
from tests.conftest import FIXTURES, SPEC_PDF, connect, run_build

MEMORY_CAP = 3 * 1024**3  # the build runs under this address-space limit, as a small host would


def _cli_build(root: Path, out: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    return subprocess.run(
        [sys.executable, "-m", "mnote_evidence", "build", str(root), "--out", str(out), "--json"]
        + ["--no-ocr", "--jobs", "1"],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        preexec_fn=cap,
        timeout=timeout,
    )


def _alias_bomb(levels: int = 9) -> str:
    """Front matter of a few hundred bytes whose aliases expand to 9**levels strings."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"tags: *a{levels - 1}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def amplified(tmp_path_factory):
    base = tmp_path_factory.mktemp("amplified")
    root, out = base / "ws", base / "out"
    root.mkdir()
    (root / "bomb.md").write_text(f"---\n{_alias_bomb()}\n---\n\nAfter the bomb the note goes on.\n")
    (root / "cycle.md").write_text("---\nloop: &l [*l]\n---\n\nA list that holds itself.\n")
    paragraph = "Big note paragraph " + "x" * 660
    (root / "big.md").write_text("\n\n".join(f"{paragraph} {i}" for i in range(40)) + "\n")
    (root / "embeds.md").write_text("![[big]]\n\n" * 3000 + "The last paragraph of the embeds.\n")
    (root / "tags.md").write_text(" ".join(f"#t{i}" for i in range(20000)) + "\n\nTagged to the hilt.\n")
    (root / "longtag.md").write_text(f"#{'a' * 300} and #short\n\nA long tag.\n")
    (root / "plain.md").write_text("---\ntags: [fine]\n---\n\nAn ordinary note with #ordinary tags.\n")
    result = _cli_build(root, out)
    return root, out, result


def _warnings(result, path: str) -> set[str]:
    summary = json.loads(result.stdout)
    return {w["code"] for w in summary.get("warnings", []) if w.get("path") == path}


def test_amplifying_notes_are_bounded_and_the_build_completes(amplified):
    root, out, result = amplified
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    biggest = max(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert biggest < 32 * 1024**2, biggest  # no page, sidecar or database of runaway size
    conn = connect(out)
    status = dict(conn.execute("SELECT source_root_relative_path, status FROM evidence_resource"))
    assert all(status[p] == "ok" for p in ("bomb.md", "cycle.md", "embeds.md", "tags.md", "longtag.md"))
    longest = conn.execute("SELECT max(length(text)) FROM evidence_block").fetchone()[0]
    assert longest <= max(p.stat().st_size for p in root.iterdir())  # no block longer than its file
    for path, words in [
        ("bomb.md", "After the bomb"),
        ("cycle.md", "holds itself"),
        ("embeds.md", "last paragraph of the embeds"),
        ("tags.md", "Tagged to the hilt"),
        ("longtag.md", "A long tag"),
    ]:
        assert conn.execute(
            "SELECT 1 FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = ? AND b.text LIKE ?",
            [path, f"%{words}%"],
        ).fetchone(), path


def test_each_bound_is_a_recorded_warning(amplified):
    _, out, result = amplified
    assert "front_matter_too_large" in _warnings(result, "bomb.md")
    assert "front_matter_too_large" in _warnings(result, "cycle.md")
    assert "embeds_capped" in _warnings(result, "embeds.md")
    assert "tags_capped" in _warnings(result, "tags.md")
    assert "tags_capped" in _warnings(result, "longtag.md")
    assert not _warnings(result, "plain.md")
    conn = connect(out)
    tags = {r[0] for r in conn.execute("SELECT DISTINCT target FROM evidence_link WHERE kind = 'tag'")}
    assert {"fine", "ordinary", "short", "t0"} <= tags and not any(len(t) > 100 for t in tags)
    assert len(tags) < 2000
    assert (out / "_tags/short.html").exists() and (out / "plain.html").exists()
    embeds = (out / "embeds.html").read_text("utf-8")
    assert 0 < embeds.count('class="embed embed-note"') < 3000


MATH_PAYLOADS = [
    r"\style{position:fixed;top:0;left:0;width:100%;height:100%;background:red}{x}",
    r"\href{javascript:alert(1)}{x}",
    r"\href{  JaVa&#x09;script:alert(1)}{x}",
    r"\href{data:text/html,<script>alert(1)</script>}{x}",
    r"\class{site-header hidden}{x}",
    r"\rule{1000cm}{1000cm}",
    r"\hspace{5000em}",
    r"\color{red;position:fixed}{x}",
]


@pytest.fixture(scope="module")
def math_site(tmp_path_factory):
    base = tmp_path_factory.mktemp("math")
    root, out = base / "ws", base / "out"
    root.mkdir()
    body = "\n\n".join(f"Formula {i}: ${tex}$" for i, tex in enumerate(MATH_PAYLOADS))
    safe = r"Safe: $\href{https://example.org/a}{y}$ and $\frac{a}{b}$ and $\color{red}{z}$"
    (root / "math.md").write_text(f"{body}\n\n{safe}\n\n$$\n\\sqrt{{x^2}}\n$$\n")
    run_build(root, out, site=True)
    return out, (out / "math.html").read_text("utf-8")


def _math_parts(page: str) -> list[str]:
    return re.findall(r"<math\b.*?</math>", page, flags=re.S)


def test_tex_cannot_style_script_or_link_out_of_its_formula(math_site):
    _, page = math_site
    maths = _math_parts(page)
    assert len(maths) == len(MATH_PAYLOADS) + 4
    for m in maths:
        tags = re.findall(r"<([a-zA-Z][\w:-]*)([^>]*)>", m.split("<annotation", 1)[0])
        for _, attrs in tags:
            names = set(re.findall(r"([\w:-]+)=", attrs))
            assert not names & {"style", "class", "id", "onclick", "onload", "onerror"}, attrs
            for href in re.findall(r'href="([^"]*)"', attrs):
                assert href.startswith(("https://", "http://")), href
            for size in re.findall(r'(?:width|height)="([^"]*)"', attrs):
                assert not re.search(r"\d{3,}", size), size
            assert "position" not in attrs and ";" not in attrs


def test_safe_tex_keeps_its_markup(math_site):
    _, page = math_site
    assert 'href="https://example.org/a"' in page
    assert "<mfrac>" in page and "<msqrt>" in page and 'mathcolor="red"' in page
    # the TeX source stays, escaped, as the annotation
    assert "\\style{position:fixed;" in page and "<script>" not in page


CAFE_NFC, CAFE_NFD = unicodedata.normalize("NFC", "Café.md"), unicodedata.normalize("NFD", "Café.md")
COLLIDING = {  # source -> words only its page holds
    "spec.pdf.md": "The note beside the PDF",
    "a.md": "Note a in Markdown",
    "a.markdown": "Note a with the long suffix",
    "b.md": "Note b in lower case",
    "b.MD": "Note b in upper case",
    "Upper.md": "Upper with a capital",
    "upper.md": "upper in lower case",
    CAFE_NFC: "Cafe composed",
    CAFE_NFD: "Cafe decomposed",
}


def _same_file(site_path: str) -> str:
    return unicodedata.normalize("NFC", site_path).casefold()


@pytest.fixture(scope="module")
def colliding(tmp_path_factory):
    base = tmp_path_factory.mktemp("colliding")
    root, out = base / "ws", base / "out"
    root.mkdir()
    shutil.copy(FIXTURES / SPEC_PDF, root / "spec.pdf")
    for path, words in COLLIDING.items():
        (root / path).write_text(f"{words}.\n")
    (root / "cites.md").write_text("See [[spec.pdf]] and [[spec.pdf.md]].\n")
    report = run_build(root, out, site=True)
    return root, out, report


def _page_urls(out: Path) -> dict[str, str]:
    return dict(connect(out).execute("SELECT source_root_relative_path, page_url FROM evidence_resource"))


def test_two_sources_never_share_a_page(colliding):
    root, out, report = colliding
    urls = _page_urls(out)
    assert set(urls) == {"spec.pdf", "cites.md", *COLLIDING}
    keys = [_same_file(unquote(u)) for u in urls.values()]
    assert len(set(keys)) == len(keys), urls  # distinct even where case and Unicode form are ignored
    for path, words in COLLIDING.items():
        assert words in (out / unquote(urls[path])).read_text("utf-8"), path
    pdf_page = (out / unquote(urls["spec.pdf"])).read_text("utf-8")
    assert urls["spec.pdf"] == "spec.pdf.html" and "The note beside the PDF" not in pdf_page
    moved = {p["path"] for p in report.site.problems if p["code"] == "page_collision"}
    # the path first in code point order keeps the page; each other one moves under _page/
    assert moved == {"spec.pdf.md", "a.md", "b.md", "upper.md", CAFE_NFC}
    assert all(urls[p].startswith("_page/") for p in moved)


def test_a_citation_of_the_pdf_opens_the_pdf(colliding):
    _, out, _ = colliding
    conn = connect(out)
    urls = _page_urls(out)
    block = conn.execute(
        "SELECT block_id, text, locator_json FROM evidence_block b "
        "JOIN evidence_resource r USING (resource_id) WHERE r.source_root_relative_path = 'spec.pdf' "
        "AND b.page = 1 ORDER BY b.ordinal LIMIT 1"
    ).fetchone()
    opened = json.loads(block["locator_json"])["openAction"]["url"]
    assert urlsplit(opened).path == urls["spec.pdf"]
    assert f'id="{block["block_id"]}"' in (out / "spec.pdf.html").read_text("utf-8")
    ctx = Context(EvidenceDB(out / "evidence.sqlite"), "")
    status, box = call(lambda r: open_(r, ctx), {"locator": {"resourcePath": "spec.pdf", "page": 1}})
    assert status == 200 and urlsplit(box["openAction"]["url"]).path == urls["spec.pdf"]
    status, note = call(lambda r: open_(r, ctx), {"locator": {"resourcePath": "spec.pdf.md", "page": 1}})
    assert status == 200 and urlsplit(note["openAction"]["url"]).path == urls["spec.pdf.md"]
    for path in ("spec.pdf", "spec.pdf.md", "a.md", "a.markdown", "b.md", "b.MD"):
        status, checked = call(lambda r: verify_quote(r, ctx), {"citationUrl": urls[path], "quote": "Note"})
        assert status == 200 and checked["target"]["resourcePath"] == path, (path, checked)
    cites = (out / "cites.html").read_text("utf-8")
    assert 'href="spec.pdf.html"' in cites and f'href="{urls["spec.pdf.md"]}"' in cites


def test_a_new_file_that_takes_a_page_moves_the_other_one_in_the_index_and_the_site(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    (root / "a.md").write_text("Note a in Markdown.\n")
    (root / "links.md").write_text("Link to [[a.md]].\n")
    run_build(root, out, site=True)
    assert _page_urls(out)["a.md"] == "a.html"
    (root / "a.markdown").write_text("Note a with the long suffix.\n")  # first in code point order
    report = run_build(root, out, site=True)
    urls = _page_urls(out)
    assert urls["a.markdown"] == "a.html" and urls["a.md"] == "_page/a.md.html"
    assert "long suffix" in (out / "a.html").read_text("utf-8")
    assert "Note a in Markdown" in (out / "_page/a.md.html").read_text("utf-8")
    assert 'href="_page/a.md.html"' in (out / "links.html").read_text("utf-8")
    assert [p["path"] for p in report.site.problems if p["code"] == "page_collision"] == ["a.md"]
    (root / "a.markdown").unlink()  # its stale row keeps the page (its tombstone) until the next build
    run_build(root, out, site=True)
    run_build(root, out, site=True)
    assert _page_urls(out)["a.md"] == "a.html" and "Note a in Markdown" in (out / "a.html").read_text("utf-8")
    assert 'href="a.html"' in (out / "links.html").read_text("utf-8")


def test_in_chromium_no_formula_covers_the_page_or_runs_a_script(math_site, page):
    from tests.render.test_site_browser import open_page

    out, _ = math_site
    page.context.set_offline(True)
    open_page(page, out, "math.html")
    covering = page.evaluate(
        """() => [[2, 2], [innerWidth / 2, innerHeight / 2], [innerWidth - 2, innerHeight - 2]]
            .map(([x, y]) => document.elementFromPoint(x, y))
            .filter(el => el && el.closest('math')).length"""
    )
    widest = page.eval_on_selector_all(
        "math", "els => Math.max(...els.map(e => e.getBoundingClientRect().width))"
    )
    assert covering == 0 and widest < page.viewport_size["width"]
    page.eval_on_selector_all("math *", "els => els.forEach(e => e.dispatchEvent(new MouseEvent('click')))")
    assert page.dialogs == [] and page.url.endswith("math.html")
