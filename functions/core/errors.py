"""Errors a handler can answer with, and the one place they become (status, body)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from mnote_evidence.build.core.redact import redact
from mnote_evidence.build.core.sqlite_ro import unavailable

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


class IndexUnavailable(HandlerError):
    """evidence.sqlite is being written, or a killed build left a journal this reader may not roll back."""

    status = 503
    code = "index_unavailable"


UNAVAILABLE_HINT = (
    "the index is being updated, or a build was interrupted and its journal could not be rolled "
    "back from here; retry shortly, or run the build again"
)


def call(handler: Callable[[dict], dict], request: Any) -> tuple[int, dict]:
    """Run a pure handler; bad input becomes a 4xx with a message, a bug a 500 without a traceback."""
    if not isinstance(request, dict):
        return 400, {
            "ok": False,
            "error": {"code": "bad_request", "message": "request must be a JSON object"},
        }
    try:
        return 200, handler(request)
    except HandlerError as exc:
        return exc.status, {"ok": False, "error": {"code": exc.code, "message": redact(exc.message)}}
    except sqlite3.OperationalError as exc:
        if not unavailable(exc):
            log.exception("handler failed")
            return 500, {
                "ok": False,
                "error": {"code": "internal_error", "message": "internal error; see server log"},
            }
        return IndexUnavailable.status, {
            "ok": False,
            "error": {"code": IndexUnavailable.code, "message": UNAVAILABLE_HINT},
        }
    except Exception:  # never leak a traceback to a client
        log.exception("handler failed")
        return 500, {
            "ok": False,
            "error": {"code": "internal_error", "message": "internal error; see server log"},
        }
