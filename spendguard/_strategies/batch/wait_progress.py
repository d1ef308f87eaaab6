"""What a batch wait tells the user between looks: a bar on a terminal, one short line otherwise.

A wait over many jobs must not print one line listing every job at each look: the line names
the first job still running, then the counts (jobs and requests done of total), the time
waited and when the next look is. On a terminal the same figures are a bar redrawn in place.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

__all__ = ["StderrProgress", "WaitProgress", "format_elapsed"]

_WIDTH = 24


def format_elapsed(seconds: float) -> str:
    """``42s``, ``5m 10s``, ``2h 03m``: a wait's length, short."""
    whole = int(max(seconds, 0))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole // 60 % 60:02d}m"


@dataclass(frozen=True, slots=True)
class WaitProgress:
    """Where a batch wait stands at one look."""

    status: str
    jobs_done: int
    jobs_total: int
    requests_done: int
    requests_total: int
    elapsed_s: float
    next_poll_s: float

    def counts(self) -> str:
        """``1/3 jobs and 120/500 requests done, 5m 10s elapsed``."""
        return (f"{self.jobs_done}/{self.jobs_total} jobs and {self.requests_done:,}/"
                f"{self.requests_total:,} requests done, {format_elapsed(self.elapsed_s)}"
                " elapsed")

    def line(self) -> str:
        """One short line for a log: the first running job, the counts, the next look."""
        return (f"spendguard: {self.status}; {self.counts()};"
                f" next check in {self.next_poll_s:.0f}s")

    def bar(self) -> str:
        """The same as a bar: ``batch [######......] 1/3 jobs · 120/500 requests · ...``."""
        total = self.requests_total or 1
        filled = _WIDTH * min(self.requests_done, total) // total
        return (f"batch [{'#' * filled}{'.' * (_WIDTH - filled)}] {self.jobs_done}/"
                f"{self.jobs_total} jobs · {self.requests_done:,}/{self.requests_total:,}"
                f" requests · {format_elapsed(self.elapsed_s)} elapsed · next check in"
                f" {self.next_poll_s:.0f}s")


class StderrProgress:
    """The default sink: a bar redrawn in place on a terminal, else one line per look.

    ``stream`` defaults to standard error, looked up at each use so that redirections made
    after the wait was set up are honoured.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._drawn = 0

    @property
    def stream(self) -> TextIO:
        """Where the progress goes."""
        return self._stream if self._stream is not None else sys.stderr

    def _terminal(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def __call__(self, line: str) -> None:
        """A plain line (what any ``Polling.progress`` callable receives)."""
        print(line, file=self.stream, flush=True)

    def show(self, progress: WaitProgress) -> None:
        """Draw one look: the bar in place on a terminal, a line otherwise."""
        if not self._terminal():
            self(progress.line())
            return
        text = progress.bar()
        # Pad over a longer previous bar so that no stale characters remain.
        self.stream.write("\r" + text.ljust(self._drawn))
        self.stream.flush()
        self._drawn = len(text)

    def close(self) -> None:
        """End the bar's line once the wait is over."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = 0
