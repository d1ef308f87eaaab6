"""The limits a reservation is checked against: claims merged per scope, and the refusal.

Shared by every backend — the transactional ledgers (:mod:`~spendguard._budget.ledger.engine`) and
Redis, whose Lua scripts apply the same rule and hand the totals back for the same message —
so a refusal reads the same wherever it happened. A claim has a money limit and optionally a
call cap (``max_calls``); the stricter refuses, and the error says which and how to lift it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import TypeVar

from spendguard._budget.ledger.base import ScopeClaim, Totals
from spendguard._core.errors import BudgetExceeded
from spendguard._core.money import ZERO, format_usd

__all__ = ["merge_claims", "refusal", "sum_totals"]

_N = TypeVar("_N", Decimal, int)


def merge_claims(claims: Iterable[ScopeClaim]) -> tuple[ScopeClaim, ...]:
    """One claim per (scope, period key), keeping the tightest limit and warning level."""
    merged: dict[tuple[str, str], ScopeClaim] = {}
    for claim in claims:
        key = (claim.scope, claim.period_key)
        if key not in merged:  # the usual claim, one per scope: no call for the look-up
            merged[key] = claim
            continue
        old = merged[key]
        merged[key] = ScopeClaim(claim.scope, claim.period_key,
                                 _least(old.limit_usd, claim.limit_usd),
                                 _least(old.warn_usd, claim.warn_usd),
                                 _least(old.max_calls, claim.max_calls))
    return tuple(merged.values())


def sum_totals(steps: Iterable[Totals]) -> Totals:
    """Totals added up (a rolling window's steps)."""
    spent = reserved = ZERO
    calls = 0
    for step in steps:
        spent, reserved, calls = (spent + step.spent_usd, reserved + step.reserved_usd,
                                  calls + step.calls)
    return Totals(spent, reserved, calls)


def _least(a: _N | None, b: _N | None) -> _N | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _wait_hint(period_key: str) -> str:
    if "@" not in period_key:
        return "wait for the next period"
    return f"wait: calls leave the rolling {period_key.partition('@')[0]} window as they age"


def _period_text(period_key: str) -> str:
    if "@" in period_key:
        return f"rolling {period_key.partition('@')[0]} window"
    return f"period {period_key}"


def refusal(claims: Sequence[ScopeClaim], current: Sequence[Totals],
             amount_usd: Decimal) -> BudgetExceeded | None:
    """The error naming the limit and scope the call does not fit in, or None if it fits.

    A call cap that is reached refuses first (no smaller call would fit it); otherwise the
    tightest money limit.
    """
    for claim, totals in zip(claims, current, strict=True):
        if claim.max_calls is not None and totals.calls + 1 > claim.max_calls:
            return BudgetExceeded(
                f"budget {claim.scope!r} ({_period_text(claim.period_key)}) cannot take this "
                f"call: it has counted {totals.calls} of its max_calls={claim.max_calls} calls "
                f"(in flight, settled or recovered); raise max_calls or "
                f"{_wait_hint(claim.period_key)}",
                scope=claim.scope,
                limit_usd=claim.limit_usd if claim.limit_usd is not None else ZERO,
                spent_usd=totals.spent_usd, reserved_usd=totals.reserved_usd,
                estimate_usd=amount_usd, refused_by="max_calls", max_calls=claim.max_calls,
                calls=totals.calls)
    worst: tuple[Decimal, ScopeClaim, Totals] | None = None
    for claim, totals in zip(claims, current, strict=True):
        # committed_usd added up in place: every reservation checks every claim here.
        committed = totals.spent_usd + totals.reserved_usd
        if claim.limit_usd is None or committed + amount_usd <= claim.limit_usd:
            continue
        left = claim.limit_usd - committed
        if worst is None or left < worst[0]:
            worst = (left, claim, totals)
    if worst is None:
        return None
    left, claim, totals = worst
    assert claim.limit_usd is not None  # only limited claims are refused
    return BudgetExceeded(
        f"budget {claim.scope!r} ({_period_text(claim.period_key)}) cannot take this call: it "
        f"could cost up to {format_usd(amount_usd)} but only {format_usd(max(left, ZERO))} of "
        f"{format_usd(claim.limit_usd)} is left ({format_usd(totals.spent_usd)} spent, "
        f"{format_usd(totals.reserved_usd)} held by calls in flight); raise limit_usd, lower "
        f"the call's output cap (max_tokens), or {_wait_hint(claim.period_key)}",
        scope=claim.scope, limit_usd=claim.limit_usd, spent_usd=totals.spent_usd,
        reserved_usd=totals.reserved_usd, estimate_usd=amount_usd,
        max_calls=claim.max_calls, calls=totals.calls,
    )
