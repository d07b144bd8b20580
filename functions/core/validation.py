"""Request validation for the query handlers (SPEC §9, §11): one definition per request.

Every handler takes a JSON-like dict from an untrusted client and declares what it
accepts as a `RequestSpec`: a tuple of `Field`s (name, type, range, default, required,
description). That one declaration
- validates (`RequestSpec.parse`): `BadRequest` (answered as 400 with the message) for
  unknown fields, wrong types, NUL characters, values out of range; it never coerces
  silently and never touches SQL;
- describes (`RequestSpec.json_schema`): the JSON Schema an MCP client is given as the
  tool's input schema (`functions/adapters/mcp_server.py`), so the schema cannot drift from the checks;
- reads a query string (`RequestSpec.from_query`): the HTTP adapters' GET form (lists
  comma-separated, integers and flags from text), typed by the same fields.
Invariant: the schema and `parse` accept the same requests, except that `parse` also
takes null for "absent", refuses a lone surrogate anywhere (`NOT_UNICODE`) and an inverted `bbox`,
and refuses what only the data can tell (an FTS query with nothing to search for, a page beyond the
document, an unknown block):
`tests/functions/test_request_specs.py` checks the two agree value by value.
The `get_*` helpers are the per-kind readers `Field.read` uses (and the messages clients see).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mnote_evidence.functions.core.errors import BadRequest

MAX_QUERY_CHARS = 1000
MAX_BLOCK_ID_CHARS = 64
MAX_PATH_CHARS = 4096

# Field kinds: what `Field.read` checks and what `Field.schema` says
TEXT, INTEGER, CHOICE, CHOICES, FLAG, BLOCK_ID, LOCATOR = (
    "text",
    "integer",
    "choice",
    "choices",
    "flag",
    "blockId",
    "locator",
)
TRUE_WORDS = ("1", "true", "yes")


NOT_UNICODE = "the request holds a lone surrogate (not valid Unicode)"


def has_lone_surrogate(value: Any) -> bool:
    """True when a string anywhere in `value` (a JSON-like dict, list or string; keys too) cannot be
    encoded: it holds a lone surrogate, which `json.loads` accepts and nothing downstream can write."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def check_fields(request: dict, allowed: set[str]) -> None:
    unknown = sorted(set(request) - allowed)
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def get_str(request: dict, key: str, *, required: bool = False, max_len: int = MAX_QUERY_CHARS) -> str | None:
    value = request.get(key)
    if value is None:
        if required:
            raise BadRequest(f"'{key}' is required")
        return None
    if not isinstance(value, str):
        raise BadRequest(f"'{key}' must be a string")
    if "\x00" in value:
        raise BadRequest(f"'{key}' must not contain NUL characters")
    if len(value) > max_len:
        raise BadRequest(f"'{key}' is longer than {max_len} characters")
    if required and not value.strip():
        raise BadRequest(f"'{key}' must not be empty")
    return value


def get_int(request: dict, key: str, default: int, lo: int, hi: int) -> int:
    value = request.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 3.0 is the integer 3 (as JSON Schema says)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"'{key}' must be an integer from {lo} to {hi}")
    if not lo <= value <= hi:
        raise BadRequest(f"'{key}' must be from {lo} to {hi} (got {value})")
    return value


def get_choice(request: dict, key: str, default: str, choices: tuple[str, ...]) -> str:
    value = request.get(key, default)
    if value not in choices:
        raise BadRequest(f"'{key}' must be one of {', '.join(choices)}")
    return value


def get_choices(request: dict, key: str, choices: tuple[str, ...]) -> list[str] | None:
    """A list drawn from `choices`; None when absent or empty (no filter)."""
    value = request.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise BadRequest(f"'{key}' must be a list of strings")
    bad = [k for k in value if k not in choices]
    if bad:
        raise BadRequest(f"unknown {key} {bad}; use {', '.join(choices)}")
    return value or None


def get_bool(request: dict, key: str) -> bool:
    value = request.get(key, False)
    if not isinstance(value, bool):
        raise BadRequest(f"'{key}' must be true or false")
    return value


NO_BLOCK = "give 'blockId' (a string) or a 'locator' with a blockId"


def _checked_block_id(block_id: Any) -> str:
    if not isinstance(block_id, str) or not block_id:
        raise BadRequest(NO_BLOCK)
    if len(block_id) > MAX_BLOCK_ID_CHARS or "\x00" in block_id:
        raise BadRequest("'blockId' is not a block id")
    return block_id


def get_block_id(request: dict) -> str:
    """`blockId`, or the `blockId` of a given `locator`."""
    block_id = request.get("blockId")
    locator = request.get("locator")
    if block_id is None and isinstance(locator, dict):
        block_id = locator.get("blockId")
    return _checked_block_id(block_id)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def check_locator(locator: Any) -> None:
    """A locator's fields that say where to open, checked as `schemas/locator.schema.json` says them:
    `page` an integer from 1, `bbox` four finite numbers from 0 with x0 < x1 and y0 < y1, and only
    with a `page`; `blockId` and `resourcePath` strings. Other fields of a returned locator pass."""
    if not isinstance(locator, dict):
        raise BadRequest(NO_BLOCK)
    if locator.get("blockId") is not None:
        _checked_block_id(locator["blockId"])
    path = locator.get("resourcePath")
    if path is not None and (not isinstance(path, str) or "\x00" in path or len(path) > MAX_PATH_CHARS):
        raise BadRequest("'resourcePath' must be a file's path in the workspace (a string)")
    page, bbox = locator.get("page"), locator.get("bbox")
    if page is not None and not (isinstance(page, int) and not isinstance(page, bool) and page >= 1):
        raise BadRequest("'page' must be an integer from 1")
    if bbox is None:
        return
    if page is None:
        raise BadRequest("a 'bbox' needs the 'page' it is on")
    if not (isinstance(bbox, list) and len(bbox) == 4 and all(_is_number(v) and v >= 0 for v in bbox)):
        raise BadRequest("'bbox' must be [x0, y0, x1, y1]: four finite numbers from 0")
    if not (bbox[0] < bbox[2] and bbox[1] < bbox[3]):
        raise BadRequest("'bbox' must be [x0, y0, x1, y1] with x0 < x1 and y0 < y1")


