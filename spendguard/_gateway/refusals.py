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
from spendguard._providers import adapter_for

__all__ = ["REFUSAL_STATUS", "error_response", "refusal_response"]

REFUSAL_STATUS = 402
"""The HTTP status of a budget refusal: not retried by the official SDKs."""

def error_response(provider: Provider, status: int, message: str, *, code: str,
                   retry: bool = False, extra: dict[str, Any] | None = None) -> Response:
    """An error the provider's own client parses: its body shape, this status and message."""
    body = adapter_for(provider).error_body(status, message, code=code)
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
