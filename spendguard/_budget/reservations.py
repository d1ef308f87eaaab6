"""Reservations: one call's worst case, held in every budget it is charged to, until it ends.

This is the API the transport calls: :func:`reserve_call` before a request is sent, then
exactly one of :meth:`Reservation.settle` (the provider billed it; usage known or estimated)
or :meth:`Reservation.release` (it was not billed). A second settle is an error, since it
would be a double charge; a release after the end is a no-op, so ``finally:`` blocks can
call it safely. A reservation never closed — its process killed — expires after
``reservation_ttl_s`` and is then charged at its worst case by the ledger (``"recovered"``).
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from spendguard._budget.events import Stage, listening, publish
from spendguard._budget.ledger import open_ledger
from spendguard._budget.ledger.base import (
    DEFAULT_RESERVATION_TTL_S,
    CallInfo,
    Crossing,
    Ledger,
    ScopeClaim,
    Settlement,
)
from spendguard._budget.observing import reserve_observed
from spendguard._budget.scopes import collect_budgets, current_tags
from spendguard._budget.templates import over_cap, with_templates
from spendguard._budget.thresholds import CallOverrun, ThresholdCrossed, announce
from spendguard._core.errors import BudgetExceeded, ConfigError, LedgerError
from spendguard._core.money import format_usd, parse_usd
from spendguard._core.periods import Clock, as_utc, read_clock, utc_now

if TYPE_CHECKING:
    from spendguard._budget.budget import Budget

__all__ = ["DEFAULT_RESERVATION_TTL_S", "Reservation", "remaining_for_call", "reserve_call"]

log = logging.getLogger("spendguard.budget")

EVENT_TAG = "spendguard.event"
"""The tag naming what a marker record stands for: a call refused by a budget
(:data:`REFUSED_EVENT`) or a runaway loop stopped (``runaway``)."""
REFUSED_EVENT = "refused"
"""``spendguard.event`` of the $0 marker a refused call leaves in its budget's ledger."""
REFUSED_SCOPE_TAG = "spendguard.refused_scope"
REFUSED_USD_TAG = "spendguard.refused_usd"
"""The worst case of the refused call: what the refusal kept from being spent (USD)."""

_STATUS = re.compile(r"[a-z][a-z0-9_]{0,31}")


