"""The loop guard: caps an agent loop on dollars, steps and time, and stops it when it stalls.

::

    guard = spendguard.loop(max_usd="2.00", max_steps=30, patience=3, budget=budget)
    for step in guard:
        reply = client.chat.completions.create(...)
        step.record(reply)                 # its text (for repeats) and, without a budget, its cost
        step.found(new_urls)               # what this step discovered, if anything
    print(guard.stop_reason, guard.stop_detail)

Before each step the guard projects the step's cost from the last ones and stops if that would
not fit; with a budget, it projects the worst case the guarded client will reserve (read back
from the ledger, :mod:`spendguard._strategies.loop.reserve`). A call the budget refuses inside a
step ends the loop with ``stop_reason`` ``budget`` when the loop (``with guard:``) or the step
(``with step:``) is entered. The stop conditions are :mod:`spendguard._strategies.loop.stops`
policies; ``stop=`` adds your own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from decimal import Decimal
from types import TracebackType
from typing import Any

from spendguard._core.errors import BudgetExceeded, ConfigError
from spendguard._core.money import ZERO, format_usd, parse_usd
from spendguard._strategies import replies
from spendguard._strategies.loop.novelty import Progress, normalise
from spendguard._strategies.loop.reserve import StepWindow, open_window, peak_usd
from spendguard._strategies.loop.stops import (
    LoopState,
    Stop,
    StopLike,
    StopReason,
    as_stop,
    project_next_usd,
    stop_after_seconds,
    stop_after_steps,
    stop_after_usd,
    stop_when_stalled,
    stop_when_unaffordable,
)

__all__ = ["LoopGuard", "Step", "loop"]


class Step:
    """One pass of a guarded loop: report what it spent, found and said."""

    def __init__(self, guard: LoopGuard, index: int) -> None:
        self.guard = guard
        self.index = index
        """0 for the first step."""

    def spend(self, usd: object) -> None:
        """Charge money the guard cannot see by itself (a paid tool call, an unguarded client)."""
        self.guard._charge(parse_usd(usd, field="usd"))

    def found(self, items: Iterable[Any]) -> int:
        """Report what this step discovered; returns how many were new. ``[]`` is a report."""
        return self.guard._progress.found(items)

    def observe(self, output: str) -> bool:
        """Report this step's output; False when it repeats a recent one (near-identical)."""
        return self.guard._progress.observe(output)

    def record(self, response: Any, *, model: str | None = None) -> Decimal:
        """Report an SDK reply: its text is observed and its cost (USD) returned.

        The cost is charged to the loop only when the guard has no budget attached: with one,
        the guarded client already charged it to the budget, which the guard reads. ``model``
        prices it (default: the model the reply names).
        """
        provider, endpoint = replies.reply_kind(response)
        self.observe(replies.reply_text(endpoint, response))
        usage = replies.reply_usage(provider, response)
        usd = replies.cost_usd(model or replies.reply_model(response), usage)
        if self.guard.budget is None:
            self.guard._charge(usd)
        return usd

    def __enter__(self) -> Step:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        """Ends the loop cleanly when a call in the step was refused by a budget."""
        return self.guard._absorb(exc)


