"""A Word document's pictures on its page: at their place, extracted once into the site, described by
Word's alt text; its text blocks and their locators as without them. A real build with the site."""

from __future__ import annotations

import re

import pytest

from tests.conftest import connect, run_build


def red_square(path) -> bytes:
    from PIL import Image

    Image.new("RGB", (12, 12), (220, 20, 20)).save(path)
    return path.read_bytes()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import docx

    base = tmp_path_factory.mktemp("docx_pictures")
    ws, out = base / "ws", base / "out"
    ws.mkdir()
    png = red_square(base / "red.png")
    doc = docx.Document()
    doc.add_paragraph("Before the picture.")
    alone = doc.add_paragraph().add_run().add_picture(str(base / "red.png"))
    alone._inline.docPr.set("descr", 'A red <square> "one"')
    para = doc.add_paragraph("Text and picture ")
    para.add_run().add_picture(str(base / "red.png"))
    doc.add_paragraph("After.")
    doc.save(ws / "Pictures.docx")
    run_build(ws, out, site=True)
    return ws, out, png


def test_pictures_are_shown_at_their_place(built):
    _, out, png = built
    html = (out / "Pictures.docx.html").read_text("utf-8")
    figures = re.findall(r'<figure class="picture"><img src="([^"]+)" alt="([^"]*)"', html)
    assert [alt for _, alt in figures] == ["A red &lt;square&gt; &#34;one&#34;", ""]
    for src, _ in figures:
        assert (out / src).read_bytes() == png
    assert figures[0][0] == figures[1][0]  # one part, one file
    assert html.index("Before the picture.") < html.index("<figure") < html.index("Text and picture")
    assert html.index("Text and picture") < html.rindex("<figure") < html.index("After.")


def test_text_blocks_and_locators_are_unchanged(built):
    _, out, _ = built
    conn = connect(out)
    rows = conn.execute("SELECT kind, text, paragraph_index FROM evidence_block ORDER BY ordinal").fetchall()
    conn.close()
    assert [tuple(r) for r in rows] == [
        ("paragraph", "Before the picture.", 1),
        ("paragraph", "Text and picture", 3),
        ("paragraph", "After.", 4),
    ]


def test_pictures_are_extracted_once(built):
    ws, out, _ = built
    files = sorted((out / "_pages").rglob("media/*"))
    assert len(files) == 1
    stamp = files[0].stat().st_mtime_ns
    (ws / "Other.md").write_text("# Other\n", "utf-8")
    run_build(ws, out, site=True)
    assert sorted((out / "_pages").rglob("media/*")) == files and files[0].stat().st_mtime_ns == stamp
