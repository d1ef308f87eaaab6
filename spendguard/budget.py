"""Budgets: a limit in USD for a scope, per period, that every guarded call is checked against.

A call is charged to every budget around it — the client's own, each one entered with
``with budget:`` / ``async with budget:``, and all their parents — once each. Before it is sent
its worst case is reserved in all of them at once (or it is refused with ``BudgetExceeded``);
when it ends the reservation is settled at the actual cost, or released if nothing was billed.
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from spendguard.errors import BudgetConfigError, ConfigError
from spendguard.ledger import open_ledger, resolve_ledger_url
from spendguard.ledger.base import CallInfo, Ledger, ScopeClaim, Totals
from spendguard.money import ZERO, parse_usd
from spendguard.periods import Clock, Period, as_utc, check_period, period_key, utc_now
from spendguard.reservations import (
    DEFAULT_RESERVATION_TTL_S,
    Reservation,
    remaining_for_call,
    reserve_call,
)
from spendguard.scopes import enter, leave
from spendguard.thresholds import WarnCallback, check_warn_at, warn_usd

if TYPE_CHECKING:
    from spendguard.loop_guard import LoopGuard

__all__ = [
    "DEFAULT_RESERVATION_TTL_S",
    "Budget",
    "CallInfo",
    "Reservation",
    "remaining_for_call",
    "reserve_call",
]

_MAX_SCOPE_LENGTH = 200
_INHERIT: object = object()


class Budget:
    """A spending limit (USD) for one scope, for all time or per UTC day or month.

    ``scope`` names what is limited (``"project:acme"``); budgets with the same scope and
    ledger share their spending, across threads and processes. Without a scope the budget
    is private to this object (a fresh name is made up). ``ledger`` is a URL
    (``"sqlite:///spend.db"``, ``"memory://name"``), a path, or a ledger; by default the
    SQLite file in spendguard's data directory. ``clock`` returns an aware ``datetime``.
    ``enforce=False`` is observe mode: calls are estimated, recorded and warned about as
    usual, but a call the limit would refuse is sent and recorded as "would have refused".
    """

    def __init__(self, limit_usd: Decimal | str | int, *,
                 warn_at: float | Decimal | str | None = 0.8, on_warn: WarnCallback | None = None,
                 ledger: str | os.PathLike[str] | Ledger | None = None,
                 scope: str | None = None, period: Period | None = None,
                 clock: Clock | None = None,
                 reservation_ttl_s: float = DEFAULT_RESERVATION_TTL_S,
                 enforce: bool = True, _parent: Budget | None = None) -> None:
        try:
            self.limit_usd: Decimal = parse_usd(limit_usd, field="limit_usd")
        except ConfigError as exc:
            raise BudgetConfigError(str(exc), field="limit_usd") from None
        self.warn_at: Decimal | None = check_warn_at(warn_at)
        self.on_warn = _check_callable(on_warn, "on_warn")
        self.scope: str = (f"budget:{uuid.uuid4().hex[:12]}" if scope is None
                           else _check_scope(scope, "scope"))
        self.period: Period | None = check_period(period)
        self.clock: Clock = _check_callable(clock, "clock") or utc_now
        self.reservation_ttl_s = _check_ttl(reservation_ttl_s)
        if not isinstance(enforce, bool):
            raise BudgetConfigError(f"enforce: expected True or False, got {enforce!r}",
                                    field="enforce")
        self.enforce = enforce  # False: observe mode (spendguard.observing), nothing refused
        self.parent = _parent
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
        if self._ledger is None:
            if self.parent is not None and self._ledger_url is None:
                self._ledger = self.parent.ledger
            else:
                self._ledger = open_ledger(self._ledger_url)  # None: the default, read now
        return self._ledger

    def now(self) -> datetime:
        """The budget clock's current time, in UTC."""
        return as_utc(self.clock())

    @property
    def period_key(self) -> str:
        """The current period's key: ``"all"``, ``"2026-05-21"`` or ``"2026-05"``."""
        return period_key(self.period, self.now())

    def claim(self, now: datetime) -> ScopeClaim:
        """This budget as the ledger checks it, for a call made at ``now``."""
        return ScopeClaim(self.scope, period_key(self.period, now), self.limit_usd,
                          self._warn_usd)

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
        """Spent and reserved USD in the current period."""
        return self.ledger.totals(self.scope, self.period_key)

    @property
    def spent(self) -> Decimal:
        """USD settled in the current period (including recovered and adjusted amounts)."""
        return self.totals().spent_usd

    @property
    def reserved(self) -> Decimal:
        """USD held by calls in flight in the current period (their worst cases)."""
        return self.totals().reserved_usd

    @property
    def remaining(self) -> Decimal:
        """USD a new call may still reserve in the current period (never below zero)."""
        return max(self.limit_usd - self.totals().committed_usd, ZERO)

    # -- nesting --------------------------------------------------------------------------

    def child(self, name: str, *, limit_usd: Decimal | str | int,
              warn_at: object = _INHERIT, on_warn: object = _INHERIT,
              period: object = _INHERIT, enforce: object = _INHERIT) -> Budget:
        """A nested budget, scope ``"<this scope>/<name>"``, in the same ledger.

        Whatever the child spends counts toward this budget too. ``warn_at``, ``on_warn`` and
        ``period`` and ``enforce`` are inherited unless given; so are the clock and the
        reservation expiry.
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
            reservation_ttl_s=self.reservation_ttl_s,
            enforce=self.enforce if enforce is _INHERIT else enforce,  # type: ignore[arg-type]
            _parent=self,
        )

    def loop(self, **options: Any) -> LoopGuard:
        """An agent-loop guard charged to this budget: ``for step in budget.loop(patience=3):``.

        Takes :func:`spendguard.loop`'s options; the loop stops before a step this budget
        cannot cover.
        """
        from spendguard.loop_guard import loop  # noqa: PLC0415 - the loop guard imports budgets

        return loop(budget=self, **options)

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
        observe = "" if self.enforce else ", enforce=False"
        return f"Budget({str(self.limit_usd)!r}, scope={self.scope!r}{period}{observe})"


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


def _check_ttl(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise BudgetConfigError(f"reservation_ttl_s: {value!r} must be a positive number of "
                                f"seconds (default {DEFAULT_RESERVATION_TTL_S:.0f})",
                                field="reservation_ttl_s")
    return float(value)
