"""Hostile amplification: what a few bytes of a source can make the build do stays bounded.

- headings: a resource's section tree costs work in proportion to its sections, and a resource has
  at most `MAX_SECTIONS_PER_RESOURCE` sections (`sections_capped`), a note, a DOCX or a PDF alike;
- links: a note links at most `MAX_LINKS_PER_NOTE` times, each target and its words at most
  `MAX_LINK_CHARS` long (`links_capped`), so a reference link used many times stays small;
- embeds: a page shows at most `MAX_EMBEDDED_CHARS_PER_NOTE` characters of embedded text in all; a
  later embed is a link to what it names (`embeds_capped`);
- warnings: a build lists at most `MAX_LISTED_WARNINGS` warnings of one code for one file, then one
  that counts the rest;
- TeX: a formula's `href` holds no backslash or control character (a browser reads `\\host` as
  `//host`, another site);
- front matter nested past what a parser can hold is kept as its raw text (`front_matter_too_large`);
- sidecars: one replaced after a build (missing, a FIFO or a symlink where it or its folder goes) has
  its file parsed again by the next build; one forged in place, once a page finds it, by the build after.
Every test builds a real workspace and reads what the build wrote (pages, evidence.sqlite, the report).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import sqlite3
import stat

import pytest

from mnote_evidence.build.core.model import MAX_LISTED_WARNINGS
from mnote_evidence.build.markdown.limits import (
    MAX_EMBEDDED_CHARS_PER_NOTE,
    MAX_LINK_CHARS,
    MAX_LINKS_PER_NOTE,
)
from mnote_evidence.build.parse.sections import MAX_SECTIONS_PER_RESOURCE
from mnote_evidence.build.render import data
from tests.conftest import connect, run_build
from tests.test_hostile_content import _cli_build, _math_parts, _warnings
from tests.test_hostile_sidecars import FACT as SIDECAR_FACT
from tests.test_hostile_sidecars import PDF
from tests.test_hostile_sidecars import _cli as _sidecars_cli
from tests.test_hostile_sidecars import _workspace as _sidecar_workspace


def _sql_steps(conn: sqlite3.Connection, call):
    """(what `call` returns, the SQLite virtual-machine steps it cost, in hundreds): work counted, not
    timed."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(tick, 100)
    try:
        return call(), steps[0]
    finally:
        conn.set_progress_handler(None, 0)


