"""A source map's JSON is the same bytes whichever encoder `sidecars._compact` uses (the C encoder
made once, or `json`'s own when the running Python has none): sidecars are compared byte for byte."""

from __future__ import annotations

import json

from mnote_evidence.build.parse import sidecars

VALUES = [
    "plain",
    '线程 "quoted" \\ back\nslash\t\x00\x1f\u2028',
    "\ud800 lone surrogate",
    0,
    -7,
    2**70,
    1.5,
    0.1,
    1e300,
    -0.0,
    True,
    False,
    None,
    [],
    {},
    [1, [2, [3]]],
    {
        "id": "b-x",
        "type": "paragraph",
        "text": "ａｂｃ ½",
        "charRange": [0, 12],
        "lineRange": [1, 1],
        "links": [{"target": "note.md", "kind": "wikilink", "label": "Note › Part"}],
        "bbox": [0.5, 1.25, 3.0, 4.0],
    },
]


def test_compact_is_json_dumps_compact():
    for value in VALUES:
        assert sidecars._compact(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_a_source_map_is_the_same_without_the_c_encoder(monkeypatch):
    doc = {
        "schema": "s",
        "title": "线程",
        "blocks": VALUES[-1:] * 3,
        "sections": [],
        "warnings": [{"code": "x"}],
        "pages": [{"page": 1, "width": 595.0, "height": 842.0, "blocks": VALUES[-1:]}],
    }
    fast = sidecars.dumps(doc)
    assert sidecars._C_COMPACT is not None  # CPython: the fast path is what the line above used
    monkeypatch.setattr(sidecars, "_C_COMPACT", None)
    assert sidecars.dumps(doc) == fast
