"""When an emulated batch's requests finish, on the emulator's clock.

A batch of ``count`` requests created at ``created_s`` takes ``duration_s``: the first tenth
validating (OpenAI), the last tenth finalizing (OpenAI), and the requests finishing one after
another, evenly, in between. Past the 24-hour completion window the unfinished ones expire;
after a cancel they are cancelled. Everything derives from these few numbers, so a batch's
state at any moment is a pure function of the time it is looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["COMPLETION_WINDOW_S", "Timeline", "rfc3339"]

COMPLETION_WINDOW_S = 24 * 3600.0


def rfc3339(epoch_s: float | None) -> str | None:
    """``2027-01-15T08:00:00Z`` for an epoch time (Anthropic's timestamp format)."""
    if epoch_s is None:
        return None
    return datetime.fromtimestamp(epoch_s, UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Timeline:
    """The schedule of one batch (times in epoch seconds)."""

    created_s: float
    duration_s: float
    count: int
    edge_fraction: float = 0.1
    """Share of the duration spent validating before and finalizing after the requests."""
    window_s: float = COMPLETION_WINDOW_S

    @property
    def started_s(self) -> float:
        return self.created_s + self.duration_s * self.edge_fraction

    @property
    def finalizing_s(self) -> float:
        return self.created_s + self.duration_s * (1 - self.edge_fraction)

    @property
    def done_s(self) -> float:
        return self.created_s + self.duration_s

    @property
    def expires_s(self) -> float:
        return self.created_s + self.window_s

    @property
    def expires(self) -> bool:
        """Whether the work outlasts the completion window."""
        return self.done_s > self.expires_s

    def finish_s(self, index: int) -> float:
        """When request ``index`` (0-based, in file order) finishes."""
        span = self.finalizing_s - self.started_s
        return self.started_s + span * (index + 1) / max(self.count, 1)

    def finished_by(self, moment_s: float) -> int:
        """How many requests have finished at ``moment_s``."""
        if moment_s >= self.finalizing_s:
            return self.count
        span = self.finalizing_s - self.started_s
        if span <= 0 or moment_s < self.started_s:
            return 0
        return min(self.count, int((moment_s - self.started_s) / span * self.count + 1e-9))
