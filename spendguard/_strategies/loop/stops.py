"""Stop conditions for agent loops: small composable policies, like tenacity's ``stop``.

A policy looks at a :class:`LoopState` before each step and returns a :class:`Stop` (why, in
words) or None to go on. Combine with ``|`` (stop when any says stop) and ``&`` (only when all
do); ``stop_never`` is the null policy; a plain ``state -> bool`` callable works too.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO, format_usd, parse_usd

__all__ = [
    "LoopState",
    "Stop",
    "StopLike",
    "StopPolicy",
    "StopReason",
    "as_stop",
    "project_next_usd",
    "stop_after_seconds",
    "stop_after_steps",
    "stop_after_usd",
    "stop_all",
    "stop_any",
    "stop_never",
    "stop_when",
    "stop_when_stalled",
    "stop_when_unaffordable",
]


class StopReason(StrEnum):
    """Why a loop stopped."""

    STEPS = "steps"
    USD = "usd"
    """The loop's own dollar cap: spent, or the next step projected over it."""
    BUDGET = "budget"
    """The attached budget cannot cover the next step's projected cost."""
    TIME = "time"
    STALLED = "stalled"
    """No new items and no new output for ``patience`` steps."""
    CUSTOM = "custom"


@dataclass(frozen=True, slots=True)
class Stop:
    """A decision to stop: the reason and a sentence of detail."""

    reason: StopReason
    detail: str
    scope: str | None = None
    """For a money stop on a budget: the budget's scope."""
    spent_usd: Decimal | None = None
    """For a money stop on a budget: what the budget had spent (USD)."""
    left_usd: Decimal | None = None
    """For a money stop on a budget: what the budget had left (USD)."""

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.detail}"


@dataclass(frozen=True, slots=True)
class LoopState:
    """What a stop policy sees before a step (money in USD, time in seconds)."""

    steps: int
    """Steps finished so far."""
    spent_usd: Decimal
    step_costs_usd: tuple[Decimal, ...]
    next_step_usd: Decimal
    """The projected cost of the next step (see :func:`project_next_usd`)."""
    elapsed_s: float
    stalled_steps: int
    """Steps in a row that reported no progress."""
    budget_left_usd: Decimal | None = None
    next_step_reserve_usd: Decimal | None = None
    """The most the next step is projected to need reserved at once: what the guarded client
    will hold for its dearest call on top of what the step spent before it (see
    :mod:`spendguard._strategies.loop.reserve`); None when the budget keeps no ledger records."""


def project_next_usd(step_costs_usd: Sequence[Decimal], first_step_usd: Decimal = ZERO) -> Decimal:
    """The next step's cost: the dearest of the last three, or the last plus its growth.

    Agent steps usually grow (each re-sends the history), so the last step's increase over the
    one before is assumed to repeat; taking the dearest recent step covers loops that alternate
    cheap and expensive steps. Before any step, ``first_step_usd`` (the caller's guess, or 0).
    """
    if not step_costs_usd:
        return first_step_usd
    last = step_costs_usd[-1]
    growth = last - step_costs_usd[-2] if len(step_costs_usd) > 1 else ZERO
    return max(*step_costs_usd[-3:], last + max(growth, ZERO))


class StopPolicy(abc.ABC):
    """Base class of stop conditions."""

    @abc.abstractmethod
    def __call__(self, state: LoopState) -> Stop | None:
        """A Stop to end the loop before the next step, or None to go on."""

    def __or__(self, other: StopLike) -> stop_any:
        return stop_any(self, other)

    def __and__(self, other: StopLike) -> stop_all:
        return stop_all(self, other)


StopLike = StopPolicy | Callable[[LoopState], bool | Stop | None] | None


class stop_any(StopPolicy):  # lower case like tenacity's stop_* policies
    """Stops when any policy stops; the first one's reason is kept."""

    def __init__(self, *policies: StopLike) -> None:
        self.policies = tuple(as_stop(p) for p in policies)

    def __call__(self, state: LoopState) -> Stop | None:
        return next((stop for p in self.policies if (stop := p(state)) is not None), None)


class stop_all(StopPolicy):
    """Stops only when every policy stops; the first one's reason, all the details."""

    def __init__(self, *policies: StopLike) -> None:
        self.policies = tuple(as_stop(p) for p in policies)

    def __call__(self, state: LoopState) -> Stop | None:
        stops = [p(state) for p in self.policies]
        if not stops or any(s is None for s in stops):
            return None
        found = [s for s in stops if s is not None]
        return Stop(found[0].reason, " and ".join(s.detail for s in found))


