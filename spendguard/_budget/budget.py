"""Budgets: a limit in USD for a scope, per period, that every guarded call is checked against.

A budget may also cap the number of calls (``max_calls``) in the same period; the stricter of
the two limits refuses. The period is all time, a UTC day or month, or a rolling window
(``"1h"``, ``"24h"``, ``"7d"``: see :mod:`spendguard._core.periods`).

A call is charged to every budget around it — the client's own, each one entered with
``with budget:`` / ``async with budget:``, and all their parents — once each. Before it is sent
its worst case is reserved in all of them at once (or it is refused with ``BudgetExceeded``);
when it ends the reservation is settled at the actual cost, or released if nothing was billed.
"""

from __future__ import annotations

import math
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from spendguard._budget.degrade import Degrade
from spendguard._budget.ledger import open_ledger, resolve_ledger_url
from spendguard._budget.ledger.base import (
    DEFAULT_RESERVATION_TTL_S,
    CallInfo,
    Ledger,
    ScopeClaim,
    Totals,
)
from spendguard._budget.runaway import RunawayRules
from spendguard._budget.scopes import enter, leave
from spendguard._budget.thresholds import WarnCallback, check_warn_at, warn_usd
from spendguard._budget.webhooks import Webhook, check_webhooks, watch
from spendguard._core.errors import BudgetConfigError, ConfigError
from spendguard._core.money import MAX_LIMIT_USD, ZERO, normalised, parse_usd
from spendguard._core.periods import (
    ALL_TIME,
    Clock,
    Period,
    check_period,
    period_key,
    read_clock,
    utc_now,
    window_keys,
)

if TYPE_CHECKING:
    from spendguard._budget.templates import BudgetTemplate

__all__ = [
    "DEFAULT_RESERVATION_TTL_S",
    "Budget",
    "CallInfo",
]

_MAX_SCOPE_LENGTH = 200
_INHERIT: object = object()
DEFAULT_RUNAWAY = RunawayRules()
_P = TypeVar("_P")


def _check_policy(value: _P | None, kind: type[_P], name: str) -> _P | None:
    if value is None or isinstance(value, kind):
        return value
    raise BudgetConfigError(f"{name}: expected a {kind.__name__} or None, got "
                            f"{type(value).__name__}", field=name)
# Held while a budget opens its ledger, so threads first using one budget at once open one
# ledger (a private ``memory://`` is a new ledger per open). Re-entrant: a child asks its parent.
_opening = threading.RLock()


