"""``TokenCount``, a token count that says how sure it is, and the tally that builds one."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal
from typing import Any

__all__ = ["Tally", "TokenCount"]

_ZERO = Decimal(0)
_MARGIN_STEP = Decimal("0.0001")


class TokenCount(int):
    """A number of tokens (an ``int``) with how it was obtained.

    - ``exact``: counted with the model's own tokenizer and the provider's published framing
      rule, or reported by the provider.
    - ``margin``: a ``Decimal`` fraction, 0 when exact. When not exact the value is an upper
      estimate that includes this much headroom over the central estimate
      (``value ≈ expected × (1 + margin)``); reserve the value, expect ``expected``.
    - ``method``: short text, e.g. ``"tiktoken o200k_base"``, ``"bounded estimate (+35%)"``,
      ``"provider count_tokens"``.

    Arithmetic gives plain ``int``s: a sum of counts of different kinds has no single method.
    """

    exact: bool
    margin: Decimal

    def __new__(cls, value: int, *, exact: bool, method: str, margin: Decimal = _ZERO,
                expected: int | None = None) -> TokenCount:
        return cls._made(value, exact=exact, method=method, margin=margin, expected=expected)

    @classmethod
    def _made(cls, value: int, *, exact: bool, method: str | Callable[[], str],
              margin: Decimal = _ZERO, expected: int | None = None) -> TokenCount:
        """The constructor, which also takes ``method`` as a function that writes it: an
        estimate's description is built only if read (most counts are only reserved)."""
        if value < 0:
            raise ValueError(f"a token count cannot be negative, got {value}")
        if margin < 0 or (exact and margin != 0):
            raise ValueError(f"margin must be 0 when exact and >= 0 otherwise, got {margin}")
        if expected is None:
            expected = value if not margin else math.ceil(Decimal(value) / (1 + margin))
        if not 0 <= expected <= value:
            raise ValueError(f"expected must be between 0 and the count, got {expected}")
        self = super().__new__(cls, value)
        object.__setattr__(self, "exact", exact)
        object.__setattr__(self, "margin", margin if type(margin) is Decimal else Decimal(margin))
        object.__setattr__(self, "_method", method)
        object.__setattr__(self, "_expected", expected)
        return self

    @property
    def method(self) -> str:
        """How the count was obtained (``"tiktoken o200k_base"``, ``"bounded estimate
        (+35%)"``...)."""
        method = self.__dict__["_method"]
        if method.__class__ is not str:
            # Written once, on first read; two threads reading at once write the same text.
            method = self.__dict__["_method"] = method()
        text: str = method
        return text

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("TokenCount is immutable")

    def __reduce_ex__(self, protocol: Any) -> Any:  # pickling and copying
        # int's own reduce would rebuild from the int alone and then set attributes
        return (_rebuild, (int(self), self.exact, self.method, self.margin, self.expected))

    @property
    def expected(self) -> int:
        """The central estimate (tokens): the value without its headroom."""
        return int(self.__dict__["_expected"])

    def __repr__(self) -> str:
        extra = "" if self.exact else f", margin=Decimal('{self.margin}')"
        return f"TokenCount({int(self)}, exact={self.exact}{extra}, method={self.method!r})"


def _rebuild(value: int, exact: bool, method: str, margin: Decimal, expected: int) -> TokenCount:
    return TokenCount(value, exact=exact, method=method, margin=margin, expected=expected)


def _percent(margin: Decimal) -> str:
    pct = (margin * 100).quantize(Decimal("0.1"), rounding=ROUND_CEILING)
    return f"{pct.normalize():f}"


class Tally:
    """Accumulates exact tokens, estimated tokens and their headroom for one count.

    Walkers over request bodies add to it; ``result()`` turns it into a ``TokenCount``.
    ``label`` names the tokenizer (``"tiktoken o200k_base"``; empty for a proxy count).
    """

    __slots__ = ("_notes", "_uncounted", "estimate", "exact", "exact_tokens", "headroom",
                 "label")

    def __init__(self, label: str, *, exact: bool = True) -> None:
        self.label = label
        self.exact = exact
        self.exact_tokens = 0
        self.estimate = _ZERO
        self.headroom = _ZERO
        self._notes: list[str] = []
        self._uncounted: list[str] = []

    def add(self, tokens: int) -> None:
        """Add tokens counted exactly."""
        self.exact_tokens += tokens

    def add_estimate(self, tokens: int | Decimal, headroom: int | Decimal = 0, *,
                     note: str | None = None) -> None:
        """Add an estimated part: its central value and the headroom that bounds it."""
        self.exact = False
        self.estimate += tokens
        self.headroom += headroom
        if note and note not in self._notes:
            self._notes.append(note)

    def uncounted(self, what: str) -> None:
        """Record content that cannot be counted offline (a stored file, a previous response)."""
        self.exact = False
        if what not in self._uncounted:
            self._uncounted.append(what)

    def result(self) -> TokenCount:
        if self.exact:  # nothing estimated was added (that would have cleared it)
            return TokenCount._made(self.exact_tokens, exact=True, method=self.label)
        central = self.exact_tokens + self.estimate
        value = self.exact_tokens + math.ceil(self.estimate + self.headroom)
        margin = _ZERO
        if central > 0 and self.headroom > 0:
            margin = (self.headroom / central).quantize(_MARGIN_STEP,
                                                        rounding=ROUND_CEILING).normalize()
        parts = (self.label, *self._notes)
        uncounted = tuple(self._uncounted)
        return TokenCount._made(value, exact=False, margin=margin,
                                method=lambda: _description(parts, margin, uncounted),
                                expected=min(value, math.ceil(central)))


def _description(parts: tuple[str, ...], margin: Decimal, uncounted: tuple[str, ...]) -> str:
    """The ``method`` of an estimate: the tokenizer, the notes, the headroom and what it could
    not count."""
    method = " + ".join(p for p in parts if p)
    if margin:
        bound = f"bounded estimate (+{_percent(margin)}%)"
        method = f"{method}, {bound}" if method else bound
    else:  # estimated by a published rule with no headroom of our own
        method = f"{method} (estimate)" if method else "estimate"
    if uncounted:
        method += f"; not counted: {', '.join(uncounted)}"
    return method
