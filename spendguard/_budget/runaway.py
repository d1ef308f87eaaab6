"""Runaway detection at the choke point: loops nobody wrapped, caught from the calls alone.

Three rules, evaluated per budget scope before a call is reserved, for every caller —
including code spendguard does not own (``install()``, ``spendguard run``):

- **repeats**: the same request — identical once volatile values (timestamps, UUIDs, request
  ids, epoch times) are masked — sent ``max_repeats`` times within ``repeat_window_s``. SDK
  retries of one call are not repeats (they are counted by ``max_attempts_per_call``).
- **velocity**: the scope's spend in the last minute above ``max_usd_per_minute``, read from
  the ledger so that every process sharing it counts.
- **attempts**: more than ``max_attempts_per_call`` attempts of one logical call (the SDK
  retrying after 429/5xx), or more than ``max_attempts_per_minute`` attempts in a minute.

What a trip does is the rules' ``action``: ``"warn"`` (tell, refuse nothing), ``"cooldown"``
(refuse further calls of the tripping shape for ``cooldown_s``; the default), or
``"refuse_scope"`` (refuse every call of the scope for ``cooldown_s``). Every trip is logged,
reaches the budget's ``on_warn`` and is written to the ledger as a zero-dollar event record
(tag ``spendguard.event=runaway``), so ``spendguard report`` lists it.

The state of the repeat and attempt rules lives in this process (a repeat loop is one
process's loop); velocity reads the shared ledger.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Literal

from spendguard._core.errors import BudgetConfigError
from spendguard._core.money import format_usd, parse_usd

__all__ = ["RUNAWAYS", "RunawayRules", "RunawayTrip", "Runaways", "lift_runaway"]

log = logging.getLogger("spendguard.runaway")

Action = Literal["warn", "cooldown", "refuse_scope"]
Rule = Literal["repeats", "velocity", "attempts_per_call", "attempts_per_minute"]
_Hit = tuple[Rule, str]  # the rule that tripped, and what it saw
_ACTIONS: tuple[str, ...] = ("warn", "cooldown", "refuse_scope")
_MAX_SHAPES_PER_SCOPE = 4096  # repeat windows kept per scope; the oldest shapes are dropped
_VELOCITY_WINDOW = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class RunawayRules:
    """Runaway detection for one budget; ``Budget(..., runaway=RunawayRules(...))``.

    The defaults are conservative: 20 identical requests within a minute cool that request
    down for five minutes; nothing else is limited until you set it. ``runaway=None`` on a
    budget turns detection off for that scope.
    """

    max_repeats: int | None = 20
    repeat_window_s: float = 60.0
    cooldown_s: float = 300.0
    action: Action = "cooldown"
    max_usd_per_minute: Decimal | str | int | None = None
    max_attempts_per_call: int | None = None
    max_attempts_per_minute: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_repeats", "max_attempts_per_call", "max_attempts_per_minute"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise BudgetConfigError(f"runaway.{name}: {value!r} must be a whole number "
                                        f"of at least 1, or None for no limit", field=name)
        for name in ("repeat_window_s", "cooldown_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise BudgetConfigError(f"runaway.{name}: {value!r} must be a positive number "
                                        f"of seconds", field=name)
        if self.action not in _ACTIONS:
            raise BudgetConfigError(f"runaway.action: {self.action!r} is not one of "
                                    f"{', '.join(_ACTIONS)}", field="action")
        if self.max_usd_per_minute is not None:
            object.__setattr__(self, "max_usd_per_minute",
                               parse_usd(self.max_usd_per_minute, field="max_usd_per_minute"))


@dataclass(frozen=True, slots=True)
class RunawayTrip:
    """What ``on_warn`` receives when a runaway rule trips (and what a refusal carries)."""

    scope: str
    rule: Rule
    action: Action
    detail: str
    until: datetime | None
    """When the cool-down ends (None for ``"warn"``)."""

    def message(self) -> str:
        done = {"warn": "warning only", "cooldown": "refusing this request",
                "refuse_scope": "refusing every call of the scope"}[self.action]
        until = "" if self.until is None else f" until {self.until:%H:%M:%S} UTC"
        return (f"spendguard runaway detection in {self.scope!r}: {self.detail}; {done}{until}."
                f" To lift it: spendguard.lift_runaway({self.scope!r}), raise "
                f"RunawayRules({self.rule_field}=...) on the budget, or pass runaway=None to "
                f"turn detection off for this scope")

    @property
    def rule_field(self) -> str:
        return {"repeats": "max_repeats", "velocity": "max_usd_per_minute",
                "attempts_per_call": "max_attempts_per_call",
                "attempts_per_minute": "max_attempts_per_minute"}[self.rule]


SpendSince = Callable[[datetime], Decimal]
"""Reads a scope's settled spend since a moment (USD) from its ledger."""


class _ScopeState:
    __slots__ = ("attempts", "blocked_shapes", "blocked_until", "lock", "shapes")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shapes: OrderedDict[str, deque[datetime]] = OrderedDict()
        self.blocked_shapes: dict[str, datetime] = {}
        self.blocked_until: datetime | None = None
        self.attempts: deque[datetime] = deque()