class Reservation:
    """A call's worst case (USD), held in every budget it is charged to until it ends."""

    __slots__ = ("_budgets", "_clock", "_held", "_lock", "_state", "call", "finish_reasons",
                 "response_id", "response_model", "time", "worst_usd")

    def __init__(self, held: tuple[tuple[Ledger, str], ...], budgets: tuple[Budget, ...], *,
                 worst_usd: Decimal, call: CallInfo, time: datetime, clock: Clock) -> None:
        self._held = held
        self._budgets = budgets
        self._clock = clock
        self._lock = threading.Lock()
        self._state: str | None = None
        self.worst_usd = worst_usd
        self.call = call
        self.time = time
        self.response_model: str | None = None  # the model the provider says answered
        # What the response says of itself, for call events (set only while someone listens).
        self.response_id: str | None = None
        self.finish_reasons: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """The call's id in its (first) ledger; also the id of its :class:`SpendRecord`."""
        return self._held[0][1]

    @property
    def closed(self) -> bool:
        """Whether the reservation was settled or released."""
        return self._state is not None

    def settle(self, *, actual_usd: Decimal, tokens: Mapping[str, int], usage_estimated: bool,
               table_version: str, latency_s: float, request_id: str | None = None,
               status: str = "ok", note: str | None = None) -> None:
        """Charge the actual cost instead of the worst case; report warning levels reached.

        ``status`` is ``"ok"`` or a short word for what went wrong while the call was billed
        (``"error"``, ``"stream_broken"``, ``"stream_abandoned"``, ``"overrun"``, ...);
        ``note`` says why it was charged as it was. A cost above the reserved worst case is
        charged as given and reported to each budget's ``on_warn`` as a ``CallOverrun``.
        """
        actual = parse_usd(actual_usd, field="actual_usd")
        counts = _check_tokens(tokens)
        if not _STATUS.fullmatch(status):
            raise ConfigError(f"status: {status!r} is not a status word such as 'ok' or "
                              f"'stream_broken'")
        if isinstance(latency_s, bool) or not (math.isfinite(latency_s) and latency_s >= 0):
            raise ConfigError(f"latency_s: {latency_s!r} must be a non-negative number")
        self.settle_checked(actual_usd=actual, tokens=counts,
                            usage_estimated=bool(usage_estimated), table_version=table_version,
                            latency_s=float(latency_s), request_id=request_id, status=status,
                            note=note)

    def settle_checked(self, *, actual_usd: Decimal, tokens: dict[str, int],
                       usage_estimated: bool, table_version: str, latency_s: float,
                       request_id: str | None = None, status: str = "ok",
                       note: str | None = None) -> None:
        """:meth:`settle` with values known to pass its checks, as the guard has them (a
        finite Decimal >= 0, a new dict of whole counts >= 0, a status word, a float from
        ``perf_counter``): the checks cost calls on every guarded call, and its values were
        made to pass them. ``tokens`` is kept as given."""
        actual = actual_usd
        counts = tokens
        if not self._close("settled"):
            raise LedgerError(f"reservation {self.id} was already {self._state}; a call is "
                              f"settled once")
        settlement = Settlement(read_clock(self._clock), actual, counts, usage_estimated,
                                table_version, latency_s, request_id, status, note)
        crossings: list[Crossing] = []
        for ledger, call_id in self._held:
            crossings.extend(ledger.settle(call_id, settlement))
        warned = self._warned(crossings) if crossings else []
        if listening():  # events cost nothing while nobody subscribes
            for scope, event in warned:  # told before "settled", which ends the call's events
                publish(Stage.WARNED, **self._event_fields(), scope=scope,
                        message=event.message())
            publish(Stage.SETTLED, **self._event_fields(), actual_usd=actual, tokens=counts,
                    usage_estimated=bool(usage_estimated), status=status,
                    table_version=table_version, request_id=request_id,
                    response_model=self.response_model, response_id=self.response_id,
                    finish_reasons=self.finish_reasons)
        for scope, event in warned:
            budget = next((b for b in self._budgets if b.scope == scope), None)
            announce(event, None if budget is None else budget.on_warn)
        if actual > self.worst_usd or status == "overrun":
            # The estimator promised an upper bound; a miss means a price or token count is off.
            self._announce_overrun(actual)

    def release(self, reason: str) -> None:
        """The call was not billed (refused, failed before usage): drop its reservation.

        Does nothing if the reservation already ended.
        """
        if not self._close("released"):
            return
        now = read_clock(self._clock)
        for ledger, call_id in self._held:
            ledger.release(call_id, reason=reason, time=now)
        if listening():
            publish(Stage.RELEASED, **self._event_fields(), status="released", message=reason)

    def _event_fields(self) -> dict[str, object]:
        return _call_fields(self.call, self._budgets, worst_usd=self.worst_usd, call_id=self.id)

    def _close(self, how: str) -> bool:
        with self._lock:
            if self._state is not None:
                return False
            self._state = how
            return True

    def _warned(self, crossings: list[Crossing]) -> list[tuple[str, ThresholdCrossed]]:
        """The warning levels newly reached, once per scope and period."""
        told: set[tuple[str, str]] = set()
        found = []
        for crossing in crossings:
            if (crossing.scope, crossing.period_key) in told:
                continue
            told.add((crossing.scope, crossing.period_key))
            found.append((crossing.scope, ThresholdCrossed.from_crossing(
                crossing, crossing.warn_usd / crossing.limit_usd)))
        return found

    def _announce_overrun(self, actual_usd: Decimal) -> None:
        told: set[int] = set()
        for budget in self._budgets:
            if id(budget.on_warn) in told:
                continue  # one callback (or one Python warning) per call, however many scopes
            told.add(id(budget.on_warn))
            try:
                spent = budget.totals().spent_usd
            except Exception:  # the charge is recorded; telling about it must not fail the call
                log.error("spendguard: could not read budget %r to report an overrun",
                          budget.scope, exc_info=True)
                continue
            fraction = spent / budget.limit_usd if budget.limit_usd else Decimal(1)
            event = CallOverrun(budget.scope, budget.period_key, spent, budget.limit_usd,
                                fraction, budget.warn_at or Decimal(1), call_id=self.id,
                                model=self.call.model, reserved_usd=self.worst_usd,
                                actual_usd=actual_usd)
            announce(event, budget.on_warn)
        if not self._budgets:
            log.warning("spendguard: a %s call (%s) cost %s, more than the %s it reserved",
                        self.call.model, self.id, actual_usd, self.worst_usd)

    def __repr__(self) -> str:
        state = self._state or "open"
        return f"<Reservation {self.id} {format_usd(self.worst_usd)} {state}>"


def reserve_call(client_budget: Budget | None, worst_usd: Decimal, *,
                 call: CallInfo, extra_tags: Mapping[str, str] | None = None,
                 budgets: tuple[Budget, ...] | None = None) -> Reservation:
    """Reserve a call's worst case in every budget it is charged to, all or none.

    The budgets are the client's, the ones entered around the call and all their parents.
    Raises ``BudgetExceeded`` naming the tightest scope the call does not fit in. With no
    budget anywhere the call is still recorded, unlimited, in the default ledger. ``extra_tags`` are
    added to the user's (spendguard's own, such as the call id linking retries). ``budgets``
    are ``collect_budgets(client_budget)`` when the caller has them already (the guard
    collects them once per call); the templates' children are added here.
    """
    worst = parse_usd(worst_usd, field="worst_usd")
    user_tags = current_tags()
    tags = user_tags if not extra_tags else {**user_tags, **extra_tags}
    if budgets is None:
        budgets = collect_budgets(client_budget)
    budgets = with_templates(budgets, call, user_tags)
    try:
        return _reserve(client_budget, budgets, worst, call, tags)
    except BudgetExceeded as exc:
        # A template's count of new children refused: its overflow scope instead (or a
        # refusal naming max_children).
        try:
            shared = over_cap(budgets, exc)
        except BudgetExceeded as refusal:  # overflow="refuse"
            _refused(call, budgets, worst, refusal)
            raise
        if shared is None:
            _refused(call, budgets, worst, exc)
            raise
    try:
        return _reserve(client_budget, shared, worst, call, tags)
    except BudgetExceeded as exc:
        _refused(call, shared, worst, exc)
        raise