class _StopNever(StopPolicy):
    """The null policy: never stops."""

    def __call__(self, state: LoopState) -> Stop | None:
        return None

    def __repr__(self) -> str:
        return "stop_never"


stop_never = _StopNever()


class stop_when(StopPolicy):
    """A plain ``state -> bool`` (or ``-> Stop | None``) function as a policy."""

    def __init__(self, function: Callable[[LoopState], bool | Stop | None], *,
                 detail: str | None = None) -> None:
        self.function = function
        self.detail = detail or f"{getattr(function, '__name__', 'condition')} said stop"

    def __call__(self, state: LoopState) -> Stop | None:
        result = self.function(state)
        if isinstance(result, Stop) or result is None:
            return result
        return Stop(StopReason.CUSTOM, self.detail) if result else None


def as_stop(value: StopLike) -> StopPolicy:
    """The policy for a policy-like value: a StopPolicy, a callable, or None (never stop)."""
    if value is None:
        return stop_never
    if isinstance(value, StopPolicy):
        return value
    if callable(value):
        return stop_when(value)
    raise ConfigError(f"stop: expected a stop policy such as spendguard.stop_after_steps(10) "
                      f"or a function of the loop state, got {type(value).__name__}")


class stop_after_steps(StopPolicy):
    """Stops once ``steps`` steps have run."""

    def __init__(self, steps: int) -> None:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise ConfigError(f"max_steps: expected a whole number >= 0, got {steps!r}")
        self.steps = steps

    def __call__(self, state: LoopState) -> Stop | None:
        if state.steps >= self.steps:
            return Stop(StopReason.STEPS, f"ran {state.steps} of {self.steps} steps")
        return None


class stop_after_usd(StopPolicy):
    """Stops before a step whose projected cost would take spending over ``limit_usd``."""

    def __init__(self, limit_usd: object) -> None:
        self.limit_usd = parse_usd(limit_usd, field="max_usd")

    def __call__(self, state: LoopState) -> Stop | None:
        if state.spent_usd >= self.limit_usd:
            return Stop(StopReason.USD, f"spent {format_usd(state.spent_usd)} of the "
                                        f"{format_usd(self.limit_usd)} cap")
        if state.spent_usd + state.next_step_usd > self.limit_usd:
            return Stop(StopReason.USD, f"next step projected at "
                                        f"{format_usd(state.next_step_usd)} would take "
                                        f"{format_usd(state.spent_usd)} spent over the "
                                        f"{format_usd(self.limit_usd)} cap")
        return None


class stop_when_unaffordable(StopPolicy):
    """Stops when the attached budget has less left than the next step will need reserved.

    That is the worst case the guarded client reserves (``next_step_reserve_usd``) when the
    budget's ledger says what it reserved, else the projected cost.
    """

    def __call__(self, state: LoopState) -> Stop | None:
        left = state.budget_left_usd
        need = (state.next_step_usd if state.next_step_reserve_usd is None
                else max(state.next_step_reserve_usd, state.next_step_usd))
        if left is not None and (left <= 0 or need > left):
            what = "cost" if state.next_step_reserve_usd is None else "worst case"
            return Stop(StopReason.BUDGET, f"next step's {what} projected at "
                                           f"{format_usd(need)}, budget has "
                                           f"{format_usd(left)} left", left_usd=left)
        return None


class stop_after_seconds(StopPolicy):
    """Stops once ``seconds`` of wall time have passed since the loop started."""

    def __init__(self, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ConfigError(f"max_seconds: expected a number of seconds >= 0, got {seconds!r}")
        self.seconds = float(seconds)

    def __call__(self, state: LoopState) -> Stop | None:
        if state.elapsed_s >= self.seconds:
            return Stop(StopReason.TIME, f"{state.elapsed_s:.1f}s elapsed of {self.seconds:g}s")
        return None


class stop_when_stalled(StopPolicy):
    """Stops after ``patience`` steps in a row found nothing new (no new items, no new output)."""

    def __init__(self, patience: int = 3) -> None:
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ConfigError(f"patience: expected a whole number of steps >= 1, got "
                              f"{patience!r}")
        self.patience = patience

    def __call__(self, state: LoopState) -> Stop | None:
        if state.stalled_steps >= self.patience:
            return Stop(StopReason.STALLED, f"{state.stalled_steps} steps in a row found "
                                            f"nothing new (patience {self.patience})")
        return None