class LoopGuard:
    """Iterate it to run a guarded loop; ``stop_reason`` says why it ended (None: you broke)."""

    def __init__(self, stop: StopLike = None, *, max_steps: int | None = None,
                 max_usd: object | None = None, max_seconds: float | None = None,
                 patience: int | None = None, budget: object | None = None,
                 first_step_usd: object = ZERO, similarity: float = 0.9,
                 key: Callable[[Any], Hashable] = normalise,
                 item_similarity: float | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 parent: LoopGuard | None = None) -> None:
        policy = as_stop(stop)
        if max_steps is not None:
            policy = policy | stop_after_steps(max_steps)
        self.max_usd = None if max_usd is None else parse_usd(max_usd, field="max_usd")
        if self.max_usd is not None:
            policy = policy | stop_after_usd(self.max_usd)
        self.max_seconds = max_seconds
        if max_seconds is not None:
            policy = policy | stop_after_seconds(max_seconds)
        if patience is not None:
            policy = policy | stop_when_stalled(patience)
        if budget is not None:
            replies.remaining_usd(budget)  # fail now, not at the first step, on a wrong object
            policy = policy | stop_when_unaffordable()
        self.policy = policy
        self.budget = budget
        self.first_step_usd = parse_usd(first_step_usd, field="first_step_usd")
        self.clock = clock
        self.parent = parent
        self._progress = Progress(similarity=similarity, key=key,
                                  item_similarity=item_similarity)
        self.step_costs_usd: list[Decimal] = []
        self.step_peaks_usd: list[Decimal] = []
        """Per finished step, the most it had committed at once on the budget's ledger."""
        self.stopped: Stop | None = None
        self._started: float | None = None
        self._step_extra_usd = ZERO
        self._step_budget_start: Decimal | None = None
        self._in_step = False
        self._outside_steps_usd = ZERO
        self._window: StepWindow | None = None
        self._refused_worst_usd: Decimal | None = None

    # --- what callers read ----------------------------------------------------------------

    @property
    def steps(self) -> int:
        """Steps finished."""
        return len(self.step_costs_usd)

    @property
    def spent_usd(self) -> Decimal:
        """USD spent by finished steps, the step running now so far, and outside steps."""
        return (sum(self.step_costs_usd, ZERO) + self._running_step_usd()
                + self._outside_steps_usd)

    def _running_step_usd(self) -> Decimal:
        if not self._in_step:
            return ZERO
        cost = self._step_extra_usd
        if self._step_budget_start is not None:
            # What the guarded client charged the budget during the step; never negative
            # (a released reservation can give money back).
            cost += max(self._step_budget_start - replies.remaining_usd(self.budget), ZERO)
        return cost

    @property
    def elapsed_s(self) -> float:
        """Seconds since the loop started (0 before the first step)."""
        return 0.0 if self._started is None else self.clock() - self._started

    @property
    def stop_reason(self) -> StopReason | None:
        """Why the loop stopped, or None while it runs or when the caller broke out."""
        return None if self.stopped is None else self.stopped.reason

    @property
    def stop_detail(self) -> str:
        """The stop in a sentence ("" while running)."""
        return "" if self.stopped is None else self.stopped.detail

    def left_usd(self) -> Decimal | None:
        """What this loop may still spend: its cap and its budget, whichever is less."""
        limits = [] if self.max_usd is None else [max(self.max_usd - self.spent_usd, ZERO)]
        if self.budget is not None:
            limits.append(max(replies.remaining_usd(self.budget), ZERO))
        return min(limits) if limits else None

    def state(self) -> LoopState:
        """The loop as stop policies see it."""
        budget_left = None if self.budget is None else replies.remaining_usd(self.budget)
        reserve = None
        if self.step_peaks_usd:
            reserve = project_next_usd(self.step_peaks_usd, self.first_step_usd)
        return LoopState(self.steps, self.spent_usd, tuple(self.step_costs_usd),
                         project_next_usd(self.step_costs_usd, self.first_step_usd),
                         self.elapsed_s, self._progress.stalled_steps, budget_left, reserve)

    # --- running --------------------------------------------------------------------------

    def should_stop(self) -> Stop | None:
        """Ask the policies now (for hand-written loops); remembers and returns the Stop."""
        if self._started is None:
            self._started = self.clock()
        if self.stopped is None:
            self.stopped = self._name_budget(self.policy(self.state()))
        return self.stopped

    def _name_budget(self, stop: Stop | None) -> Stop | None:
        """A budget stop says which budget, what it spent and what it had left."""
        if stop is None or stop.reason is not StopReason.BUDGET or stop.scope is not None:
            return stop
        scope = getattr(self.budget, "scope", None)
        spent = getattr(self.budget, "spent", None)
        if not isinstance(scope, str) or not isinstance(spent, Decimal):
            return stop
        return Stop(stop.reason, f"budget {scope} ({format_usd(spent)} spent): {stop.detail}",
                    scope=scope, spent_usd=spent, left_usd=stop.left_usd)

    def __iter__(self) -> Iterator[Step]:
        while self.should_stop() is None:
            step = self._begin()
            try:
                yield step
            finally:
                self._end()

    def _begin(self) -> Step:
        self._in_step = True
        self._step_extra_usd = ZERO
        self._refused_worst_usd = None
        self._step_budget_start = (None if self.budget is None
                                   else replies.remaining_usd(self.budget))
        self._window = None if self.budget is None else open_window(self.budget)
        self._progress.begin_step()
        return Step(self, self.steps)

    def _end(self) -> None:
        if not self._in_step:
            return  # already ended by the refusal that stopped the loop
        cost = self._running_step_usd()
        self._step_extra_usd = ZERO
        self._in_step = False
        self.step_costs_usd.append(cost)
        if self._window is not None:
            self.step_peaks_usd.append(max(
                peak_usd(self._window.records(), refused_worst_usd=self._refused_worst_usd),
                cost))
        self._window = None
        self._progress.end_step()

    def _absorb(self, exc: BaseException | None) -> bool:
        """Turn a budget's refusal into this loop's stop; True when ``exc`` was one."""
        if not isinstance(exc, BudgetExceeded):
            return False
        self._refused_worst_usd = exc.estimate_usd
        if self.stopped is None:
            spent = exc.spent_usd + exc.reserved_usd
            self.stopped = Stop(
                StopReason.BUDGET,
                f"budget {exc.scope} refused a call needing {format_usd(exc.estimate_usd)}: "
                f"{format_usd(spent)} of {format_usd(exc.limit_usd)} committed, "
                f"{format_usd(max(exc.remaining_usd, ZERO))} left",
                scope=exc.scope, spent_usd=spent, left_usd=max(exc.remaining_usd, ZERO))
        self._end()
        return True

    def __enter__(self) -> LoopGuard:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        """Ends the loop cleanly when a call in a step was refused by a budget."""
        return self._absorb(exc)

    def _charge(self, usd: Decimal) -> None:
        if self._in_step:
            self._step_extra_usd += usd
        else:
            self._outside_steps_usd += usd  # e.g. a sub-agent run between steps
        if self.parent is not None:
            self.parent._charge(usd)

    def share(self, fraction: float | Decimal | str, *, stop: StopLike = None,
              max_steps: int | None = None, patience: int | None = None) -> LoopGuard:
        """A child guard for a sub-agent, capped at ``fraction`` of what this loop has left.

        Uncapped when this loop has no dollar limit. The child inherits the budget, the clock
        and the time left; money it is charged (by ``spend``/``record``) is charged to this
        loop too.
        """
        share = Decimal(str(fraction)) if isinstance(fraction, float) else Decimal(fraction)
        if not ZERO < share <= 1:
            raise ConfigError(f"fraction: expected a share in (0, 1], got {fraction!r}")
        left = self.left_usd()
        seconds = None if self.max_seconds is None else max(self.max_seconds - self.elapsed_s,
                                                            0.0)
        return LoopGuard(stop, max_steps=max_steps, patience=patience,
                         max_usd=None if left is None else left * share,
                         max_seconds=seconds, budget=self.budget, clock=self.clock,
                         similarity=self._progress.similarity, key=self._progress.key,
                         item_similarity=self._progress.item_similarity, parent=self)


