"""Reservations for batched requests: all held before submitting, each closed by its result.

Every request of a batch gets its own reservation of its worst case at batch prices, in every
budget the call is charged to, so each result can settle (or release) its own share. They are
taken all or none: a batch that does not fit is refused before anything is submitted. They
are held for the provider's whole completion window (24 hours for OpenAI and Anthropic, 48
for Gemini; not the guard's 15 minutes): a process
that dies mid-batch leaves them held until it, or another, resumes the job.

A reservation is stored as ``(ledger URL, id)`` pairs, so a restarted process can close it.
Closing twice (a crash between closing and recording it) is harmless: the second is ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal

from spendguard._budget.budget import Budget
from spendguard._budget.ledger import open_ledger
from spendguard._budget.ledger.base import CallInfo, Ledger, ScopeClaim
from spendguard._budget.ledger.jobs import JobItem
from spendguard._budget.reservations import Reservation
from spendguard._budget.scopes import collect_budgets, current_tags
from spendguard._core.errors import BudgetExceeded, LedgerError
from spendguard._core.money import ZERO, format_usd
from spendguard._core.periods import as_utc, utc_now
from spendguard._costing.usage import Usage
from spendguard._strategies.batch.requests import PlannedRequest

__all__ = ["HOLD_TTL_S", "Holds", "hold_requests"]

log = logging.getLogger("spendguard.batching")

WINDOW_S = 24 * 3600.0
"""OpenAI's and Anthropic's completion window (a provider's wire may state a longer one)."""
HOLD_MARGIN_S = 2 * 3600.0
"""Held past the provider's completion window: time to finalise and to notice it ended."""
HOLD_TTL_S = WINDOW_S + HOLD_MARGIN_S


class Holds:
    """The reservations of some batched requests, by custom id."""

    def __init__(self, reservations: Mapping[str, Reservation] | None = None,
                 stored: Mapping[str, tuple[tuple[str, str], ...]] | None = None, *,
                 ledgers: Mapping[str, Ledger] | None = None) -> None:
        self._by_id = dict(reservations or {})
        self._stored = dict(stored or {})
        self._ledgers = dict(ledgers or {})

    def stored(self, custom_id: str) -> tuple[tuple[str, str], ...]:
        """How the request's reservation is written in the job store: (ledger URL, id)."""
        return self._stored[custom_id]

    def for_item(self, item: JobItem, provider: str, endpoint: str) -> Reservation:
        """The live reservation of ``item``, or one rebuilt from the store (after a restart)."""
        found = self._by_id.get(item.custom_id)
        if found is None:
            held = tuple((self._ledgers.get(url) or open_ledger(url), rid)
                          for url, rid in item.holds)
            found = Reservation(held, (), worst_usd=item.worst_usd,
                                call=CallInfo(provider, item.model, endpoint),
                                time=utc_now(), clock=utc_now)
            self._by_id[item.custom_id] = found
        return found

    def settle(self, reservation: Reservation, usage: Usage, actual_usd: Decimal, *,
               table_version: str, latency_s: float, request_id: str | None) -> None:
        """Charge what the request cost; a reservation already closed is left as it is."""
        try:
            reservation.settle(actual_usd=actual_usd, tokens=usage.token_counts(),
                               usage_estimated=usage.estimated, table_version=table_version,
                               latency_s=max(latency_s, 0.0), request_id=request_id)
        except LedgerError as exc:
            log.warning("spendguard: batch request %s was not settled again: %s",
                        reservation.call.model, exc)

    def release(self, reservation: Reservation, reason: str) -> None:
        """Drop the worst case of a request that was not billed."""
        try:
            reservation.release(reason)
        except LedgerError as exc:
            log.warning("spendguard: a batch reservation was not released again: %s", exc)


def hold_requests(client_budget: Budget | None, requests: Sequence[PlannedRequest], *,
                  provider: str, job_ids: Mapping[str, str], prompt_text: bool,
                  window_s: float = WINDOW_S) -> Holds:
    """Reserve every request's worst case in every budget around it, all or none.

    ``job_ids`` maps each custom id to its job (tagged ``batch_job`` on its ledger record);
    the reservations are held for the provider's completion window ``window_s`` and a margin.
    Raises ``BudgetExceeded`` naming the batch's total when it does not fit.
    """
    budgets = collect_budgets(client_budget)
    primary = client_budget if client_budget is not None else (budgets[-1] if budgets else None)
    now = as_utc(primary.clock() if primary is not None else utc_now())
    _check_total(budgets, sum((r.worst_usd for r in requests), ZERO), len(requests), now)
    expires_at = now + timedelta(seconds=window_s + HOLD_MARGIN_S)
    groups: dict[int, tuple[Ledger, list[ScopeClaim]]] = {}
    for budget in budgets:
        groups.setdefault(id(budget.ledger), (budget.ledger, []))[1].append(budget.claim(now))
    if not groups:  # no budget anywhere: still recorded, unlimited, in the default ledger
        default = open_ledger()
        groups[id(default)] = (default, [])
    tags = dict(current_tags())
    made: dict[str, Reservation] = {}
    stored: dict[str, tuple[tuple[str, str], ...]] = {}
    try:
        for request in requests:
            info = _call_info(request, provider, prompt_text)
            held = [(ledger, ledger.reserve(claims, request.worst_usd, info, time=now,
                                            expires_at=expires_at,
                                            tags={**tags, "batch_job": job_ids[
                                                request.custom_id]}))
                    for ledger, claims in groups.values()]
            stored[request.custom_id] = tuple((ledger.url, rid) for ledger, rid in held)
            made[request.custom_id] = Reservation(
                tuple(held), budgets, worst_usd=request.worst_usd, call=info, time=now,
                clock=primary.clock if primary is not None else utc_now)
    except BaseException:
        for reservation in made.values():  # all or none
            reservation.release("batch refused")
        raise
    return Holds(made, stored)


def _call_info(request: PlannedRequest, provider: str, prompt_text: bool) -> CallInfo:
    text = json.dumps(request.body, separators=(",", ":"), ensure_ascii=False)
    return CallInfo(provider=provider, model=request.model, endpoint=request.endpoint.value,
                    prompt_hash=hashlib.sha256(text.encode()).hexdigest(),
                    prompt_text=text if prompt_text else None,
                    estimated_input_tokens=request.input_tokens,
                    estimated_output_tokens=request.output_tokens_worst,
                    input_exact=request.input_exact)


def _check_total(budgets: Sequence[Budget], total_usd: Decimal, count: int,
                 now: datetime) -> None:
    """Refuse up front when the whole batch cannot fit, naming the tightest budget."""
    tightest: tuple[Decimal, Budget] | None = None
    for budget in budgets:
        left = budget.limit_usd - budget.ledger.totals(
            budget.scope, budget.claim(now).period_key).committed_usd
        if left < total_usd and (tightest is None or left < tightest[0]):
            tightest = (left, budget)
    if tightest is None:
        return
    left, budget = tightest
    totals = budget.ledger.totals(budget.scope, budget.claim(now).period_key)
    raise BudgetExceeded(
        f"budget {budget.scope!r} cannot take this batch: its {count} request(s) could cost up "
        f"to {format_usd(total_usd)} at batch prices but only {format_usd(max(left, ZERO))} of "
        f"{format_usd(budget.limit_usd)} is left; nothing was submitted. Raise the limit, lower "
        f"max_tokens, or batch fewer requests",
        scope=budget.scope, limit_usd=budget.limit_usd, spent_usd=totals.spent_usd,
        reserved_usd=totals.reserved_usd, estimate_usd=total_usd)
