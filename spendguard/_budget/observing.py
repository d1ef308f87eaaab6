"""Observe mode: a budget with ``enforce=False`` records what it would have refused, and lets it go.

The ledger checks limits atomically and refuses all or nothing, in every backend. Observe mode
keeps that rule untouched: the call is first reserved exactly as in enforce mode; only when
the ledger names an observing scope as the one the call does not fit in is it reserved again
with that scope's limit lifted, its record tagged ``spendguard.would_refuse`` (a JSON object:
scope -> the limit it would have broken), and a ``would_refuse`` event and a
:class:`~spendguard._core.errors.BudgetWarning` (once per scope and period) raised. An enforcing
scope around the same call still refuses it. Reports count the tagged records per scope.
"""

from __future__ import annotations

import json
import logging
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from spendguard._budget.events import Stage, publish
from spendguard._budget.ledger.base import CallInfo, Ledger, ScopeClaim
from spendguard._core.errors import BudgetExceeded, BudgetWarning
from spendguard._core.money import format_usd

if TYPE_CHECKING:
    from spendguard._budget.budget import Budget

__all__ = ["WOULD_REFUSE_TAG", "reserve_observed", "would_refuse_limits"]

log = logging.getLogger("spendguard.budget")

WOULD_REFUSE_TAG = "spendguard.would_refuse"
"""The tag on a record that enforce mode would have refused: ``{"scope": "limit USD", ...}``."""

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def reserve_observed(ledger: Ledger, claims: Sequence[ScopeClaim], amount_usd: Decimal,
                     call: CallInfo, budgets: Sequence[Budget], *, time: datetime,
                     expires_at: datetime, tags: Mapping[str, str]) -> str:
    """``ledger.reserve(...)``, except that observing scopes never refuse; returns its id."""
    for budget in budgets:
        if not budget.enforce:
            break
    else:  # every scope enforces: the ledger's reservation as it is, refusal and all
        return ledger.reserve(claims, amount_usd, call, time=time, expires_at=expires_at,
                              tags=tags)
    observed = {budget.scope for budget in budgets if not budget.enforce}
    over: dict[str, BudgetExceeded] = {}
    current = list(claims)
    # Each round lifts the limit of one more observing scope the call does not fit in; a
    # refusal by an enforcing scope ends it. Bounded: a scope is lifted at most once.
    while True:
        marked = dict(tags)
        if over:
            marked[WOULD_REFUSE_TAG] = json.dumps(
                {scope: str(refusal.limit_usd) for scope, refusal in over.items()},
                sort_keys=True)
        try:
            call_id = ledger.reserve(current, amount_usd, call, time=time,
                                     expires_at=expires_at, tags=marked)
            break
        except BudgetExceeded as exc:
            if exc.scope not in observed or exc.scope in over:
                raise
            over[exc.scope] = exc
            current = [replace(c, limit_usd=None) if c.scope == exc.scope else c
                       for c in current]
    try:
        for scope, refusal in over.items():
            period_key = next((c.period_key for c in claims if c.scope == scope), "")
            _tell(scope, period_key, refusal, call, budgets, call_id)
    except BaseException:
        # Warnings turned into errors (-W error): the call is not sent, so hold nothing.
        ledger.release(call_id, reason="observe-mode warning raised", time=time)
        raise
    return call_id


def would_refuse_limits(tags: Mapping[str, str]) -> dict[str, Decimal]:
    """The scopes (and limits, USD) a record's call would have been refused by; {} if none."""
    text = tags.get(WOULD_REFUSE_TAG)
    if not text:
        return {}
    try:
        found = json.loads(text)
        return {str(scope): Decimal(str(limit)) for scope, limit in found.items()}
    except (ValueError, AttributeError, ArithmeticError):
        return {}  # a hand-written tag of the same name: not ours to count


def _tell(scope: str, period_key: str, exc: BudgetExceeded, call: CallInfo,
          budgets: Sequence[Budget], call_id: str) -> None:
    message = (f"spendguard observe mode: budget {scope!r} (period {period_key}) would have "
               f"refused a {call.model} call that could cost up to "
               f"{format_usd(exc.estimate_usd)} ({format_usd(max(exc.remaining_usd, Decimal(0)))}"
               f" of {format_usd(exc.limit_usd)} left); it was sent because the budget has "
               f"enforce=False")
    log.info(message)
    publish(Stage.WOULD_REFUSE, provider=call.provider, model=call.model,
            endpoint=call.endpoint, attempt=call.attempt, call_id=call_id,
            scopes=tuple(b.scope for b in budgets), budgets=tuple(budgets),
            worst_usd=exc.estimate_usd, scope=scope, message=message,
            estimated_input_tokens=call.estimated_input_tokens)
    with _warned_lock:
        first = (scope, period_key) not in _warned
        _warned.add((scope, period_key))
    if first:  # one warning per scope and period: the ledger keeps the count of every call
        warnings.warn(message + " (told once per scope and period; the report counts them)",
                      BudgetWarning, stacklevel=6)