class Runaways:
    """The detection state of every scope in this process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scopes: dict[str, _ScopeState] = {}

    def _state(self, scope: str) -> _ScopeState:
        state = self._scopes.get(scope)  # a dict read is atomic: the lock only to add one
        if state is not None:
            return state
        with self._lock:
            state = self._scopes.get(scope)
            if state is None:
                state = self._scopes[scope] = _ScopeState()
            return state

    def check(self, scope: str, rules: RunawayRules, *, shape: str, attempt: int,
              now: datetime, spend_since: SpendSince | None) -> tuple[RunawayTrip | None, bool]:
        """``(trip, refuse)``: a rule that newly tripped (or None), and whether to refuse.

        A refusal during an existing cool-down comes with no new trip (it was told once).
        """
        state = self._state(scope)
        with state.lock:
            if state.blocked_until is not None and now < state.blocked_until:
                return None, True
            if shape in state.blocked_shapes:  # membership: no call for a shape not blocked
                if now < state.blocked_shapes[shape]:
                    return None, True
                del state.blocked_shapes[shape]
            hit = (self._attempts(state, rules, attempt, now)
                   or self._repeats(state, rules, shape, attempt, now)
                   or (None if spend_since is None  # no velocity rule: nothing to read
                       else self._velocity(state, rules, now, spend_since, scope)))
            if hit is None:
                return None, False
            trip = RunawayTrip(scope, hit[0], rules.action, hit[1],
                               None if rules.action == "warn"
                               else now + timedelta(seconds=rules.cooldown_s))
            if trip.until is not None:
                if rules.action == "refuse_scope" or trip.rule != "repeats":
                    state.blocked_until = trip.until
                else:
                    state.blocked_shapes[shape] = trip.until
            return trip, trip.until is not None

    def forget(self, scope: str) -> None:
        """Lift every cool-down of ``scope`` and clear its windows."""
        with self._lock:
            self._scopes.pop(scope, None)

    @staticmethod
    def _attempts(state: _ScopeState, rules: RunawayRules, attempt: int,
                  now: datetime) -> _Hit | None:
        if rules.max_attempts_per_call is not None and attempt > rules.max_attempts_per_call:
            return ("attempts_per_call", f"attempt {attempt} of one call exceeds "
                    f"max_attempts_per_call={rules.max_attempts_per_call}")
        if rules.max_attempts_per_minute is None:
            return None
        window = state.attempts
        while window and window[0] <= now - _VELOCITY_WINDOW:
            window.popleft()
        if len(window) >= rules.max_attempts_per_minute:
            return ("attempts_per_minute", f"{len(window) + 1} attempts within a minute "
                    f"exceed max_attempts_per_minute={rules.max_attempts_per_minute}")
        window.append(now)
        return None

    @staticmethod
    def _repeats(state: _ScopeState, rules: RunawayRules, shape: str, attempt: int,
                 now: datetime) -> _Hit | None:
        if rules.max_repeats is None or attempt > 1:  # an SDK retry is not a repeat
            return None
        window = None
        if shape in state.shapes:  # membership, then indexing: no call for the look-up
            window = state.shapes[shape]
        if window is None:
            window = state.shapes[shape] = deque()
            if len(state.shapes) > _MAX_SHAPES_PER_SCOPE:
                state.shapes.popitem(last=False)
        else:
            state.shapes.move_to_end(shape)
        if window:  # a request not seen before (most of them) has nothing to expire
            horizon = now - timedelta(seconds=rules.repeat_window_s)
            while window and window[0] <= horizon:
                window.popleft()
        if len(window) >= rules.max_repeats:
            window.clear()
            if rules.action == "warn":  # this one is sent: it starts the next count
                window.append(now)
            return ("repeats", f"the same request (volatile values masked) was already sent "
                    f"{rules.max_repeats} times within {rules.repeat_window_s:g} s")
        window.append(now)
        return None

    @staticmethod
    def _velocity(state: _ScopeState, rules: RunawayRules, now: datetime,
                  spend_since: SpendSince | None,
                  scope: str) -> _Hit | None:
        limit = rules.max_usd_per_minute
        if limit is None or spend_since is None:
            return None
        assert isinstance(limit, Decimal)
        # Read at every call (only scopes that set a velocity pay for it): the spend of every
        # process sharing the ledger counts, so the overshoot is bounded by the calls in flight.
        try:
            spent = spend_since(now - _VELOCITY_WINDOW)
        except Exception:  # a ledger read failing must not refuse or break the call
            log.warning("spendguard: could not read %s's spend for runaway detection", scope,
                        exc_info=True)
            return None
        if spent > limit:
            return ("velocity", f"{format_usd(spent)} spent in the last minute exceeds "
                    f"max_usd_per_minute={format_usd(limit)}")
        return None


RUNAWAYS = Runaways()
"""This process's runaway state, shared by every guarded client."""


def lift_runaway(scope: str) -> None:
    """Lift every cool-down of ``scope`` in this process and clear its windows."""
    RUNAWAYS.forget(scope)
