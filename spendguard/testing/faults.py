"""Injected failures: the next N requests fail, time out, or have their stream cut.

Faults are queued in order and each is used up by the first request it matches, so a test
reads like a script: ``fail_next(2, status=429)`` then one good call. Random failures
(``error_rate``) come from a seeded generator, so a run is repeatable.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from spendguard._core.errors import ConfigError

__all__ = ["Fault", "FaultQueue"]

FaultKind = Literal["status", "timeout", "break_stream"]

# Requests that generate (and so can be rate limited or overloaded by a provider).
GENERATION_PATHS = frozenset({"/v1/chat/completions", "/v1/responses", "/v1/embeddings",
                              "/v1/messages"})


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected failure for one request."""

    kind: FaultKind
    status: int = 0
    retry_after_ms: int | None = None
    after_events: int = 0
    path: str | None = None
    """Only requests to this API path (``/v1/messages``); None: any request."""

    def matches(self, path: str) -> bool:
        return self.path is None or self.path == path


class FaultQueue:
    """Pending faults in order, plus a seeded random error rate on generation requests."""

    def __init__(self, *, seed: int, error_rate: float, error_statuses: Sequence[int]) -> None:
        if not 0.0 <= error_rate <= 1.0:
            raise ConfigError(f"Emulator(error_rate={error_rate!r}): give a fraction from 0 to 1")
        if error_rate and not error_statuses:
            raise ConfigError("Emulator(error_statuses=()): give at least one HTTP status for "
                              "random errors, e.g. (429, 500)")
        self._pending: list[Fault] = []
        self._random = random.Random(seed)
        self._error_rate = error_rate
        self._error_statuses = tuple(error_statuses)

    def add(self, fault: Fault, count: int) -> None:
        if count < 1:
            raise ConfigError(f"count={count!r}: inject at least one fault (count >= 1)")
        self._pending.extend([fault] * count)

    def clear(self) -> None:
        self._pending.clear()

    def take_request_fault(self, path: str) -> Fault | None:
        """The fault that replaces this request's response, if any (used up)."""
        for index, fault in enumerate(self._pending):
            if fault.kind != "break_stream" and fault.matches(path):
                return self._pending.pop(index)
        if self._error_rate and path in GENERATION_PATHS \
                and self._random.random() < self._error_rate:
            return Fault("status", status=self._random.choice(self._error_statuses),
                         retry_after_ms=1)
        return None

    def take_stream_fault(self, path: str) -> Fault | None:
        """The cut to apply to this streamed response, if any (used up)."""
        for index, fault in enumerate(self._pending):
            if fault.kind == "break_stream" and fault.matches(path):
                return self._pending.pop(index)
        return None
