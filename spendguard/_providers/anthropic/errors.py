"""Errors in Anthropic's own shape, as its SDK parses them."""

from __future__ import annotations

from typing import Any

__all__ = ["error_body"]

# The error types Anthropic's API answers these statuses with.
_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
          404: "not_found_error", 413: "request_too_large", 502: "api_error", 503: "api_error",
          504: "api_error"}


def error_body(status: int, message: str, *, code: str) -> dict[str, Any]:
    """Anthropic's error shape: a typed error with its message."""
    return {"type": "error", "error": {"type": _TYPES.get(status, "api_error"),
                                       "message": message}}
