"""The anchor map: retired ids point at their most similar successor."""

from __future__ import annotations

from mnote_evidence.build.index.anchors import OldBlock, best_successor
from tests.conftest import connect, run_build


def test_best_successor_prefers_similar_text_nearby():
    new = [
        OldBlock("b-a", 0, "Totally different"),
        OldBlock("b-b", 1, "The retention period is eight years."),
        OldBlock("b-c", 2, "Unrelated text here"),
    ]
    assert best_successor(OldBlock("b-old", 1, "The retention period is seven years."), new)[0] == "b-b"
    assert best_successor(OldBlock("b-old", 1, "量子色动力学"), new) == (None, 0.0)


def test_edit_records_alias_and_chains_and_undo_clears(workspace, tmp_path):
    out = tmp_path / "out"
    note = workspace / "Archive/Old Ideas.md"
    original = note.read_text("utf-8")
    run_build(workspace, out)
    conn = connect(out)
    sentence = "An early idea was to OCR every PDF."
    (first_id,) = conn.execute(
        "SELECT block_id FROM evidence_block WHERE text LIKE ?", [sentence + "%"]
    ).fetchone()
    conn.close()

    note.write_text(original.replace("to OCR every PDF", "to OCR each and every PDF"), "utf-8")
    run_build(workspace, out)
    conn = connect(out)
    (second_id,) = conn.execute(
        "SELECT block_id FROM evidence_block WHERE text LIKE 'An early idea%'"
    ).fetchone()
    assert (
        conn.execute(
            "SELECT successor_block_id FROM evidence_anchor WHERE old_block_id = ?", [first_id]
        ).fetchone()[0]
        == second_id
    )
    conn.close()

    note.write_text(original.replace("to OCR every PDF", "to OCR all PDFs"), "utf-8")
    run_build(workspace, out)
    conn = connect(out)
    (third_id,) = conn.execute(
        "SELECT block_id FROM evidence_block WHERE text LIKE 'An early idea%'"
    ).fetchone()
    aliases = dict(conn.execute("SELECT old_block_id, successor_block_id FROM evidence_anchor"))
    assert aliases[first_id] == third_id and aliases[second_id] == third_id  # chained
    conn.close()

    note.write_text(original, "utf-8")  # undo: the first id is live again, not an alias
    run_build(workspace, out)
    conn = connect(out)
    aliases = dict(conn.execute("SELECT old_block_id, successor_block_id FROM evidence_anchor"))
    assert first_id not in aliases and aliases[third_id] == first_id