def loop(stop: StopLike = None, *, max_steps: int | None = None, max_usd: object | None = None,
         max_seconds: float | None = None, patience: int | None = None,
         budget: object | None = None, first_step_usd: object = ZERO, similarity: float = 0.9,
         key: Callable[[Any], Hashable] = normalise, item_similarity: float | None = None,
         clock: Callable[[], float] = time.monotonic) -> LoopGuard:
    """A guard for an agent loop: ``for step in spendguard.loop(max_usd="1", patience=3): ...``.

    Caps: ``max_steps``; ``max_usd`` (stops before a step projected to overrun it);
    ``max_seconds`` of wall time on ``clock``; ``patience`` steps without progress; and, with
    a ``budget``, whatever it has left (projected with the worst case its guarded clients
    reserve). ``stop`` adds any policy from :mod:`spendguard._strategies.loop.stops`. ``key`` is
    what makes two findings the same (default :func:`spendguard._strategies.loop.novelty.normalise`:
    numbers, times and ids masked); ``item_similarity`` also counts a text finding as seen when it
    is that similar to one seen before.
    """
    return LoopGuard(stop, max_steps=max_steps, max_usd=max_usd, max_seconds=max_seconds,
                     patience=patience, budget=budget, first_step_usd=first_step_usd,
                     similarity=similarity, key=key, item_similarity=item_similarity,
                     clock=clock)

