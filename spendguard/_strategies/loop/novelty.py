"""Is an agent loop still finding anything new? Items seen so far, and recent outputs.

A step makes progress when it reports at least one item not seen before. A step that reports
no items but an output makes progress when that output is not a near-repeat of a recent one
(same words in nearly the same order, after folding case and whitespace). A step that reports
neither is neutral: it does not break a stall, nor extend one.

Findings are compared after :func:`normalise` by default: an agent that re-reports "service X
down (checked 10:01)" as "... 10:02", or the same record under a fresh request id, has found
nothing new. Timestamps, dates, times, UUIDs, long hex ids and numbers are masked, case and
whitespace folded. A ``key`` function replaces the normalisation (``exact`` compares values
as they are); ``item_similarity`` also treats a text finding as seen when it is at least that
similar (word sequences, as for outputs) to one seen before.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from difflib import SequenceMatcher
from typing import Any

from spendguard._core.errors import ConfigError

__all__ = ["Progress", "exact", "normalise", "normalise_text", "similar"]

# Order matters: whole timestamps and ids before the bare numbers inside them.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\d{4}-\d{2}-\d{2}[t ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                r"(?:z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "<date>"),
    (re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*[ap]\.?m\.?)?"), "<time>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<id>"),
    # A run of 8+ letters/digits with at least one digit: hashes, request and trace ids.
    (re.compile(r"\b(?=[0-9a-z_-]*\d)[0-9a-z_-]{8,}\b"), "<id>"),
    # Not a digit that is part of a name ("gpt-4o", "p2"): those are what the finding is about.
    (re.compile(r"(?<![a-z0-9.])(?<![a-z]-)\d+(?:[.,]\d+)*"), "<n>"),
)


def normalise_text(text: str) -> str:
    """``text`` with case and whitespace folded and times, dates, ids and numbers masked."""
    folded = text.casefold()
    for pattern, mask in _MASKS:
        folded = pattern.sub(mask, folded)
    return " ".join(folded.split())


def normalise(item: Any) -> Hashable:
    """The default novelty key: texts (and dicts/lists, by their JSON) normalised.

    Other values (numbers, tuples) compare as they are.
    """
    if isinstance(item, str):
        return normalise_text(item)
    try:
        hash(item)
    except TypeError:
        return normalise_text(json.dumps(item, sort_keys=True, default=str))
    return item  # type: ignore[no-any-return]


def exact(item: Any) -> Hashable:
    """A novelty key that compares findings as they are (dicts and lists by their JSON)."""
    try:
        hash(item)
    except TypeError:
        return json.dumps(item, sort_keys=True, default=str)
    return item  # type: ignore[no-any-return]


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


class Progress:
    """The novelty of each step's items and output, and the current stall length."""

    def __init__(self, *, similarity: float = 0.9, window: int = 8,
                 key: Callable[[Any], Hashable] = normalise,
                 item_similarity: float | None = None) -> None:
        if not 0.0 < similarity <= 1.0:
            raise ConfigError(f"similarity: expected a ratio in (0, 1], got {similarity}")
        if item_similarity is not None and not 0.0 < item_similarity <= 1.0:
            raise ConfigError(f"item_similarity: expected a ratio in (0, 1] or None, got "
                              f"{item_similarity}")
        if not callable(key):
            raise ConfigError(f"key: expected a function of a finding, such as "
                              f"spendguard.exact_finding, got {type(key).__name__}")
        self.similarity = similarity
        self.key = key
        self.item_similarity = item_similarity
        self.seen: set[Any] = set()
        self._seen_texts: list[str] = []
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
            key = self.key(item)
            if key in self.seen:
                continue
            self.seen.add(key)
            if isinstance(key, str) and self.item_similarity is not None:
                if any(similar(key, old, self.item_similarity) for old in self._seen_texts):
                    continue
                self._seen_texts.append(key)
            new += 1
        self._new_items = (self._new_items or 0) + new
        return new

    def observe(self, output: str) -> bool:
        """Add a step's output; returns False when it nearly repeats a recent one."""
        text = self.key(output)
        text = text if isinstance(text, str) else output
        novel = not any(similar(text, old, self.similarity) for old in self.recent)
        self.recent.append(text)
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
