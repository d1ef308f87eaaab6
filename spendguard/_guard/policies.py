"""The scope policies the guard applies to a priced call before reserving it.

Three small steps, each a plain function the choke point calls with what it already knows:
:func:`degrade` (swap in a cheaper model the user listed), :func:`check_runaways` (refuse a
runaway pattern, tell the user and the ledger once) and :class:`AttemptLinks` (give every
attempt of one logical call — the SDK's retries — the same call id).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from spendguard._budget.budget import Budget
from spendguard._budget.degrade import REQUESTED_MODEL_TAG
from spendguard._budget.events import Stage, listening, publish
from spendguard._budget.reservations import EVENT_TAG
from spendguard._budget.runaway import RUNAWAYS, RunawayTrip
from spendguard._budget.scopes import collect_budgets
from spendguard._caching.volatile import has_volatile, mask_volatile
from spendguard._core.errors import RunawayRefused, SpendguardError
from spendguard._core.money import ZERO
from spendguard._costing.calls import Call, build_call
from spendguard._costing.estimate import Estimate, estimate_call
from spendguard._costing.prices import PriceTable

__all__ = ["CALL_ID_TAG", "AttemptLinks", "Degraded", "call_tags",
           "check_runaways", "degrade", "request_shape"]

log = logging.getLogger("spendguard.runaway")

CALL_ID_TAG = "spendguard.call_id"
"""Tag linking the attempts (SDK retries) of one logical call."""


@dataclass(frozen=True, slots=True)
class Degraded:
    """A call routed to a cheaper model: the new call and estimate, and what was asked for."""

    call: Call
    estimate: Estimate
    requested_model: str


def degrade(budget: Budget | None, call: Call, estimate: Estimate, table: PriceTable, *,
            budgets: tuple[Budget, ...] | None = None) -> Degraded | None:
    """The cheaper call to make instead of ``call``, when a budget's degrade policy says so.

    ``budgets`` are the call's (``collect_budgets(budget)``), when the caller has them already.
    """
    if budgets is None:
        budgets = collect_budgets(budget)
    for policy_budget in reversed(budgets):  # the innermost budget with a policy
        if policy_budget.degrade is not None:
            break
    else:
        return None
    policy = policy_budget.degrade
    alternatives = policy.alternatives(call.model)
    if not alternatives:
        return None
    remaining = min((b.remaining for b in budgets), default=None)
    totals = policy_budget.totals()
    due = policy.due(committed_usd=totals.committed_usd, limit_usd=policy_budget.limit_usd)
    if not due and (remaining is None or estimate.worst_usd <= remaining):
        return None
    chosen: Degraded | None = None
    for model in alternatives:
        cheaper = build_call(call.provider, call.endpoint, {**call.body, "model": model})
        cheaper_estimate = estimate_call(cheaper, table, at=estimate.at)
        chosen = Degraded(cheaper, cheaper_estimate, call.model)
        if remaining is None or cheaper_estimate.worst_usd <= remaining:
            break  # the most preferred alternative that fits
    # None fits: the last (cheapest) is reserved, and refused, as the caller would expect.
    if chosen is not None:
        log.info("spendguard degraded %s to %s (%s of %s's limit committed)", call.model,
                 chosen.call.model, totals.committed_usd, policy_budget.scope)
    return chosen


def check_runaways(budget: Budget | None, call: Call, *, attempt: int, body_hash: str,
                   worst_usd: Decimal, budgets: tuple[Budget, ...] | None = None,
                   at: datetime | None = None) -> None:
    """Raise :class:`RunawayRefused` when a runaway rule of any of the call's scopes refuses it.

    A newly tripped rule is logged, handed to the budget's ``on_warn`` and written to the
    ledger once; refusals during the cool-down that follows are silent. ``budgets`` are the
    call's (``collect_budgets(budget)``), when the caller has them already. ``at``: the
    call's time on ``budget``'s clock when the caller read it already (the estimate's), the
    time too of every scope that shares that clock.
    """
    if budgets is None:
        budgets = collect_budgets(budget)
    # Rules belong to budgets: a call charged to no budget has no scope to protect.
    shape = None  # worked out for the first scope with rules: none without any
    for scoped in budgets:
        rules = scoped.runaway
        if rules is None:
            continue
        if shape is None:
            shape = request_shape(call.body, body_hash)
        now = at if at is not None and budget is not None and scoped.clock is budget.clock \
            else scoped.now()
        # The ledger reader only for a velocity rule, the one rule that reads spend.
        spend_since = None if rules.max_usd_per_minute is None else _spend_since(scoped)
        trip, refuse = RUNAWAYS.check(scoped.scope, rules, shape=shape, attempt=attempt,
                                      now=now, spend_since=spend_since)
        if trip is not None:
            _tell(scoped, trip, call, now)
        if refuse and scoped.enforce:  # observe mode: told and recorded, never refused
            _refuse(scoped, call, trip, worst_usd=worst_usd)


def _spend_since(budget: Budget) -> Callable[[datetime], Decimal]:
    def read(since: datetime) -> Decimal:
        return sum((record.actual_usd for record in
                    budget.ledger.records(since=since, scope=budget.scope)), ZERO)
    return read


def _tell(budget: Budget, trip: RunawayTrip, call: Call, now: datetime) -> None:
    log.warning(trip.message())
    try:
        budget.ledger.adjust([budget.claim(now)], ZERO, time=now, note=trip.message(),
                             tags={EVENT_TAG: "runaway", "spendguard.rule": trip.rule,
                                   "spendguard.action": trip.action},
                             provider=call.provider.value, model=call.model)
    except SpendguardError:
        log.warning("spendguard: could not record a runaway trip in %s", budget.scope,
                    exc_info=True)
    if listening():  # alerts (_budget.alerts) and telemetry hear of the trip
        publish(Stage.WARNED, provider=call.provider.value, model=call.model,
                endpoint=call.endpoint.value, scopes=(budget.scope,), scope=budget.scope,
                status="runaway", message=trip.message(), budgets=(budget,))
    if budget.on_warn is not None:
        callback: Callable[[Any], object] = budget.on_warn
        try:
            callback(trip)
        except Exception:  # the user's callback must not turn a refusal into a retry
            log.exception("spendguard: on_warn raised while told of a runaway trip")


def _refuse(budget: Budget, call: Call, trip: RunawayTrip | None, *,
            worst_usd: Decimal) -> None:
    scope = budget.scope
    totals = budget.totals()
    detail = trip.message() if trip is not None else (
        f"spendguard runaway detection in {scope!r} is cooling down a {call.model} request "
        f"that repeated (or the whole scope); it refuses until the cool-down ends. To lift "
        f"it now: spendguard.lift_runaway({scope!r})")
    if listening():  # telemetry: an error span with a spendguard.refused event
        publish(Stage.REFUSED, provider=call.provider.value, model=call.model,
                endpoint=call.endpoint.value, worst_usd=worst_usd, scopes=(scope,),
                scope=scope, status="runaway", message=detail)
    raise RunawayRefused(
        detail, scope=scope, rule=None if trip is None else trip.rule,
        until=None if trip is None else trip.until,
        limit_usd=budget.limit_usd, spent_usd=totals.spent_usd,
        reserved_usd=totals.reserved_usd,
        estimate_usd=worst_usd)


def request_shape(body: Mapping[str, Any], body_hash: str) -> str:
    """A hash of a request body with its volatile values masked: equal for repeats of one
    request that differ only in a timestamp, an id or an epoch time.

    ``body_hash`` is the hash of the bytes sent, which the guard computes anyway: a body
    with nothing volatile in it (the common case) is its own shape, with no second encoding.
    """
    if not _any_volatile(body):
        return body_hash
    masked = _mask(body)
    encoded = json.dumps(masked, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()


def _any_volatile(body: Any) -> bool:
    # Every guarded call walks its whole body here, so the walk makes as few calls as it can:
    # the children of a dict or list are looked at in place, by exact type (an attribute read,
    # not a call); only containers (and the rare subclass or other mapping) are queued, by
    # ``+=`` onto the list being iterated (no call, where append and pop are one each).
    queue = [body]
    for value in queue:
        kind = value.__class__
        if kind is dict:
            children: Any = value
        elif kind is list or kind is tuple:
            children = value
        elif isinstance(value, str):
            if has_volatile(value):  # cached per text
                return True
            continue
        elif isinstance(value, Mapping):
            children = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue  # numbers, flags, nulls and other objects hold nothing volatile
        for item in children:
            child = value[item] if kind is dict else item  # a dict by key: no .values() call
            child_kind = child.__class__
            if child_kind is str:
                if has_volatile(child):
                    return True
            elif child_kind not in _SCALARS:
                queue += (child,)
    return False


_SCALARS = frozenset({int, float, bool, type(None)})


def _mask(value: Any) -> Any:
    kind = value.__class__  # exact types first: an ABC check costs more than the test
    if kind is str or isinstance(value, str):
        return mask_volatile(value)
    if kind in _SCALARS:
        return value
    if kind is dict or isinstance(value, Mapping):
        return {str(k): _mask(v) for k, v in value.items()}
    if kind is list or isinstance(value, list | tuple):
        return [_mask(v) for v in value]
    return value


class AttemptLinks:
    """Gives every attempt of one logical call the same call id (one per guarded client).

    The SDKs resend the same request bytes when they retry (429, 5xx, timeouts), numbering
    the attempt in ``x-stainless-retry-count``: an attempt after the first whose body hash was
    seen recently continues that call.
    """

    _MAX = 1024

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: OrderedDict[str, str] = OrderedDict()

    def call_id(self, prompt_hash: str, attempt: int) -> str:
        with self._lock:
            known = self._ids.get(prompt_hash) if attempt > 1 else None  # a retry's only
            if known is not None:
                self._ids.move_to_end(prompt_hash)
                return known
            # 16 hex digits from the OS's CSPRNG: what secrets.token_hex(8) reads, in one call.
            fresh = os.urandom(8).hex()
            self._ids[prompt_hash] = fresh
            if len(self._ids) > self._MAX:
                self._ids.popitem(last=False)
            return fresh


def call_tags(call_id: str, degraded: Degraded | None) -> dict[str, str]:
    """The tags the guard adds to a call's record."""
    tags = {CALL_ID_TAG: call_id}
    if degraded is not None:
        tags[REQUESTED_MODEL_TAG] = degraded.requested_model
    return tags
