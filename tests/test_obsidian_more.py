"""Obsidian syntax a vault owner expects on the page (docs/guides/obsidian.md): image sizes, links in
front-matter properties, note embeds drawn as the embedded note's own blocks. One real build of a
small vault with the site, checked on its HTML and its evidence.sqlite."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.conftest import connect, run_build

SIZES = """# Sizes

![[img.png|400]]

![[img.png|400x300]]

![[img.png|A caption|400]]

![A picture|250](img.png)

![A picture|250x100](img.png)

![Plain alt](img.png)

![[img.png|Only a caption]]
"""

PROPS = """---
related: ["[[Other]]", "[[Second|Bee]]"]
up: "[[Other#Part one]]"
source: https://example.org/a?b=1&c=2
plain: "<b>not bold</b> [[Nowhere]]"
---
# Props

Body text.
"""

OTHER = """# Other

## Part one

Other's own text.
"""

SOURCE = """# Source

Intro with **bold** and a [[Other]] link.

## Part

- item one
- item two ^item2

| a | b |
| - | - |
| 1 | 2 |

```python
print("hi")
```

![[img.png|120]]

A paragraph with an anchor. ^para

## Later

Later text.
"""

EMBEDDER = """# Embedder

![[Source]]

![[Source#Part]]

![[Source#^para]]

![[Source#^item2]]
"""


def png(path) -> None:
    from PIL import Image

    Image.new("RGB", (8, 6), (200, 30, 30)).save(path)


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    """(workspace, out, report) of one build of the vault above, with its site."""
    base = tmp_path_factory.mktemp("obsidian_more")
    ws, out = base / "ws", base / "out"
    ws.mkdir()
    png(ws / "img.png")
    for name, text in {
        "Sizes.md": SIZES,
        "Props.md": PROPS,
        "Other.md": OTHER,
        "Second.md": "# Second\n\nSecond text.\n",
        "Source.md": SOURCE,
        "Embedder.md": EMBEDDER,
    }.items():
        (ws / name).write_text(text, "utf-8")
    report = run_build(ws, out, site=True)
    return ws, out, report


def page(out, name: str) -> str:
    return (out / name).read_text("utf-8")


def imgs(html: str) -> list[str]:
    return re.findall(r"<img [^>]*>", html)


def test_image_sizes_become_width_and_height(vault):
    _, out, _ = vault
    shown = imgs(page(out, "Sizes.html"))
    assert len(shown) == 7, shown
    wide, both, captioned, md_wide, md_both, plain, caption_only = shown
    assert 'alt="img.png"' in wide and 'width="400"' in wide and "height" not in wide
    assert 'alt="400"' not in page(out, "Sizes.html")
    assert 'width="400"' in both and 'height="300"' in both
    assert 'alt="A caption"' in captioned and 'width="400"' in captioned
    assert 'alt="A picture"' in md_wide and 'width="250"' in md_wide and "|" not in md_wide
    assert 'width="250"' in md_both and 'height="100"' in md_both
    assert 'alt="Plain alt"' in plain and "width" not in plain
    assert 'alt="Only a caption"' in caption_only and "width" not in caption_only


def test_image_size_is_not_indexed_as_text(vault):
    _, out, _ = vault
    conn = connect(out)
    texts = [
        r["text"]
        for r in conn.execute(
            "SELECT text FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = 'Sizes.md' AND b.kind = 'paragraph' ORDER BY ordinal"
        )
    ]
    conn.close()
    assert texts[:5] == ["img.png", "img.png", "A caption", "A picture", "A picture"]


def properties_html(html: str) -> str:
    return html.split('<ul class="properties block"', 1)[1].split("</ul>", 1)[0]


def test_links_in_properties_are_links_on_the_page(vault):
    _, out, _ = vault
    props = properties_html(page(out, "Props.html"))
    assert '<a class="wikilink" href="Other.html">Other</a>' in props
    assert '<a class="wikilink" href="Second.html">Bee</a>' in props
    assert re.search(r'<a class="wikilink" href="Other.html#b-[0-9a-z]+">Other › Part one</a>', props)
    assert '<a class="external" href="https://example.org/a?b=1&amp;c=2" rel="noopener noreferrer">' in props
    # input stays text: markup escaped, a link to nothing marked missing
    assert "&lt;b&gt;not bold&lt;/b&gt;" in props and "<b>" not in props
    assert 'class="broken-link"' in props and "Nowhere" in props


def test_links_in_properties_are_edges_and_backlinks(vault):
    _, out, _ = vault
    conn = connect(out)
    rows = {
        (r["kind"], r["target"], r["target_path"])
        for r in conn.execute(
            "SELECT l.kind, l.target, l.target_path FROM evidence_link l JOIN evidence_block b "
            "ON b.block_id = l.source_block_id JOIN evidence_resource r ON r.resource_id = l.resource_id "
            "WHERE r.source_root_relative_path = 'Props.md' AND b.kind = 'properties'"
        )
    }
    edges = {
        r[0]
        for r in conn.execute(
            "SELECT t.source_root_relative_path FROM evidence_edge e JOIN evidence_resource t "
            "ON t.resource_id = e.to_id JOIN evidence_resource s ON s.resource_id = e.from_id "
            "WHERE s.source_root_relative_path = 'Props.md'"
        )
    }
    conn.close()
    assert {
        ("wikilink", "Other", "Other.md"),
        ("wikilink", "Second", "Second.md"),
        ("wikilink", "Other#Part one", "Other.md"),
        ("link", "https://example.org/a?b=1&c=2", None),
    } <= rows
    assert {"Other.md", "Second.md"} <= edges
    assert 'href="Props.html' in page(out, "Second.html").split('class="backlinks"', 1)[1]


def embeds(html: str) -> list[str]:
    """The embedded notes of a page, each its container's HTML."""
    parts = html.split('<div class="embed embed-note"')[1:]
    return [part.split("</div><!-- embed -->", 1)[0] for part in parts]


def test_note_embeds_show_the_blocks_as_blocks(vault):
    _, out, _ = vault
    html = page(out, "Embedder.html")
    whole, section, para, item = embeds(html)
    assert "<strong>bold</strong>" in whole
    assert re.search(r"<h2[^>]*>.*Part</h2>", whole)
    assert re.search(r"<li[^>]*>.*item two", whole) and "<ul" in whole
    assert "<table" in whole and "<td>2</td>" in whole
    assert re.search(r'<pre><code class="[^"]*language-python">print', whole)
    assert re.search(r'<img [^>]*src="img.png"[^>]*width="120"', whole)
    assert '<a class="wikilink" href="Other.html">Other</a>' in whole
    assert "Later text." in whole
    # a heading's section: its own blocks only
    assert "item two" in section and "<table" in section and "Later text." not in section
    assert "Intro with" not in section
    # one block
    assert "A paragraph with an anchor." in para and "item two" not in para and "<h2" not in para
    assert re.search(r"<ul>\s*<li[^>]*>.*item two", item) and "item one" not in item


def test_embedded_blocks_link_their_source_and_keep_ids_unique(vault):
    _, out, _ = vault
    conn = connect(out)
    source_ids = [
        r[0]
        for r in conn.execute(
            "SELECT block_id FROM evidence_block b JOIN evidence_resource r USING (resource_id) "
            "WHERE r.source_root_relative_path = 'Source.md'"
        )
    ]
    conn.close()
    html = page(out, "Embedder.html")
    ids = Counter(re.findall(r'\bid="([^"]+)"', html))
    assert [i for i, n in ids.items() if n > 1] == []
    assert not set(source_ids) & set(ids)  # the source's anchors live on its own page
    assert "^para" not in ids
    whole = embeds(html)[0]
    linked = set(re.findall(r'class="embed-source"[^>]*href="Source.html#([^"]+)"', whole))
    assert linked == set(source_ids)  # every block of the whole-note embed links its anchor


def test_an_edit_of_the_embedded_note_redraws_the_embedding_page(vault, tmp_path):
    ws, out, _ = vault
    (ws / "Source.md").write_text(SOURCE.replace("**bold**", "*bold*"), "utf-8")
    report = run_build(ws, out, site=True)
    assert "<em>bold</em>" in embeds(page(out, "Embedder.html"))[0]
    assert report.site.pages_written <= 3, report.site.pages_written  # Source, Embedder (+ the front page)
