"""What is private stays private: `%%comments%%`, `publish: false` / `draft: true` notes and files an
`.mnoteignore` matches leave nothing in the output.

Each test builds a small vault made here (real builds, the site rendered) and looks at what a reader
of the output can see: every file under the output folder, the bytes and rows of `evidence.sqlite`
(its FTS terms too), every sidecar in the workspace. A control word in published text must be found
by the same grep, so a grep that finds nothing proves something.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.conftest import connect, run_build

CONTROL = "zebracontrolword"
# one canary per place it is hidden in; no two share a prefix (FTS5 leaves store terms prefix-compressed)
CANARIES = {
    "inline comment": "ocelotinline",
    "comment block": "margaymultiline",
    "publish false": "servalunpublished",
    "publish false title": "tayratitle",
    "draft": "caracaldraft",
    "ignored folder": "lynxignoredfolder",
    "ignored attachment": "jaguarundipdf",
    "publish false tag": "quollatag",
}
LATER = {"excluded later": "fossalater", "excluded later title": "genettaheading"}


def _pdf(path: Path, words: str) -> None:
    import pymupdf

    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), words)
    doc.save(path)
    doc.close()


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def _vault(root: Path) -> Path:
    _write(
        root,
        "Home.md",
        f"# Home\n\nPublished {CONTROL} text, see [[Hidden]], [[Draft]], [[Plan]] and [[Later]].\n\n"
        f"Inline %%{CANARIES['inline comment']} here%% gone, `%%code%%` kept.\n\n"
        f"%%\nA block {CANARIES['comment block']}\n\nover two paragraphs\n%%\n\n"
        "## After\n\nThe last line.\n\n![[public.pdf]]\n",
    )
    _write(
        root,
        "Hidden.md",
        f"---\npublish: false\ntitle: {CANARIES['publish false title']}\n---\n"
        f"# Hidden\n\n{CANARIES['publish false']} #{CANARIES['publish false tag']}\n",
    )
    _write(root, "Draft.md", f"---\ndraft: true\n---\n\n{CANARIES['draft']} links [[Home]]\n")
    _write(root, "Private/Plan.md", f"# Plan\n\n{CANARIES['ignored folder']}\n")
    _write(
        root,
        "Later.md",
        f"# {LATER['excluded later title']}\n\n{LATER['excluded later']} is public for now [[Home]]\n",
    )
    _write(root, ".mnoteignore", "# private folders\nPrivate/\n")
    _write(root, "attachments/.mnoteignore", "secret.pdf\n")
    _pdf(root / "attachments/public.pdf", f"Attachment {CONTROL}")
    _pdf(root / "attachments/secret.pdf", f"Attachment {CANARIES['ignored attachment']}")
    return root


def _outputs(root: Path, out: Path) -> list[Path]:
    """Every file a reader of the output could see: the output folder, the workspace's sidecars."""
    files = [p for p in out.rglob("*") if p.is_file()]
    for top in [root / ".mnote", *root.rglob("*.ocr")]:
        files += [p for p in top.rglob("*") if p.is_file()]
    return files


def _db_words(out: Path) -> str:
    """Every value of every row of evidence.sqlite, and every term of its FTS index, as one text."""
    conn = connect(out)
    conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, evidence_fts, row)")
    parts = [row[0] for row in conn.execute("SELECT term FROM temp.terms")]
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
    for table in tables:
        try:
            rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
        except sqlite3.DatabaseError:  # FTS5 shadow tables' own checks
            continue
        parts += [str(v) for row in rows for v in row if isinstance(v, str)]
    conn.close()
    return "\n".join(parts)


def _found(root: Path, out: Path, word: str) -> list[str]:
    """Where `word` appears: the files (bytes, case-insensitive) and the database's rows."""
    needle = word.lower().encode()
    where = [str(p) for p in _outputs(root, out) if needle in p.read_bytes().lower()]
    if word.lower() in _db_words(out).lower():
        where.append("evidence.sqlite rows")
    return where


def _assert_private(root: Path, out: Path, canaries: dict[str, str]) -> None:
    assert _found(root, out, CONTROL), "the grep finds nothing, not even published text"
    leaks = {what: _found(root, out, word) for what, word in canaries.items()}
    assert not {what: where for what, where in leaks.items() if where}