def _refused(call: CallInfo, budgets: tuple[Budget, ...], worst: Decimal,
             exc: BudgetExceeded) -> None:
    _record_refusal(exc, budgets, call, worst)
    if listening():
        publish(Stage.REFUSED, **_call_fields(call, budgets, worst_usd=worst), scope=exc.scope,
                message=str(exc))


def _reserve(client_budget: Budget | None, budgets: tuple[Budget, ...], worst: Decimal,
             call: CallInfo, tags: Mapping[str, str]) -> Reservation:
    """Reserve ``worst`` in ``budgets``, one transaction per ledger, all or none."""
    primary = client_budget if client_budget is not None else (budgets[-1] if budgets else None)
    clock = utc_now if primary is None else primary.clock
    now = read_clock(clock)
    ttl_s = DEFAULT_RESERVATION_TTL_S if primary is None else primary.reservation_ttl_s
    expires_at = now + timedelta(seconds=ttl_s)
    # Budgets may live in different ledgers; each ledger takes its claims in one transaction.
    groups: dict[int, tuple[Ledger, list[ScopeClaim]]] = {}
    for budget in budgets:
        ledger = budget.ledger
        key = id(ledger)
        if key in groups:
            groups[key][1].append(budget.claim(now))
        else:  # the first (often only) budget of its ledger: a list made with its claim
            groups[key] = (ledger, [budget.claim(now)])
    if not groups:
        ledger = open_ledger()
        groups[id(ledger)] = (ledger, [])
    held: list[tuple[Ledger, str]] = []
    try:
        for ledger, claims in groups.values():
            held.append((ledger, reserve_observed(ledger, claims, worst, call, budgets,
                                                  time=now, expires_at=expires_at, tags=tags)))
    except BaseException:
        for ledger, call_id in held:  # all or none: undo the ledgers that agreed
            ledger.release(call_id, reason="refused by another ledger", time=now)
        raise
    reservation = Reservation(tuple(held), budgets, worst_usd=worst, call=call, time=now,
                              clock=clock)
    if listening():
        publish(Stage.RESERVED, **reservation._event_fields())
    return reservation


def _record_refusal(exc: BudgetExceeded, budgets: tuple[Budget, ...], call: CallInfo,
                    worst: Decimal) -> None:
    """Leave a $0 marker of the refusal in the refusing budget's ledger, so reports across
    processes count refused calls and what they could have cost. Never changes a total; a
    ledger that cannot take it leaves the refusal as it is."""
    refusing = next((budget for budget in budgets if budget.scope == exc.scope), None)
    if refusing is None:
        return
    try:
        refusing.ledger.adjust([], Decimal(0), time=as_utc(refusing.clock()),
                               note=f"refused: {exc}",
                               tags={EVENT_TAG: REFUSED_EVENT, REFUSED_SCOPE_TAG: exc.scope,
                                     REFUSED_USD_TAG: str(worst)},
                               provider=call.provider, model=call.model)
    except LedgerError:
        log.warning("spendguard: could not record a refusal in %s", exc.scope, exc_info=True)


def remaining_for_call(client_budget: Budget | None, *,
                       budgets: tuple[Budget, ...] | None = None) -> Decimal | None:
    """The least any budget of a call has left (USD), or None when no budget applies."""
    if budgets is None:
        budgets = collect_budgets(client_budget)
    # An observing budget never refuses, so it must not shrink a call either.
    return min((budget.remaining for budget in budgets if budget.enforce), default=None)


def _call_fields(call: CallInfo, budgets: tuple[Budget, ...], *, worst_usd: Decimal,
                 call_id: str | None = None) -> dict[str, object]:
    """What every event of a call says about it (no prompt text: events never carry it)."""
    return {"provider": call.provider, "model": call.model, "endpoint": call.endpoint,
            "attempt": call.attempt, "call_id": call_id, "worst_usd": worst_usd,
            "scopes": tuple(b.scope for b in budgets), "budgets": budgets,
            "estimated_input_tokens": call.estimated_input_tokens, "facts": call.facts}


def _check_tokens(tokens: Mapping[str, int]) -> dict[str, int]:
    counts = dict(tokens)
    for kind, count in counts.items():
        if kind.__class__ is str and count.__class__ is int and count >= 0:
            continue  # the usual case: exact types, no isinstance chain
        if not isinstance(kind, str) or isinstance(count, bool) or not isinstance(count, int) \
                or count < 0:
            raise ConfigError(f"tokens: {kind!r}={count!r} is not a non-negative token count")
    return counts
