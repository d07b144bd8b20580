"""Errors a handler can answer with, and the one place they become (status, body)."""

from __future__ import annotations

import logging
from typing import Any, Callable

from mnote_evidence.build.redact import redact

log = logging.getLogger("mnote_evidence.functions")


class HandlerError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code


class BadRequest(HandlerError):
    pass


class NotFound(HandlerError):
    status = 404
    code = "not_found"


class Gone(HandlerError):
    status = 410
    code = "stale"


class IndexIncompatible(HandlerError):
    """evidence.sqlite was written by a build of another schema or segmentation: rebuild it."""

    status = 503
    code = "index_incompatible"


def call(handler: Callable[[dict], dict], request: Any) -> tuple[int, dict]:
    """Run a pure handler; bad input becomes a 4xx with a message, a bug a 500 without a traceback."""
    if not isinstance(request, dict):
        return 400, {"ok": False, "error": {"code": "bad_request", "message": "request must be a JSON object"}}
    try:
        return 200, handler(request)
    except HandlerError as exc:
        return exc.status, {"ok": False, "error": {"code": exc.code, "message": redact(exc.message)}}
    except Exception:  # never leak a traceback to a client
        log.exception("handler failed")
        return 500, {"ok": False, "error": {"code": "internal_error", "message": "internal error; see server log"}}