@dataclass(frozen=True)
class Field:
    """One request field: its check (`read`), JSON Schema (`schema`) and query-string form (`from_text`)."""

    name: str
    kind: str
    description: str
    required: bool = False
    default: Any = None
    lo: int = 0
    hi: int = 0
    max_len: int = MAX_QUERY_CHARS
    choices: tuple[str, ...] = ()

    def read(self, request: dict) -> Any:
        if self.kind == TEXT:
            return get_str(request, self.name, required=self.required, max_len=self.max_len)
        if self.kind == INTEGER:
            return get_int(request, self.name, self.default, self.lo, self.hi)
        if self.kind == CHOICE:
            return get_choice(request, self.name, self.default, self.choices)
        if self.kind == CHOICES:
            return get_choices(request, self.name, self.choices)
        if self.kind == FLAG:
            return get_bool(request, self.name)
        value = request.get(self.name)  # BLOCK_ID / LOCATOR: either may be given (`get_block_id` picks)
        if value is not None and self.kind == BLOCK_ID:
            _checked_block_id(value)
        elif value is not None:
            check_locator(value)
        return value

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any]
        if self.kind == TEXT:  # no NUL; when required, something besides spaces
            out = {
                "type": "string",
                "maxLength": self.max_len,
                "pattern": r"^[^\u0000]*[^\u0000\s][^\u0000]*$" if self.required else r"^[^\u0000]*$",
            }
        elif self.kind == INTEGER:
            out = {"type": "integer", "minimum": self.lo, "maximum": self.hi, "default": self.default}
        elif self.kind == CHOICE:
            out = {"type": "string", "enum": list(self.choices), "default": self.default}
        elif self.kind == CHOICES:
            out = {
                "type": "array",
                "items": {"type": "string", "enum": list(self.choices)},
                "uniqueItems": True,
            }
        elif self.kind == FLAG:
            out = {"type": "boolean", "default": False}
        elif self.kind == BLOCK_ID:
            out = {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_BLOCK_ID_CHARS,
                "pattern": r"^[^\u0000]*$",
            }
        else:  # LOCATOR: an EvidenceLocator as returned (`source`), or {resourcePath, page, bbox}
            out = {
                "type": "object",
                "properties": {
                    "blockId": {"type": "string", "minLength": 1, "maxLength": MAX_BLOCK_ID_CHARS},
                    "resourcePath": {"type": "string"},
                    "page": {"type": "integer", "minimum": 1},
                    "bbox": {
                        "type": "array",
                        "items": {"type": "number", "minimum": 0},
                        "minItems": 4,
                        "maxItems": 4,
                        "description": "[x0, y0, x1, y1], x0 < x1 and y0 < y1, with the 'page' it is on",
                    },
                },
                "dependentRequired": {"bbox": ["page"]},
            }
        return {**out, "description": self.description}

    def from_text(self, value: str) -> Any:
        """A query-string value as this field's type (left as text when it is not one: `read` says why)."""
        if self.kind == CHOICES:
            return [v for v in value.split(",") if v]
        if self.kind == INTEGER:
            try:
                return int(value)
            except ValueError:
                return value
        if self.kind == FLAG:
            return value.lower() in TRUE_WORDS
        return value


class RequestSpec:
    """What one handler accepts: its fields, in the order clients see them."""

    def __init__(self, *fields: Field, one_of: tuple[str, ...] = ()):
        self.fields = {f.name: f for f in fields}
        # give at least one of these: said in the schema's description, checked by the handler
        self.one_of = one_of

    def parse(self, request: dict) -> dict[str, Any]:
        """Every field's checked value (defaults filled in); `BadRequest` for anything else.
        A field given as null is absent (agents often send null for what they leave out)."""
        if has_lone_surrogate(request):  # before any message could quote it
            raise BadRequest(NOT_UNICODE)
        check_fields(request, set(self.fields))
        given = {k: v for k, v in request.items() if v is not None}
        return {name: f.read(given) for name, f in self.fields.items()}

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {n: f.schema() for n, f in self.fields.items()},
            "additionalProperties": False,
        }
        required = [n for n, f in self.fields.items() if f.required]
        if required:
            schema["required"] = required
        if self.one_of:
            schema["description"] = f"Give {' or '.join(repr(n) for n in self.one_of)}."
        return schema

    def from_query(self, args: Any) -> dict[str, Any]:
        """Query-string parameters (`keys()` + `get()`, first value wins) -> a typed request; `q` is `query`.
        Unknown parameters are kept as text, so `parse` names them."""
        out: dict[str, Any] = {}
        for key in _keys(args):
            value = args.get(key)
            field = self.fields.get(key)
            out[key] = field.from_text(value) if field else value
        if "q" in out and "query" not in out:
            out["query"] = out.pop("q")
        return out


def _keys(args: Any) -> Iterable[str]:
    seen: dict[str, None] = {}
    for key in args.keys():
        seen.setdefault(key)
    return seen
