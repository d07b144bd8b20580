"""A batch of notes is parsed without the cyclic GC's young collections (`parse._young_gc_deferred`):
one collection after the batch instead of one every 700 allocations; other files keep the GC."""

from __future__ import annotations

import gc

from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.run import parse_many


def _collections_during(root, files) -> list[int]:
    seen: list[int] = []

    def count(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        results = parse_many(str(root), files, OcrSettings())
    finally:
        gc.callbacks.remove(count)
    assert all(not hasattr(r, "code") for r in results), results  # parsed, not errors
    return seen


def test_a_batch_of_notes_is_parsed_with_one_young_collection(tmp_path):
    body = "".join(
        f"## Part {i}\n\nA paragraph with [[link {i}]] and #tag{i}, 线程作用域。\n\n" for i in range(200)
    )
    files = []
    for i in range(8):
        (tmp_path / f"n{i}.md").write_text(f"---\ntags: [t{i}]\n---\n# Note {i}\n\n{body}", "utf-8")
        files.append((f"n{i}.md", "h"))
    assert gc.isenabled()
    assert _collections_during(tmp_path, files) == [0]  # without the pause: hundreds
    assert gc.isenabled()


def test_other_files_are_parsed_with_the_gc_as_usual(tmp_path, monkeypatch):
    from mnote_evidence.build.parse import run as parse

    enabled: list[tuple[str, bool]] = []
    real = parse.parse_one
    monkeypatch.setattr(
        parse,
        "parse_one",
        lambda root, path, *a: enabled.append((path, gc.isenabled())) or real(root, path, *a),
    )
    (tmp_path / "a.txt").write_text("plain text\n", "utf-8")
    (tmp_path / "n.md").write_text("# Note\n\ntext\n", "utf-8")
    parse_many(str(tmp_path), [("n.md", "h"), ("a.txt", "h")], OcrSettings())
    parse_many(str(tmp_path), [("n.md", "h")], OcrSettings())
    assert enabled == [("n.md", True), ("a.txt", True), ("n.md", False)]
    assert gc.isenabled()
