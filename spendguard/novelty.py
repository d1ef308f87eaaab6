"""Is an agent loop still finding anything new? Items seen so far, and recent outputs.

A step makes progress when it reports at least one item not seen before. A step that reports
no items but an output makes progress when that output is not a near-repeat of a recent one
(same words in nearly the same order, after folding case and whitespace). A step that reports
neither is neutral: it does not break a stall, nor extend one.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from difflib import SequenceMatcher
from typing import Any

from spendguard.errors import ConfigError

__all__ = ["Progress", "similar"]


def _words(text: str) -> list[str]:
    return text.casefold().split()


def similar(a: str, b: str, threshold: float) -> bool:
    """True when the two texts' word sequences match at least ``threshold`` (0..1)."""
    left, right = _words(a), _words(b)
    if left == right:
        return True
    matcher = SequenceMatcher(None, left, right, autojunk=False)
    # The cheap upper bounds rule most pairs out before the quadratic ratio().
    return (matcher.real_quick_ratio() >= threshold and matcher.quick_ratio() >= threshold
            and matcher.ratio() >= threshold)


def _key(item: Any) -> Any:
    try:
        hash(item)
    except TypeError:
        # Dicts and lists from JSON tool results: the same content is the same item.
        return json.dumps(item, sort_keys=True, default=str)
    return item


class Progress:
    """The novelty of each step's items and output, and the current stall length."""

    def __init__(self, *, similarity: float = 0.9, window: int = 8) -> None:
        if not 0.0 < similarity <= 1.0:
            raise ConfigError(f"similarity: expected a ratio in (0, 1], got {similarity}")
        self.similarity = similarity
        self.seen: set[Any] = set()
        self.recent: deque[str] = deque(maxlen=window)
        self.stalled_steps = 0
        self._new_items: int | None = None
        self._new_output: bool | None = None

    def begin_step(self) -> None:
        """Start collecting a step's reports."""
        self._new_items = None
        self._new_output = None

    def found(self, items: Iterable[Any]) -> int:
        """Add a step's items; returns how many were new."""
        new = 0
        for item in items:
            key = _key(item)
            if key not in self.seen:
                self.seen.add(key)
                new += 1
        self._new_items = (self._new_items or 0) + new
        return new

    def observe(self, output: str) -> bool:
        """Add a step's output; returns False when it nearly repeats a recent one."""
        novel = not any(similar(output, old, self.similarity) for old in self.recent)
        self.recent.append(output)
        self._new_output = bool(self._new_output) or novel
        return novel

    def end_step(self) -> None:
        """Close the step: progress resets the stall, a reported step without any extends it."""
        if self._new_items is not None:
            progressed = self._new_items > 0
        elif self._new_output is not None:
            progressed = self._new_output
        else:
            return
        self.stalled_steps = 0 if progressed else self.stalled_steps + 1
