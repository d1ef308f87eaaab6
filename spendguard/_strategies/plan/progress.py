"""A one-line progress bar on stderr: requests done, money spent, failures. No dependencies."""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import TextIO

from spendguard._core.money import ZERO, format_usd

__all__ = ["Progress"]

_WIDTH = 30


class Progress:
    """Redraws ``plan  23/50 [######......]  $0.0123  1 failed`` in place as requests finish.

    ``enabled=None`` draws only when the stream is a terminal, so logs and pipes stay clean.
    Redraws are limited to about 200 per run, whatever its size.
    """

    def __init__(self, total: int, *, enabled: bool | None = None,
                 stream: TextIO | None = None, label: str = "plan") -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.label = label
        self.done = 0
        self.failed = 0
        self.spent_usd = ZERO
        self._step = max(total // 200, 1)

    def advance(self, cost_usd: Decimal | None, *, failed: bool) -> None:
        """One request finished."""
        self.done += 1
        self.failed += int(failed)
        self.spent_usd += cost_usd or ZERO
        if self.enabled and (self.done % self._step == 0 or self.done == self.total):
            self._draw()

    def line(self) -> str:
        """The bar as text."""
        filled = _WIDTH * self.done // self.total if self.total else _WIDTH
        bar = "#" * filled + "." * (_WIDTH - filled)
        text = (f"{self.label} {self.done:>{len(str(self.total))}}/{self.total} [{bar}] "
                f"{format_usd(self.spent_usd)}")
        return text + (f"  {self.failed} failed" if self.failed else "")

    def _draw(self) -> None:
        self.stream.write("\r" + self.line())
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()