class Budget:
    """A spending limit (USD) for one scope, for all time, per UTC day or month, or over a
    rolling window (``period="1h"``), optionally with a cap on the number of calls.

    ``scope`` names what is limited (``"project:acme"``); budgets with the same scope and
    ledger share their spending, across threads and processes. Without a scope the budget
    is private to this object (a fresh name is made up). ``ledger`` is a URL
    (``"sqlite:///spend.db"``, ``"memory://name"``), a path, or a ledger; by default the
    SQLite file in spendguard's data directory. ``clock`` returns an aware ``datetime``.
    ``max_calls`` caps the calls counted in the period (in flight, settled or recovered;
    an attempt that was not billed is not counted).
    ``enforce=False`` is observe mode: calls are estimated, recorded and warned about as
    usual, but a call the limit would refuse is sent and recorded as "would have refused".
    ``learn_bounds=False`` reserves the static bound for inexact input counts (Claude) in
    calls charged to this budget, instead of one learned from the ledger's history
    (:mod:`spendguard._budget.learned_bounds`).
    ``alerts`` is a :class:`~spendguard.Webhook` (or a list): the warning level, the limit,
    a forecast breach and a runaway trip are posted there once per scope, period and
    threshold, off the call path (:mod:`spendguard._budget.alerts`).
    """

    def __init__(self, limit_usd: Decimal | str | int, *,
                 warn_at: float | Decimal | str | None = 0.8, on_warn: WarnCallback | None = None,
                 ledger: str | os.PathLike[str] | Ledger | None = None,
                 scope: str | None = None, period: Period | None = None,
                 clock: Clock | None = None,
                 reservation_ttl_s: float = DEFAULT_RESERVATION_TTL_S,
                 runaway: RunawayRules | None = DEFAULT_RUNAWAY,
                 degrade: Degrade | None = None,
                 max_calls: int | None = None,
                 enforce: bool = True, learn_bounds: bool = True,
                 alerts: Webhook | Sequence[Webhook] | None = None,
                 _parent: Budget | None = None) -> None:
        try:
            self.limit_usd: Decimal = parse_usd(limit_usd, field="limit_usd",
                                                maximum=MAX_LIMIT_USD)
        except ConfigError as exc:
            raise BudgetConfigError(str(exc), field="limit_usd") from None
        self.warn_at: Decimal | None = check_warn_at(warn_at)
        self.on_warn = _check_callable(on_warn, "on_warn")
        self.scope: str = (f"budget:{uuid.uuid4().hex[:12]}" if scope is None
                           else _check_scope(scope, "scope"))
        self.period: Period | None = check_period(period)
        self.clock: Clock = _check_callable(clock, "clock") or utc_now
        self.reservation_ttl_s = _check_ttl(reservation_ttl_s)
        self.max_calls: int | None = _check_max_calls(max_calls)
        if not isinstance(enforce, bool):
            raise BudgetConfigError(f"enforce: expected True or False, got {enforce!r}",
                                    field="enforce")
        self.enforce = enforce  # False: observe mode (_budget.observing), nothing refused
        if not isinstance(learn_bounds, bool):
            raise BudgetConfigError(f"learn_bounds: expected True or False, got "
                                    f"{learn_bounds!r}", field="learn_bounds")
        self.learn_bounds = learn_bounds  # False: static input bounds (see learned_bounds)
        self.parent = _parent
        self.runaway = _check_policy(runaway, RunawayRules, "runaway")
        self.degrade = _check_policy(degrade, Degrade, "degrade")
        self.templates: list[BudgetTemplate] = []
        # Where thresholds are sent (_budget.alerts): off the call path, once per period.
        self.alerts: tuple[Webhook, ...] = check_webhooks(alerts)
        if self.alerts:
            watch(self)
        self._warn_usd = warn_usd(self.limit_usd, self.warn_at)
        self._ledger: Ledger | None = None
        self._ledger_url: str | None = None
        if isinstance(ledger, str | os.PathLike):
            try:
                self._ledger_url = resolve_ledger_url(ledger)
            except ConfigError as exc:
                raise BudgetConfigError(str(exc), field="ledger") from None
        elif ledger is not None:
            if not isinstance(ledger, Ledger):
                raise BudgetConfigError(f"ledger: expected a URL, a path or a Ledger, got "
                                        f"{type(ledger).__name__}", field="ledger")
            self._ledger = ledger

    # -- where and when -----------------------------------------------------------------

    @property
    def ledger(self) -> Ledger:
        """The ledger this budget's spending is kept in (opened on first use)."""
        if self._ledger is not None:
            return self._ledger
        with _opening:
            if self._ledger is None:
                if self.parent is not None and self._ledger_url is None:
                    self._ledger = self.parent.ledger
                else:
                    self._ledger = open_ledger(self._ledger_url)  # None: the default, read now
            return self._ledger

    def now(self) -> datetime:
        """The budget clock's current time, in UTC."""
        return read_clock(self.clock)

    @property
    def period_key(self) -> str:
        """The current period's key: ``"all"``, ``"2026-05-21"``, ``"2026-05"``, or a rolling
        window's current step (``"1h@1779357900"``)."""
        return period_key(self.period, self.now())

    def claim(self, now: datetime) -> ScopeClaim:
        """This budget as the ledger checks it, for a call made at ``now``."""
        # A budget for all time (the usual one) has one key: no call to work it out.
        key = ALL_TIME if self.period is None else period_key(self.period, now)
        return ScopeClaim(self.scope, key, self.limit_usd, self._warn_usd, self.max_calls)

    def lineage(self) -> list[Budget]:
        """This budget and its parents, outermost first."""
        chain: list[Budget] = []
        budget: Budget | None = self
        while budget is not None:
            chain.append(budget)
            budget = budget.parent
        return chain[::-1]

    # -- money, in the current period ---------------------------------------------------

    def totals(self) -> Totals:
        """Spent and reserved USD, and calls counted, in the current period (for a rolling
        window: in its steps that a limit checks now)."""
        keys = window_keys(self.period_key)
        if len(keys) == 1:
            return self.ledger.totals(self.scope, keys[0])
        return self.ledger.totals_sum(self.scope, keys)

    @property
    def spent(self) -> Decimal:
        """USD settled in the current period (including recovered and adjusted amounts)."""
        return normalised(self.totals().spent_usd)

    @property
    def reserved(self) -> Decimal:
        """USD held by calls in flight in the current period (their worst cases)."""
        return normalised(self.totals().reserved_usd)

    @property
    def remaining(self) -> Decimal:
        """USD a new call may still reserve in the current period (never below zero)."""
        return normalised(max(self.limit_usd - self.totals().committed_usd, ZERO))

    @property
    def calls(self) -> int:
        """Calls counted in the current period: in flight, settled or recovered."""
        return self.totals().calls

    @property
    def calls_left(self) -> int | None:
        """Calls ``max_calls`` still allows in the current period (None without a cap)."""
        if self.max_calls is None:
            return None
        return max(self.max_calls - self.calls, 0)

    # -- nesting --------------------------------------------------------------------------

    def child(self, name: str, *, limit_usd: Decimal | str | int,
              warn_at: object = _INHERIT, on_warn: object = _INHERIT,
              period: object = _INHERIT, max_calls: int | None = None,
              enforce: object = _INHERIT, alerts: object = _INHERIT) -> Budget:
        """A nested budget, scope ``"<this scope>/<name>"``, in the same ledger.

        Whatever the child spends counts toward this budget too. ``warn_at``, ``on_warn``,
        ``period``, ``enforce`` and ``alerts`` are inherited unless given; so are the clock, the
        reservation expiry, the runaway rules, the degrade policy and ``learn_bounds``.
        ``max_calls`` is the child's own (not inherited).
        """
        name = _check_scope(name, "name")
        if "/" in name:
            raise BudgetConfigError(f"name: {name!r} contains '/', which separates nested "
                                    f"scopes; use e.g. 'run:42'", field="name")
        return Budget(
            limit_usd,
            warn_at=self.warn_at if warn_at is _INHERIT else warn_at,  # type: ignore[arg-type]
            on_warn=self.on_warn if on_warn is _INHERIT else on_warn,  # type: ignore[arg-type]
            period=self.period if period is _INHERIT else period,  # type: ignore[arg-type]
            scope=f"{self.scope}/{name}", clock=self.clock,
            reservation_ttl_s=self.reservation_ttl_s, max_calls=max_calls,
            runaway=self.runaway, degrade=self.degrade, learn_bounds=self.learn_bounds,
            enforce=self.enforce if enforce is _INHERIT else enforce,  # type: ignore[arg-type]
            alerts=self.alerts if alerts is _INHERIT else alerts,  # type: ignore[arg-type]
            _parent=self,
        )

    def per(self, by: str, *, limit_usd: Decimal | str | int, warn_at: object = _INHERIT,
            on_warn: object = _INHERIT, period: object = _INHERIT,
            max_calls: int | None = None, max_children: int | None = None,
            overflow: str = "share") -> BudgetTemplate:
        """A child budget per end user (``by="user"``) or per value of a tag (``"tag:KEY"``).

        Each call charged to this budget is also charged to the child of its user: scope
        ``"<this scope>/user:<id>"``, with this limit, period and call cap, made on first
        sight in the same transaction as the call. The user is the request's
        ``safety_identifier`` or ``user`` (OpenAI) or ``metadata.user_id`` (Anthropic).
        ``max_children`` caps the distinct children per period; past it a new value's calls
        share one scope, ``"<this scope>/user:%overflow"`` (``overflow="share"``), or are
        refused (``overflow="refuse"``).
        """
        from spendguard._budget.templates import BudgetTemplate  # noqa: PLC0415 - templates import budgets

        options: dict[str, object] = {"max_calls": max_calls}
        for name, value in (("warn_at", warn_at), ("on_warn", on_warn), ("period", period)):
            if value is not _INHERIT:
                options[name] = value
        template = BudgetTemplate(self, by, limit_usd=limit_usd, options=options,
                                  max_children=max_children, overflow=overflow)
        self.templates.append(template)
        return template

    def __enter__(self) -> Budget:
        enter(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        leave(self)

    async def __aenter__(self) -> Budget:
        enter(self)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        leave(self)

    def __repr__(self) -> str:
        period = f", period={self.period!r}" if self.period else ""
        calls = "" if self.max_calls is None else f", max_calls={self.max_calls}"
        observe = "" if self.enforce else ", enforce=False"
        return f"Budget({str(self.limit_usd)!r}, scope={self.scope!r}{period}{calls}{observe})"


def _check_scope(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_SCOPE_LENGTH or (
            not value.isprintable()):
        raise BudgetConfigError(f"{field}: {value!r} is not a scope name; use a short printable "
                                f"string such as 'project:acme' or 'user:42'", field=field)
    return value


_F = TypeVar("_F", bound=Callable[..., object])


def _check_callable(value: _F | None, field: str) -> _F | None:
    if value is not None and not callable(value):
        raise BudgetConfigError(f"{field}: expected a function, got {type(value).__name__}",
                                field=field)
    return value


def _check_max_calls(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BudgetConfigError(f"max_calls: {value!r} must be a whole number of calls, 0 or "
                                f"more (None: no cap)", field="max_calls")
    return value


def _check_ttl(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise BudgetConfigError(f"reservation_ttl_s: {value!r} must be a positive number of "
                                f"seconds (default {DEFAULT_RESERVATION_TTL_S:.0f})",
                                field="reservation_ttl_s")
    return float(value)
