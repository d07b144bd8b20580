"""One definition per request: the JSON Schema a spec emits (the MCP input schema) accepts exactly
what the same spec's `parse` (the handlers' validation) accepts, field by field and value by value."""

from __future__ import annotations

import jsonschema
import pytest

from mnote_evidence.functions.core.errors import BadRequest
from mnote_evidence.functions.core.validation import (
    BLOCK_ID,
    CHOICE,
    CHOICES,
    INTEGER,
    LOCATOR,
    TEXT,
    Field,
    RequestSpec,
)
from mnote_evidence.functions.handlers.routes import ROUTES

ODD_VALUES = [None, 0, -1, 3, 2.5, True, False, "", " ", "x", "3", "a\x00b", "线程", [], ["x"], {}, {"a": 1}]


def candidates(field: Field) -> list:
    """Values worth trying for this field: its edges, its neighbours, other types."""
    out = list(ODD_VALUES)
    if field.kind == TEXT:
        out += ["y" * field.max_len, "y" * (field.max_len + 1), "  \t ", " ok "]
    if field.kind == INTEGER:
        out += [field.lo, field.hi, field.lo - 1, field.hi + 1, field.default, float(field.lo)]
    if field.kind in (CHOICE, CHOICES):
        out += [
            *field.choices,
            "bogus",
            list(field.choices),
            [field.choices[0], "bogus"],
            [field.choices[0], 1],
        ]
    if field.kind == BLOCK_ID:
        out += ["b-abc", "b" * 64, "b" * 65]
    if field.kind == LOCATOR:
        out += [{"blockId": "b-abc"}, {"resourcePath": "a.pdf", "page": 2}]
    return out


def minimal(spec: RequestSpec) -> dict:
    """A request with every required field set to a valid value."""
    return {n: "words" for n, f in spec.fields.items() if f.required}


def accepted(spec: RequestSpec, request: dict) -> bool:
    try:
        spec.parse(request)
        return True
    except BadRequest:
        return False


SPECS = [pytest.param(r.spec, id=r.path) for r in ROUTES]


@pytest.mark.parametrize("spec", SPECS)
def test_schema_is_valid_json_schema_with_a_description_per_field(spec):
    schema = spec.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert all(p["description"] for p in schema["properties"].values())


@pytest.mark.parametrize("spec", SPECS)
def test_schema_and_validation_agree_on_every_candidate_value(spec):
    validator = jsonschema.Draft202012Validator(spec.json_schema())
    tried, disagreements = 0, []
    for name, field in spec.fields.items():
        for value in candidates(field):
            request = {**minimal(spec), name: value}
            if value is None:
                del request[name]  # null is tried below
            by_schema, by_parse = validator.is_valid(request), accepted(spec, request)
            tried += 1
            if by_schema != by_parse:
                disagreements.append((name, value, by_schema, by_parse))
    assert tried > 10 * max(1, len(spec.fields)) or not spec.fields
    assert not disagreements, disagreements[:5]


@pytest.mark.parametrize("spec", SPECS)
def test_null_is_absent_for_parse_and_left_out_of_the_schema(spec):
    for name, field in spec.fields.items():
        request = {**minimal(spec), name: None}
        assert accepted(spec, request) is (not field.required), name
        if not field.required:
            absent = {k: v for k, v in request.items() if k != name}
            assert spec.parse(request) == spec.parse(absent)


@pytest.mark.parametrize("spec", SPECS)
def test_unknown_fields_are_refused_by_both_and_the_message_names_them(spec):
    request = {**minimal(spec), "topk": 3}
    assert not jsonschema.Draft202012Validator(spec.json_schema()).is_valid(request)
    with pytest.raises(BadRequest, match="unknown field\\(s\\) topk"):
        spec.parse(request)


def test_required_fields_and_defaults_come_from_the_same_declaration():
    search = next(r for r in ROUTES if r.tool == "evidence_search").spec
    schema = search.json_schema()
    assert schema["required"] == ["query"]
    assert search.parse({"query": "x"})["topK"] == schema["properties"]["topK"]["default"] == 10
    assert schema["properties"]["mode"]["enum"] == ["fts", "graph", "hybrid"]
    with pytest.raises(BadRequest, match="'query' is required"):
        search.parse({})


def test_query_string_form_is_typed_by_the_fields():
    search = next(r for r in ROUTES if r.tool == "evidence_search").spec
    args = {"q": "线程", "topK": "3", "resourceKinds": "pdf,office", "includeOcr": "true", "extra": "1"}
    request = search.from_query(args)
    assert request == {
        "query": "线程",
        "topK": 3,
        "resourceKinds": ["pdf", "office"],
        "includeOcr": True,
        "extra": "1",
    }
    assert search.from_query({"topK": "many"})["topK"] == "many"  # left as text: parse says why
    with pytest.raises(BadRequest, match="'topK' must be an integer"):
        search.parse({"query": "x", **search.from_query({"topK": "many"})})


def test_every_route_with_a_tool_has_a_title_and_description():
    tools = [r for r in ROUTES if r.tool]
    assert {r.tool for r in tools} >= {
        "evidence_search",
        "evidence_read",
        "evidence_open",
        "knowledge_query",
        "knowledge_status",
    }
    assert all(r.title and len(r.description) > 40 for r in tools)
    assert len({r.path for r in ROUTES}) == len(ROUTES) and all(r.path.startswith("/-/") for r in ROUTES)
