"""The gateway's own answers, in the provider's own error shape, with statuses chosen for retries.

The official SDKs retry 408, 409, 429 and 5xx (and honour ``x-should-retry``). A refusal by the
budget is final until money is freed, so it is answered with **402** (Anthropic's own status for
a billing error; no official SDK retries it) and ``x-should-retry: false``: the client raises at
once and nothing is sent again. A request that cannot be priced is a 400; a ledger that cannot
be reached is a 503, which the SDKs retry (nothing was sent, and it may be back).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from starlette.responses import Response

from spendguard._core.errors import (
    BudgetExceeded,
    LedgerError,
    RunawayRefused,
    SpendguardError,
)
from spendguard._costing.calls import Provider

__all__ = ["REFUSAL_STATUS", "error_response", "refusal_response"]

REFUSAL_STATUS = 402
"""The HTTP status of a budget refusal: not retried by the official SDKs."""

_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                    402: "billing_error", 404: "not_found_error", 413: "request_too_large",
                    502: "api_error", 503: "api_error", 504: "api_error"}
# Google's canonical status names (google.rpc.Code) for the statuses the gateway answers with.
_GOOGLE_STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 402: "FAILED_PRECONDITION",
                    404: "NOT_FOUND", 408: "DEADLINE_EXCEEDED", 413: "INVALID_ARGUMENT",
                    502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_OPENAI_TYPES = {400: "invalid_request_error", 401: "invalid_request_error",
                 402: "insufficient_quota", 404: "invalid_request_error",
                 413: "invalid_request_error", 502: "server_error", 503: "server_error",
                 504: "server_error"}


def error_response(provider: Provider, status: int, message: str, *, code: str,
                   retry: bool = False, extra: dict[str, Any] | None = None) -> Response:
    """An error the provider's own client parses: its body shape, this status and message."""
    if provider is Provider.ANTHROPIC:
        body: dict[str, Any] = {"type": "error", "error": {
            "type": _ANTHROPIC_TYPES.get(status, "api_error"), "message": message}}
    elif provider is Provider.GEMINI:  # Google's error shape: code, message, status
        body = {"error": {"code": status, "message": message,
                          "status": _GOOGLE_STATUSES.get(status, "INTERNAL")}}
    else:
        body = {"error": {"message": message, "type": _OPENAI_TYPES.get(status, "server_error"),
                          "param": None, "code": code}}
    if extra:
        body["error"]["spendguard"] = extra
    headers = {"x-should-retry": "true" if retry else "false",
               "x-spendguard-error": code}
    return Response(json.dumps(body), status, headers=headers, media_type="application/json")


def _usd(value: Decimal) -> str:
    return str(value.normalize()) if value == value.to_integral() else str(value)


def refusal_response(provider: Provider, exc: SpendguardError) -> Response:
    """The answer for an error the guard raised before sending (nothing reached the provider)."""
    message = f"spendguard gateway: {exc}"
    if isinstance(exc, BudgetExceeded):
        extra = {"scope": exc.scope, "remaining_usd": _usd(max(exc.remaining_usd, Decimal(0))),
                 "worst_case_usd": _usd(exc.estimate_usd), "limit_usd": _usd(exc.limit_usd)}
        code = "runaway_refused" if isinstance(exc, RunawayRefused) else "budget_exceeded"
        return error_response(provider, REFUSAL_STATUS, message, code=code, extra=extra)
    if isinstance(exc, LedgerError):
        return error_response(provider, 503, message, code="ledger_unavailable", retry=True)
    return error_response(provider, 400, message, code="not_priced")
