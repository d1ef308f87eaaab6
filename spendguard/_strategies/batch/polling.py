"""How waiting for a batch polls: backing off with tenacity, on an injectable clock.

Batches take minutes to hours, so the wait between looks grows (10 s, 20 s, 40 s ... up to
5 minutes by default) but never sleeps past a moment that matters: the caller's timeout, or
the point where a batch that runs late is rescued with ordinary calls. ``clock`` and ``sleep``
are injectable so tests drive time by hand and never wait; progress goes to stderr (a bar on a
terminal, one short line per look otherwise: ``wait_progress.py``).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import tenacity

from spendguard._core.errors import ConfigError
from spendguard._strategies.batch.wait_progress import StderrProgress, WaitProgress

__all__ = ["Polling", "Round", "apoll_until", "poll_until", "to_stderr"]


def to_stderr(line: str) -> None:
    """The default progress sink: one line per look, on standard error."""
    print(line, file=sys.stderr, flush=True)


class _ManualClock(Protocol):
    def __call__(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...
    async def async_sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True, slots=True)
class Polling:
    """When to look at a running batch again (seconds), and what to tell the user meanwhile.

    Waits start at ``first_wait_s`` and grow by ``multiplier`` up to ``max_wait_s``.
    ``clock`` returns epoch seconds; ``sleep`` / ``async_sleep`` wait. ``progress`` receives
    one short line per look (None: silent); the default draws a bar on a terminal instead.
    """

    first_wait_s: float = 10.0
    max_wait_s: float = 300.0
    multiplier: float = 2.0
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    progress: Callable[[str], None] | None = field(default_factory=StderrProgress)

    def __post_init__(self) -> None:
        if not 0 < self.first_wait_s <= self.max_wait_s:
            raise ConfigError(f"Polling: need 0 < first_wait_s <= max_wait_s; got "
                              f"{self.first_wait_s!r} and {self.max_wait_s!r}")
        if self.multiplier < 1:
            raise ConfigError(f"Polling.multiplier: {self.multiplier!r} must be >= 1 (waits "
                              f"never shrink)")

    @classmethod
    def manual(cls, clock: _ManualClock, **options: Any) -> Polling:
        """Polling on a hand-driven clock (``spendguard.testing.ManualClock``): no real waits."""
        return cls(clock=clock, sleep=clock.sleep, async_sleep=clock.async_sleep, **options)

    def backoff_s(self, attempt: int) -> float:
        """The wait after look number ``attempt`` (1-based), before any clamping."""
        return float(min(self.first_wait_s * self.multiplier ** (attempt - 1), self.max_wait_s))


@dataclass(frozen=True, slots=True)
class Round:
    """What one look found: whether the wait is over, and when something is next due."""

    done: bool
    status: str = ""
    wake_at_s: float | None = None
    """A moment (epoch seconds) the next look must not sleep past, e.g. a rescue point."""
    jobs_done: int = 0
    jobs_total: int = 0
    requests_done: int = 0
    requests_total: int = 0


def _tell(polling: Polling, found: Round, pause_s: float, started_s: float) -> None:
    sink = polling.progress
    if sink is None or not found.status:
        return
    if not found.jobs_total:
        sink(f"spendguard: {found.status}; next check in {pause_s:.0f}s")
        return
    progress = WaitProgress(
        status=found.status, jobs_done=found.jobs_done, jobs_total=found.jobs_total,
        requests_done=found.requests_done, requests_total=found.requests_total,
        elapsed_s=polling.clock() - started_s, next_poll_s=pause_s)
    if isinstance(sink, StderrProgress):
        sink.show(progress)
    else:
        sink(progress.line())


def _finish(polling: Polling) -> None:
    if isinstance(polling.progress, StderrProgress):
        polling.progress.close()


def _retrying_options(polling: Polling, until_s: float | None) -> dict[str, Any]:
    started_s = polling.clock()

    def wait(state: tenacity.RetryCallState) -> float:
        now = polling.clock()
        next_s = now + polling.backoff_s(state.attempt_number)
        last = state.outcome.result() if state.outcome and not state.outcome.failed else None
        for moment in (until_s, last.wake_at_s if isinstance(last, Round) else None):
            if moment is not None and now < moment < next_s:
                next_s = moment
        return max(next_s - now, 0.0)

    def stop(state: tenacity.RetryCallState) -> bool:
        return until_s is not None and polling.clock() >= until_s

    def tell(state: tenacity.RetryCallState) -> None:
        last = state.outcome.result() if state.outcome else None
        if isinstance(last, Round):
            pause = state.next_action.sleep if state.next_action else 0.0
            _tell(polling, last, pause, started_s)

    return {"wait": wait, "stop": stop, "before_sleep": tell,
            "retry": tenacity.retry_if_result(lambda found: not found.done),
            "retry_error_callback": lambda state: state.outcome.result()}


def poll_until(look: Callable[[], Round], polling: Polling, *, until_s: float | None) -> bool:
    """Look until a round says done (True) or ``until_s`` passes (False)."""
    retrying = tenacity.Retrying(sleep=polling.sleep, **_retrying_options(polling, until_s))
    try:
        last: Round = retrying(look)
    finally:
        _finish(polling)
    return last.done


async def apoll_until(look: Callable[[], Awaitable[Round]], polling: Polling, *,
                      until_s: float | None) -> bool:
    """The async twin of :func:`poll_until`."""
    async def call() -> Round:  # tenacity awaits only what a coroutine function returns
        return await look()

    retrying = tenacity.AsyncRetrying(sleep=polling.async_sleep,
                                      **_retrying_options(polling, until_s))
    try:
        last: Round = await retrying(call)
    finally:
        _finish(polling)
    return last.done
