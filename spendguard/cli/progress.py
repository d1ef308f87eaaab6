"""A progress line on standard error while a command reads a large ledger.

Shown only where a person watches: standard error is a terminal (not a pipe, a file or a
test's capture), ``TERM`` is not ``dumb``, the command was not asked for ``--json``, and its
data does not go to that same terminal (``export`` without ``-o``). It appears once the read
has run for :data:`DELAY_S` seconds, so quick commands print nothing extra, is redrawn a few
times a second, and is wiped before the command prints its result. It has no colour, so
``NO_COLOR`` changes nothing.

The ledger does not say how many records a read will give before it ends, so the line counts
what was read, the rate and the time so far, with a turning mark that shows it is alive.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from spendguard._strategies.batch.wait_progress import format_elapsed

__all__ = ["DELAY_S", "Progress", "stream_is_terminal"]

DELAY_S = 2.0
"""Seconds a read runs before the line appears."""
_REDRAW_S = 0.25
_CHECK_EVERY = 256  # counts between looks at the clock: a read is millions of steps
_SPINNER = "|/-\\"


def stream_is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal a person reads (not ``TERM=dumb``)."""
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


class Progress:
    """Tell it the count so far (``progress(n)``); it draws ``label: n unit`` on standard
    error when shown (see the module doc), and wipes it on ``finish()`` or at the end of a
    ``with`` block."""

    def __init__(self, label: str, unit: str, *, quiet: bool = False,
                 data_on_stdout: bool = False, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.enabled = (not quiet and stream_is_terminal(self.stream)
                        and not (data_on_stdout and stream_is_terminal(sys.stdout)))
        self.label, self.unit = label, unit
        self._clock = clock
        self._started = clock()
        self._drawn_at: float | None = None
        self._width = 0
        self._turns = 0
        self._checked = 0

    def __call__(self, done: int) -> None:
        if not self.enabled or done - self._checked < _CHECK_EVERY:
            return
        self._checked = done
        now = self._clock()
        elapsed = now - self._started
        if elapsed < DELAY_S or (self._drawn_at is not None and now - self._drawn_at < _REDRAW_S):
            return
        self._drawn_at = now
        self._turns += 1
        line = (f"{_SPINNER[self._turns % len(_SPINNER)]} {self.label}: {done:,} {self.unit}, "
                f"{done / elapsed:,.0f}/s, {format_elapsed(elapsed)}")
        self._draw(line)

    def finish(self) -> None:
        """Wipe the line, if one was drawn, so what the command prints next starts clean."""
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def _draw(self, line: str) -> None:
        # Padded over the previous line, which may have been longer.
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = max(self._width, len(line))

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.finish()
