"""Notes compiled where they were parsed (`render/note_programs.py`): the render runs the
program the parse left instead of parsing the note again, and the site is byte for byte the one a
render that compiles every note itself writes. Real builds of the fixture workspace (callouts,
wikilinks, embeds, footnotes, math, tags, front matter, links, images, PDFs) plus a note using all
of them at once."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from markdown_it import MarkdownIt

from mnote_evidence.build.core.model import Block
from mnote_evidence.build.render import note_programs, pages
from mnote_evidence.build.render.note_programs import PROGRAMS_DIR, load_program, shape_of, store_programs
from mnote_evidence.build.render.site import RenderOptions, render_site
from tests.conftest import connect, copy_workspace, run_build

EVERYTHING = """---
title: Everything at once
tags: [alpha, beta/gamma]
aliases: [All]
odd: "nul \\0 inside"
---

# Everything

> [!note]- Folded *callout*
> with a [[Project Plan#^goal]] link and a footnote[^1].

- [ ] a task with [a link](Project%20Plan.md) and [an outside one](https://example.org)
- [x] done #alpha and ==marked==

Math $x^2$ and $$\\frac{a}{b}$$ inline. ^calc

$$
\\int_0^1 f(x)\\,dx
$$

![[Project Plan]] ![[Review#Findings]] [[Missing note]] [broken](nowhere.md)

[![an image in a link](../Inbox/photo.png)](https://example.org) ![alone](../Inbox/photo.png)

<b onclick="x()">raw</b>

[^1]: The footnote, with [[Review]].
"""


def _pages(out: Path) -> dict[str, bytes]:
    """Every page; the front page without the time of its last change (each build has its own)."""
    pages = {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.suffix == ".html" and not p.name.startswith(".")
    }
    pages["index.html"] = re.sub(rb"last change [0-9-]+ [0-9:]+ UTC", b"", pages["index.html"])
    return pages


def test_site_is_the_same_with_the_programs_and_the_note_parsed_once(tmp_path, monkeypatch):
    root = copy_workspace(tmp_path / "ws")
    (root / "Obsidian/Everything.md").write_text(EVERYTHING, "utf-8")
    parses, hits = [], []
    real_parse, real_load = MarkdownIt.parse, note_programs.load_program

    def load(*args):  # the real one, counted
        program = real_load(*args)
        hits.append(program is not None)
        return program

    monkeypatch.setattr(
        MarkdownIt, "parse", lambda self, src, env=None: parses.append(src) or real_parse(self, src, env)
    )
    monkeypatch.setattr(pages, "load_program", load)
    run_build(root, tmp_path / "a", site=True)  # jobs=1: parse and render in this process
    with connect(tmp_path / "a") as conn:
        notes = conn.execute(
            "SELECT count(*) FROM evidence_resource WHERE kind = 'markdown' AND status = 'ok'"
        ).fetchone()[0]
        embedded = {
            (root / r[0]).read_text("utf-8")
            for r in conn.execute(
                "SELECT DISTINCT target_path FROM evidence_link "
                "WHERE kind = 'embed' AND target_path LIKE '%.md'"
            )
        }
    # every note's page ran the program its parse left, and the front page the home note's twice (a site
    # without a front page gets one first, then the final one; a program is not removed as it is read): no
    # note is parsed twice, but to draw its blocks where it is embedded
    assert notes > 10 and hits == [True] * (notes + 2)
    twice = {text for text, n in Counter(parses).items() if n > 1}
    assert embedded and twice <= embedded
    assert not (tmp_path / "a" / PROGRAMS_DIR).exists(), "the programs are removed when the render is done"

    monkeypatch.undo()  # the reference: a library build, then a render that compiles every note itself
    run_build(root, tmp_path / "b")
    render_site(root, tmp_path / "b", tmp_path / "b" / "evidence.sqlite", RenderOptions())
    a, b = _pages(tmp_path / "a"), _pages(tmp_path / "b")
    assert "Obsidian/Everything.html" in a and a.keys() == b.keys()
    assert [p for p in a if a[p] != b[p]] == []
    page = a["Obsidian/Everything.html"].decode()
    for shown in (
        'class="callout callout-note"',
        "<math",
        'class="tag"',
        'class="footnote',
        "broken-link",
        'rel="noopener noreferrer"',
        "embed-note",
        "author-anchor",
        "&lt;b onclick",
    ):
        assert shown in page, shown


def test_a_program_is_used_only_for_its_text_and_blocks(tmp_path):
    blocks = [Block(id="b-1", type="heading", text="A"), Block(id="b-2", type="paragraph", text="See [[B]].")]
    text = "# A\n\nSee [[B]].\n"
    store_programs(tmp_path, [(text, blocks)])
    assert load_program(tmp_path, text + " ", shape_of(blocks)) is None  # other text
    other = [blocks[0], Block(id="b-3", type="paragraph", text="See [[B]].")]
    assert load_program(tmp_path, text, shape_of(other)) is None  # other block ids
    parts, ops = load_program(tmp_path, text, shape_of(blocks))
    assert len(parts) == len(ops) + 1 and ["wikilink", "B", "B", False, None] in ops
    # not removed as it is read (the render removes the folder at its end): read again, the same program
    assert load_program(tmp_path, text, shape_of(blocks)) == (parts, ops)
    store_programs(tmp_path, [(text, blocks)])
    for f in tmp_path.glob("*" + note_programs.SUFFIX):
        f.write_text("{not json", "utf-8")
    assert load_program(tmp_path, text, shape_of(blocks)) is None  # unreadable: compiled again by the render


def test_the_notes_of_a_parse_task_share_one_file(tmp_path):
    """The notes of one parse task share one program file: a file per note costs more to create and remove
    than its note to compile."""
    notes = [
        (
            f"# Note {i}\n\nSee [[N{i}]].\n",
            [
                Block(id=f"b-h{i}", type="heading", text=f"Note {i}"),
                Block(id=f"b-p{i}", type="paragraph", text=f"See [[N{i}]]."),
            ],
        )
        for i in range(5)
    ]
    broken = ("# Two\n\nblocks\n", [Block(id="b-x", type="heading", text="Two")])  # 2 blocks, 1 indexed
    note_programs.store_programs(tmp_path, [*notes[:3], broken, *notes[3:]])
    assert len(list(tmp_path.iterdir())) == 1
    for i, (text, blocks) in enumerate(notes):
        parts, ops = load_program(tmp_path, text, shape_of(blocks))
        assert ["wikilink", f"N{i}", f"N{i}", False, None] in ops
    assert load_program(tmp_path, broken[0], shape_of(broken[1])) is None  # not compiled: the render does it
