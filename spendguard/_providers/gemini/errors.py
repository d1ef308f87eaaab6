"""Errors in Gemini's own shape, as its SDK parses them."""

from __future__ import annotations

from typing import Any

__all__ = ["error_body"]

# Google's canonical status names (google.rpc.Code) for the statuses the gateway answers with.
_STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 402: "FAILED_PRECONDITION",
             404: "NOT_FOUND", 408: "DEADLINE_EXCEEDED", 413: "INVALID_ARGUMENT",
             502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def error_body(status: int, message: str, *, code: str) -> dict[str, Any]:
    """Google's error shape: code, message, status."""
    return {"error": {"code": status, "message": message,
                      "status": _STATUSES.get(status, "INTERNAL")}}
