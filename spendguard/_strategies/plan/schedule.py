"""The order a plan's requests are sent in: the pure core of the sync and async runners.

A request that reads a shared prefix waits until the request writing it has been answered:
sent together, every request of a fan-out would miss the cache and pay to write it (an
entry becomes readable only once its first response is under way). Among the requests that
may go, the one earliest in the plan goes first. The runners (threads or asyncio tasks) and
the time estimate (a simulated clock) all drive this same object.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from spendguard._core.errors import ConfigError

__all__ = ["Schedule", "simulate_duration_s"]


class Schedule:
    """Which request may be sent next, given which earlier ones each must wait for.

    Not thread-safe: the runners hold their own lock (or run on one event loop).
    """

    def __init__(self, after: Sequence[Sequence[int]]) -> None:
        size = len(after)
        self._waiting_on = [0] * size
        self._dependents: list[list[int]] = [[] for _ in range(size)]
        self._ready: list[int] = []
        for index, earlier in enumerate(after):
            for leader in set(earlier):
                if not 0 <= leader < index:
                    raise ConfigError(f"request {index} cannot wait for request {leader}: a "
                                      "request waits only for earlier ones")
                self._waiting_on[index] += 1
                self._dependents[leader].append(index)
            if not self._waiting_on[index]:
                self._ready.append(index)
        heapq.heapify(self._ready)
        self._untaken = size
        self._cancelled = False

    def take(self) -> int | None:
        """The next request to send, or None when none may go now."""
        if self._cancelled or not self._ready:
            return None
        self._untaken -= 1
        return heapq.heappop(self._ready)

    def finish(self, index: int) -> None:
        """A request was answered (or failed): the ones waiting only for it may go."""
        for dependent in self._dependents[index]:
            self._waiting_on[dependent] -= 1
            if not self._waiting_on[dependent]:
                heapq.heappush(self._ready, dependent)

    def cancel(self) -> None:
        """Send nothing more."""
        self._cancelled = True

    @property
    def exhausted(self) -> bool:
        """True when every request has been taken (or the run was cancelled)."""
        return self._cancelled or self._untaken == 0


def simulate_duration_s(latencies_s: Sequence[float], after: Sequence[Sequence[int]],
                        concurrency: int) -> float:
    """Seconds to send every request with ``concurrency`` at a time, in :class:`Schedule` order."""
    if concurrency < 1:
        raise ConfigError(f"concurrency: expected at least 1, got {concurrency}")
    schedule = Schedule(after)
    running: list[tuple[float, int]] = []
    now_s = 0.0
    while True:
        while len(running) < concurrency:
            index = schedule.take()
            if index is None:
                break
            heapq.heappush(running, (now_s + latencies_s[index], index))
        if not running:
            return now_s
        now_s, index = heapq.heappop(running)
        schedule.finish(index)