def test_private_text_is_nowhere_in_the_output(tmp_path):
    root, out = _vault(tmp_path / "ws"), tmp_path / "out"
    report = run_build(root, out, site=True)
    _assert_private(root, out, CANARIES)
    assert report.excluded == {"ignored": 2, "unpublished": 2}
    paths = {r["source_root_relative_path"] for r in connect(out).execute("SELECT * FROM evidence_resource")}
    assert paths == {"Home.md", "Later.md", "attachments/public.pdf"}
    home = (out / "Home.html").read_text("utf-8")
    # a link to an excluded note is a missing link, its words as written (no title of the note)
    assert home.count("broken-link") == 3
    assert 'href="Later.html"' in home

    # a published note becomes excluded: gone in the next incremental build, with no tombstone
    later = (root / "Later.md").read_text("utf-8")
    (root / "Later.md").write_text("---\npublish: false\n---\n" + later, "utf-8")
    again = run_build(root, out, site=True)
    assert (again.stale, again.removed, again.site.tombstones) == (0, 1, 0)
    assert again.excluded == {"ignored": 2, "unpublished": 3}
    _assert_private(root, out, {**CANARIES, **LATER})
    assert not (out / "Later.html").exists()


def test_a_file_that_becomes_ignored_leaves_with_its_sidecars(tmp_path):
    root, out = _vault(tmp_path / "ws"), tmp_path / "out"
    _pdf(root / "attachments/later.pdf", "Attachment fossapdfword")
    run_build(root, out, site=True)
    assert _found(root, out, "fossapdfword")
    (root / "attachments/.mnoteignore").write_text("secret.pdf\nlater.pdf\n")
    report = run_build(root, out, site=True)
    assert (report.stale, report.removed, report.site.tombstones) == (0, 1, 0)
    _assert_private(root, out, {**CANARIES, "ignored later": "fossapdfword"})


def test_comments_are_blanked_and_the_rest_keeps_its_lines(tmp_path):
    root, out = _vault(tmp_path / "ws"), tmp_path / "out"
    run_build(root, out)
    rows = connect(out).execute(
        "SELECT text, line_range_json, char_range_json FROM evidence_block WHERE resource_id IN "
        "(SELECT resource_id FROM evidence_resource WHERE source_root_relative_path = 'Home.md')"
    )
    # a block's words, and its lines and chars in the note as written (the comment's characters blanked)
    blocks = {" ".join(r["text"].split()): r for r in rows}
    note = (root / "Home.md").read_text("utf-8")
    assert json.loads(blocks["Inline gone, %%code%% kept."]["line_range_json"]) == [5, 5]  # code: text
    assert json.loads(blocks["After"]["line_range_json"]) == [13, 13]
    start, end = json.loads(blocks["The last line."]["char_range_json"])
    assert note[start:end] == "The last line."
    assert not any("over two paragraphs" in t for t in blocks)


def test_comment_edges_as_obsidian_reads_them(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    _write(
        root,
        "Note.md",
        "```\n%% in a fence %%\n```\n\n"
        "two %%one%% and %%two%% comments\n\n"
        "a `code %%` span then %%hidden%% text\n\n"
        "~~~\n%%\n~~~\n\n"
        "open %% never closed\n\nso this is hidden too\n",
    )
    run_build(root, out)
    rows = connect(out).execute("SELECT text FROM evidence_block ORDER BY ordinal")
    texts = [" ".join(r["text"].split()) for r in rows]
    assert texts == ["%% in a fence %%", "two and comments", "a code %% span then text", "%%", "open"]


def test_an_ignored_file_is_never_opened(tmp_path):
    root, out = tmp_path / "ws", tmp_path / "out"
    _write(root, "Note.md", "# Note\n")
    _write(root, "Sub/.mnoteignore", "/pipe.md\n*.log\n!keep.log\n")
    os.mkfifo(root / "Sub/pipe.md")  # opened, a FIFO would block; scanned, it would be an error row
    os.mkfifo(root / "pipe.md")  # the anchored pattern is Sub's only: this one is scanned (and refused)
    _write(root, "Sub/a.log", "x")
    _write(root, "Sub/keep.log", "x")
    _write(root, "Sub/Deep/b.log", "x")
    report = run_build(root, out)
    paths = {r[0] for r in connect(out).execute("SELECT source_root_relative_path FROM evidence_resource")}
    assert paths == {"Note.md", "pipe.md", "Sub/keep.log"}
    assert report.excluded == {"ignored": 3, "unpublished": 0}


def test_the_build_summary_counts_excluded_files(tmp_path):
    root, out = _vault(tmp_path / "ws"), tmp_path / "out"
    args = [sys.executable, "-m", "mnote_evidence", "build", str(root), "--out", str(out), "--no-site"]
    done = subprocess.run([*args, "--json"], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["excluded"] == {"ignored": 2, "unpublished": 2}
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    assert "excluded 4 (2 by .mnoteignore, 2 publish: false or draft: true)" in done.stdout
