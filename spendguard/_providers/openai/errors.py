"""Errors in OpenAI's own shape, as its SDK parses them."""

from __future__ import annotations

from typing import Any

__all__ = ["error_body"]

# The error types OpenAI's API answers these statuses with.
_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 402: "insufficient_quota",
          404: "invalid_request_error", 413: "invalid_request_error", 502: "server_error",
          503: "server_error", 504: "server_error"}


def error_body(status: int, message: str, *, code: str) -> dict[str, Any]:
    """OpenAI's error shape: message, type, param, code."""
    return {"error": {"message": message, "type": _TYPES.get(status, "server_error"),
                      "param": None, "code": code}}