def test_the_outline_of_a_resource_costs_in_proportion_to_its_sections(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    for n in (1000, 4000):
        (root / f"h{n}.md").write_text("".join(f"# h\n\ntext {i}\n\n" for i in range(n)))
    run_build(root, out)
    conn = data.connect_ro(out / "evidence.sqlite")
    try:
        ids = dict(conn.execute("SELECT source_root_relative_path, resource_id FROM evidence_resource"))
        steps = {}
        for n in (1000, 4000):
            tree, steps[n] = _sql_steps(conn, lambda n=n: data.section_tree(conn, ids[f"h{n}.md"]))
            assert len(tree) == n and all(node.target for node in tree)
    finally:
        conn.close()
    assert steps[4000] < 6 * steps[1000], steps  # 4 times the sections: about 4 times the work


@pytest.fixture(scope="module")
def headings(tmp_path_factory):
    import docx

    base = tmp_path_factory.mktemp("headings")
    root, out = base / "ws", base / "out"
    root.mkdir()
    many = MAX_SECTIONS_PER_RESOURCE * 2
    (root / "headings.md").write_text("# h\n" * many + "\nThe end of the headings.\n")
    document = docx.Document()
    heading = document.add_heading("h", 1)._p
    for _ in range(MAX_SECTIONS_PER_RESOURCE + 99):  # copies of one heading: python-docx's own is slow
        heading.addnext(copy.deepcopy(heading))
    document.add_paragraph("The end of the document.")
    document.save(root / "headings.docx")
    (root / "plain.md").write_text("# One\n\nA short note.\n\n## Two\n\nIts second part.\n")
    return root, out, _cli_build(root, out, timeout=240)


def test_a_resource_has_a_bounded_number_of_sections_and_the_build_completes(headings):
    root, out, result = headings
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sections_capped" in _warnings(result, "headings.md")
    assert "sections_capped" in _warnings(result, "headings.docx")
    assert not _warnings(result, "plain.md")
    conn = connect(out)
    sections = dict(
        conn.execute(
            "SELECT r.source_root_relative_path, count(s.section_id) FROM evidence_resource r "
            "LEFT JOIN evidence_section s USING (resource_id) GROUP BY 1"
        )
    )
    assert sections == {
        "headings.md": MAX_SECTIONS_PER_RESOURCE,
        "headings.docx": MAX_SECTIONS_PER_RESOURCE,
        "plain.md": 2,
    }
    for path, words in [("headings.md", "end of the headings"), ("headings.docx", "end of the document")]:
        assert conn.execute(
            "SELECT 1 FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = ? AND b.text LIKE ?",
            [path, f"%{words}%"],
        ).fetchone(), path
    blocks = conn.execute(
        "SELECT count(*) FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
        "WHERE r.source_root_relative_path = 'headings.md' AND b.kind = 'heading'"
    ).fetchone()[0]
    assert blocks == 2 * MAX_SECTIONS_PER_RESOURCE  # every heading is still indexed, as a block
    page = (out / "headings.html").read_text("utf-8")
    assert "end of the headings" in page
    assert json.loads(result.stdout)["status_counts"] == {"ok": 3}


def _biggest_file(out) -> int:
    return max(p.stat().st_size for p in out.rglob("*") if p.is_file())


def _note_has(conn: sqlite3.Connection, path: str, words: str) -> bool:
    return bool(
        conn.execute(
            "SELECT 1 FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = ? AND b.text LIKE ?",
            [path, f"%{words}%"],
        ).fetchone()
    )


@pytest.fixture(scope="module")
def links(tmp_path_factory):
    base = tmp_path_factory.mktemp("links")
    root, out = base / "ws", base / "out"
    root.mkdir()
    url = "http://e.example/" + "a" * 5000
    (root / "refs.md").write_text("[x][r] " * 30000 + f"\n\n[r]: {url}\n\nAfter the links.\n")
    (root / "many.md").write_text("[[plain]] " * (MAX_LINKS_PER_NOTE + 500) + "\n\nAfter the wikilinks.\n")
    (root / "long.md").write_text(
        f"[{'w' * (MAX_LINK_CHARS + 1)}](http://e.example/) and [short](http://e.example/)\n"
    )
    (root / "plain.md").write_text("A note with [a link](http://e.example/) and [[many]].\n")
    return root, out, _cli_build(root, out)


def test_links_of_a_note_are_bounded_and_the_rest_is_text(links):
    root, out, result = links
    assert result.returncode == 0, result.stderr[-3000:]
    for path in ("refs.md", "many.md", "long.md"):
        assert "links_capped" in _warnings(result, path), path
    assert not _warnings(result, "plain.md")
    assert _biggest_file(out) < 16 * 1024**2  # 30,000 copies of a 5 KB URL are not stored or shown
    conn = connect(out)
    longest = conn.execute("SELECT max(length(target)), max(length(label)) FROM evidence_link").fetchone()
    assert max(longest) <= MAX_LINK_CHARS
    counts = dict(
        conn.execute(
            "SELECT r.source_root_relative_path, count(*) FROM evidence_link l "
            "JOIN evidence_resource r USING (resource_id) GROUP BY 1"
        )
    )
    assert counts == {"many.md": MAX_LINKS_PER_NOTE, "long.md": 1, "plain.md": 2}
    assert _note_has(conn, "refs.md", "After the links") and _note_has(conn, "many.md", "After the wikilinks")
    page = (out / "long.html").read_text("utf-8")
    assert "w" * (MAX_LINK_CHARS + 1) in page and page.count('href="http://e.example/"') == 1


def test_a_page_embeds_a_bounded_amount_of_text_in_all(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    sections = 100
    size = 2 * MAX_EMBEDDED_CHARS_PER_NOTE // sections  # each embed shows all of its section
    (root / "target.md").write_text("".join(f"# h{j}\n\n{'x' * size}\n\n" for j in range(sections)))
    for n in range(2):
        (root / f"embeds{n}.md").write_text(
            "".join(f"![[target#h{j}]]\n\n" for j in range(sections)) + "The end of the embeds.\n"
        )
    result = _cli_build(root, out)
    assert result.returncode == 0, result.stderr[-3000:]
    problems = json.loads(result.stdout)["site"]["problems"]
    assert {(p["path"], p["code"]) for p in problems} == {
        ("embeds0.md", "embeds_capped"),
        ("embeds1.md", "embeds_capped"),
    }
    for n in range(2):
        page = (out / f"embeds{n}.html").read_text("utf-8")
        assert len(page) < MAX_EMBEDDED_CHARS_PER_NOTE + 100_000
        shown = page.count('class="embed embed-note"')
        assert sections // 3 < shown < sections // 2 + 1, shown
        assert page.count('class="wikilink" href="target.html#') == sections - shown  # the rest link
        assert "The end of the embeds." in page


def test_deeply_nested_front_matter_is_kept_as_text(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    for name, depth in [("flow.md", 5000), ("middle.md", 500)]:
        (root / name).write_text(f"---\na: {'[' * depth}x{']' * depth}\n---\n\nAfter the front matter.\n")
    block = "".join(f"{'  ' * i}k{i}:\n" for i in range(300)) + "  " * 300 + "v: 1\n"
    (root / "block.md").write_text(f"---\n{block}---\n\nAfter the front matter.\n")
    result = _cli_build(root, out)
    assert result.returncode == 0, result.stderr[-3000:]
    conn = connect(out)
    for name in ("flow.md", "middle.md", "block.md"):
        assert "front_matter_too_large" in _warnings(result, name), name
        assert _note_has(conn, name, "After the front matter"), name
        assert _note_has(conn, name, "[[[" if name != "block.md" else "k299:"), name  # its raw text
    assert {r[0] for r in conn.execute("SELECT status FROM evidence_resource")} == {"ok"}


def test_the_warnings_of_one_file_are_listed_up_to_a_bound_then_counted(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    flood = " ".join(f"[[n{i % 50}]]" for i in range(20000))
    anchors = "".join(f"Paragraph {i} ^same\n\n" for i in range(200))
    (root / "flood.md").write_text(f"{flood}\n\n{anchors}After the flood.\n")
    (root / "few.md").write_text("[[gone]] and [[lost]] and [[few#nowhere]]\n")
    result = _cli_build(root, out)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(result.stdout) < 100_000
    warnings = json.loads(result.stdout)["warnings"]
    by_code: dict = {}
    for w in warnings:
        by_code.setdefault((w["path"], w["code"]), []).append(w["message"])
    for code in ("broken_link", "duplicate_block_anchor"):
        listed = by_code[("flood.md", code)]
        assert len(listed) == MAX_LISTED_WARNINGS + 1, code
        assert "more" in listed[-1] and "not listed" in listed[-1], listed[-1]
    assert len(by_code[("few.md", "broken_link")]) == 3
    stored = connect(out).execute(
        "SELECT length(warnings_json) FROM evidence_resource WHERE source_root_relative_path = 'flood.md'"
    )
    assert stored.fetchone()[0] < 10_000
    assert _biggest_file(out) < 4 * 1024**2


def test_a_formula_links_no_other_host_through_backslashes_or_controls(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    root.mkdir()
    hostile = [
        r"\href{\\evil.example/x}{a}",
        r"\href{/\evil.example/x}{b}",
        r"\href{\/evil.example}{c}",
        r"\href{x&#x5C;&#x5C;evil}{d}",
        r"\href{a&#x09;b}{e}",
        "\\href{a\x85b}{f}",
    ]
    body = "\n\n".join(f"Formula {i}: ${tex}$" for i, tex in enumerate(hostile))
    (root / "math.md").write_text(body + "\n\nSafe: $\\href{other.html}{y}$\n")
    (root / "other.md").write_text("Another note.\n")
    run_build(root, out, site=True)
    maths = _math_parts((out / "math.html").read_text("utf-8"))
    assert len(maths) == len(hostile) + 1
    hrefs = [h for m in maths for h in re.findall(r'href="([^"]*)"', m.split("<annotation", 1)[0])]
    assert hrefs == ["other.html"], hrefs


def _site_build(root, out):
    """A CLI build with the site (`_build_cli`'s, which leaves the site out), sidecars in `Note.ocr/`."""
    result = _sidecars_cli(
        "build", str(root), "--out", str(out), "--no-ocr", "--json", "--sidecars", "beside"
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)


SIDECARS = (
    "Note.ocr/spec.pdf.source-map.json",
    "Note.ocr/spec.pdf.parse.md",
    ".mnote/sidecars/Note.md.source-map.json",
)


def _pdf_page(out) -> str:
    return (out / "Note.assets/spec.pdf.html").read_text("utf-8")


@pytest.mark.parametrize(
    "plant",
    [
        lambda root: (root / "Note.ocr/spec.pdf.source-map.json").unlink(),
        lambda root: (
            (root / ".mnote/sidecars/Note.md.source-map.json").unlink(),
            os.symlink("/dev/zero", root / ".mnote/sidecars/Note.md.source-map.json"),
        ),
        lambda root: (
            (root / "Note.ocr/spec.pdf.parse.md").unlink(),
            os.mkfifo(root / "Note.ocr/spec.pdf.parse.md"),
        ),
    ],
    ids=["map_missing", "note_map_dev_zero", "text_fifo"],
)
def test_a_sidecar_replaced_after_a_build_is_written_again_by_the_next(tmp_path, plant):
    root, out = _sidecar_workspace(tmp_path / "ws"), tmp_path / "out"
    _site_build(root, out)
    plant(root)
    report = _site_build(root, out)
    assert report["parsed"] == 1 and not report["site"]["problems"], report
    for rel in SIDECARS:
        assert stat.S_ISREG(os.lstat(root / rel).st_mode), rel
    with open(root / "Note.md", "a", encoding="utf-8") as f:  # both pages are rendered again
        f.write("\nMore about [[spec.pdf]].\n")
    report = _site_build(root, out)
    assert not report["site"]["problems"], report
    assert SIDECAR_FACT in _pdf_page(out) and "Solvent notes" in (out / "Note.html").read_text("utf-8")


@pytest.mark.parametrize("plant", [os.mkfifo, lambda p: os.symlink("/dev/zero", p)], ids=["fifo", "dev_zero"])
def test_a_sidecar_folder_replaced_after_a_build_has_its_files_parsed_again(tmp_path, plant):
    root, out = _sidecar_workspace(tmp_path / "ws"), tmp_path / "out"
    _site_build(root, out)
    shutil.rmtree(root / "Note.ocr")
    plant(root / "Note.ocr")
    for _ in range(2):  # and again by every build while the folder cannot hold them
        report = _site_build(root, out)
        assert report["parsed"] == 1, report
        conn = connect(out)
        assert (
            conn.execute(
                "SELECT warnings_json FROM evidence_resource WHERE source_root_relative_path = ?", [PDF]
            )
            .fetchone()[0]
            .count("sidecar_not_written")
            == 1
        )
        assert _note_has(conn, PDF, SIDECAR_FACT)
    assert not stat.S_ISDIR(os.lstat(root / "Note.ocr").st_mode)  # nothing written through it


def test_a_sidecar_forged_in_place_is_parsed_again_once_a_page_finds_it(tmp_path):
    """A source map overwritten in place (a regular file, unsealed) is found when its page is rendered
    (`sidecar_missing`); it is removed there, so the next build parses the file again."""
    root, out = _sidecar_workspace(tmp_path / "ws"), tmp_path / "out"
    _site_build(root, out)
    (root / "Note.ocr/spec.pdf.source-map.json").write_text('{"forged": true}', "utf-8")
    with open(root / "Note.md", "a", encoding="utf-8") as f:  # the PDF's page is rendered again
        f.write("\nMore about [[spec.pdf]].\n")
    report = _site_build(root, out)
    assert [p["code"] for p in report["site"]["problems"]] == ["sidecar_missing"]
    report = _site_build(root, out)
    assert report["parsed"] == 1 and not report["site"]["problems"], report
    assert SIDECAR_FACT in _pdf_page(out)
