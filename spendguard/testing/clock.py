"""A hand-driven clock for the emulator: emulated time moves only when a test says so."""

from __future__ import annotations

import threading

from spendguard._core.errors import ConfigError

__all__ = ["ManualClock"]

# 2027-01-15T08:00:00Z: a fixed, plausible "now" so ids, timestamps and TTLs are repeatable.
DEFAULT_START_S = 1_800_000_000.0


class ManualClock:
    """Epoch seconds that advance only through :meth:`advance` or :meth:`sleep`.

    Pass one as ``Emulator(clock=...)``: cache TTLs, batch progress and latency then run on
    emulated time, and the emulator "sleeps" by advancing this clock instead of waiting.
    """

    def __init__(self, start_s: float = DEFAULT_START_S) -> None:
        self._now_s = float(start_s)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now_s

    def advance(self, seconds: float) -> float:
        """Move emulated time forward by ``seconds``; returns the new time (epoch seconds)."""
        if seconds < 0:
            raise ConfigError(f"ManualClock.advance(seconds={seconds!r}): emulated time only runs "
                              "forward; pass a number >= 0")
        with self._lock:
            self._now_s += seconds
            return self._now_s

    def sleep(self, seconds: float) -> None:
        """A stand-in for ``time.sleep`` that advances emulated time and returns at once."""
        self.advance(max(seconds, 0.0))

    async def async_sleep(self, seconds: float) -> None:
        """A stand-in for ``asyncio.sleep`` that advances emulated time and returns at once."""
        self.advance(max(seconds, 0.0))
