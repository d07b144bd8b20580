"""`@Entity` mentions in notes (SPEC §6 `block_mentions_entity`; docs/guides/writing-notes.md): one real
build of a small vault with the site, checked on its evidence.sqlite edges and its HTML pages."""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest

from tests.conftest import connect, run_build

HOSTILE = "<script>alert('x')</script> & co"
NOTES = {
    "Alpha.md": (
        "# Alpha\n\n"
        'We met @Ada and @"Ada Lovelace" at the @Analytical-Engine.\n\n'
        "Write to ada@example.org or see https://example.org/@Mailer and <https://example.org/@Auto>.\n\n"
        "Code `@Inline` stays code.\n\n"
        "```\n@Fenced in a block\n```\n\n"
        f'A hostile name: @"{HOSTILE}" here.\n'
    ),
    "Beta.md": '# Beta\n\nNotes on @"ada   LOVELACE" and her notes.\n\nNothing here.\n',
}


def _edges(out):
    return {
        (r["to_id"], r["text"], r["from_id"] == r["source_block_id"], r["created_by"])
        for r in connect(out).execute(
            "SELECT e.from_id, e.to_id, e.source_block_id, e.created_by, b.text FROM evidence_edge e "
            "JOIN evidence_block b ON b.block_id = e.source_block_id "
            "WHERE e.edge_type = 'block_mentions_entity'"
        )
    }


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    root = tmp_path_factory.mktemp("mentions") / "ws"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, "utf-8")
    out = root.parent / "out"
    run_build(root, out, site=True)
    return root, out


def test_mentions_are_edges_from_their_block(vault):
    _, out = vault
    edges = _edges(out)
    to_ids = {e[0] for e in edges}
    assert to_ids == {
        "entity:ada",
        "entity:ada lovelace",
        "entity:analytical-engine",
        f"entity:{HOSTILE.casefold()}",
    }
    assert all(e[2] and e[3] == "mnote-evidence build" for e in edges)
    lovelace = {e[1] for e in edges if e[0] == "entity:ada lovelace"}
    # one entity for both spellings; the block text shows the mention as written, without quotes
    assert lovelace == {
        "We met @Ada and @Ada Lovelace at the @Analytical-Engine.",
        "Notes on @ada   LOVELACE and her notes.",
    }


def test_email_url_and_code_are_not_mentions(vault):
    _, out = vault
    texts = " ".join(e[0] for e in _edges(out))
    for word in ("example", "mailer", "auto", "inline", "fenced"):
        assert word not in texts


def _page(out, rel: str) -> str:
    return (out / rel).read_text("utf-8")


def _mention_links(html: str) -> dict[str, str]:
    return {m[1]: m[0] for m in re.findall(r'<a class="mention" href="([^"]+)">([^<]*)</a>', html)}


def test_mention_links_its_entity_page(vault):
    _, out = vault
    links = _mention_links(_page(out, "Alpha.html"))
    assert set(links) == {
        "@Ada",
        "@Ada Lovelace",
        "@Analytical-Engine",
        "@&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; co",
    }
    entity = _page(out, unquote(links["@Ada Lovelace"]))
    assert "<h1>@Ada Lovelace</h1>" in entity
    # every block mentioning it, from both notes, each linking its anchor
    anchors = set(re.findall(r'href="([^"#]+\.html)#([^"]+)"', entity))
    beta = {a for a in anchors if a[0].endswith("Beta.html")}
    alpha = {a for a in anchors if a[0].endswith("Alpha.html")}
    assert len(beta) == 1 and len(alpha) == 1
    ids = {r[0] for r in connect(out).execute("SELECT block_id FROM evidence_block")}
    assert {a[1] for a in beta | alpha} <= ids
    assert "Nothing here." not in entity
    index = _page(out, "_entities/index.html")
    assert "@ada lovelace" in index.lower() and ">2<" in index.replace(" ", "")


def test_hostile_name_is_escaped(vault):
    _, out = vault
    pages = [p for p in out.rglob("*.html")]
    assert not any(HOSTILE in p.read_text("utf-8") for p in pages)
    links = _mention_links(_page(out, "Alpha.html"))
    href = links["@&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; co"]
    assert href.startswith("_entities/") and "<" not in unquote(href) and '"' not in unquote(href)
    page = _page(out, unquote(href))
    assert "&lt;script&gt;" in page


def test_edit_drops_the_mention(vault, tmp_path):
    root, out = vault
    (root / "Beta.md").write_text("# Beta\n\nNotes on her notes.\n", "utf-8")
    run_build(root, out, site=True)
    lovelace = {e[1] for e in _edges(out) if e[0] == "entity:ada lovelace"}
    assert lovelace == {"We met @Ada and @Ada Lovelace at the @Analytical-Engine."}
    entity = _page(out, unquote(_mention_links(_page(out, "Alpha.html"))["@Ada Lovelace"]))
    assert not re.search(r'href="[^"]*Beta\.html#', entity)
