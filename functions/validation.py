"""Request validation for the query handlers (SPEC §9, §11): one place, no handler state.

Every handler takes a JSON-like dict from an untrusted client. These helpers
read one field each and raise `BadRequest` (answered as 400 with the message)
for anything unexpected: unknown fields, wrong types, NUL characters, values
out of range. They never coerce silently and never touch SQL.
"""

from __future__ import annotations

from mnote_evidence.functions.errors import BadRequest

MAX_QUERY_CHARS = 1000
MAX_BLOCK_ID_CHARS = 64


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


def get_block_id(request: dict) -> str:
    """`blockId`, or the `blockId` of a given `locator`."""
    block_id = request.get("blockId")
    locator = request.get("locator")
    if block_id is None and isinstance(locator, dict):
        block_id = locator.get("blockId")
    if not isinstance(block_id, str) or not block_id:
        raise BadRequest("give 'blockId' (a string) or a 'locator' with a blockId")
    if len(block_id) > MAX_BLOCK_ID_CHARS or "\x00" in block_id:
        raise BadRequest("'blockId' is not a block id")
    return block_id
