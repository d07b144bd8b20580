"""Private text never reaches LightRAG: `%%comments%%`, excluded notes and ignored files are not in the
text sent (`knowledge_text`) nor anywhere in a real lightrag-server's storage (`tests/test_private.py`)."""

from __future__ import annotations

from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from tests.conftest import connect, run_build
from tests.test_private import CANARIES, CONTROL, LATER, _vault


def _sent(out) -> str:
    return "\n".join(r[0] for r in connect(out).execute("SELECT text FROM knowledge_text")).lower()


def test_lightrag_holds_no_private_text(lightrag, tmp_path):
    root, out = _vault(tmp_path / "ws"), tmp_path / "out"
    run_build(root, out)  # indexed first: the next build sends the unchanged notes as read back from disk
    run_build(root, out, lightrag=LightRagConfig(lightrag.url))
    stored = b"\n".join(p.read_bytes() for p in lightrag.base.rglob("*") if p.is_file()).lower()
    assert CONTROL in _sent(out) and CONTROL.encode() in stored
    assert [w for w in CANARIES.values() if w in _sent(out) or w.encode() in stored] == []

    later = (root / "Later.md").read_text("utf-8")
    (root / "Later.md").write_text("---\npublish: false\n---\n" + later, "utf-8")
    report = run_build(root, out, lightrag=LightRagConfig(lightrag.url))
    assert report.knowledge["deleted"] == 1
    assert [w for w in LATER.values() if w in _sent(out)] == []
