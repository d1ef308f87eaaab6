"""Warning levels: tell the user once when a scope's spend reaches ``warn_at`` of its limit.

The ledger decides *whether* a level was newly reached (atomically, and recorded so that other
processes sharing the file do not warn again); this module decides *how* to tell: the budget's
``on_warn`` callback if it has one, else a :class:`~spendguard._core.errors.BudgetWarning`; and a
log line on the ``spendguard._budget.budget`` logger either way.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from spendguard._budget.ledger.base import Crossing
from spendguard._core.errors import BudgetConfigError, BudgetWarning
from spendguard._core.money import format_usd

__all__ = ["CallOverrun", "ThresholdCrossed", "WarnCallback", "announce", "check_warn_at",
           "warn_usd"]

log = logging.getLogger("spendguard.budget")


@dataclass(frozen=True, slots=True)
class ThresholdCrossed:
    """What ``on_warn`` receives: a scope's spend reached ``warn_at`` of its limit."""

    scope: str
    period_key: str
    spent_usd: Decimal
    limit_usd: Decimal
    fraction: Decimal  # spent / limit, may exceed 1 when the last call ran over its estimate
    warn_at: Decimal

    @classmethod
    def from_crossing(cls, crossing: Crossing, warn_at: Decimal) -> ThresholdCrossed:
        return cls(crossing.scope, crossing.period_key, crossing.spent_usd, crossing.limit_usd,
                   crossing.spent_usd / crossing.limit_usd, warn_at)

    def message(self) -> str:
        return (f"spendguard budget {self.scope!r} (period {self.period_key}) has spent "
                f"{format_usd(self.spent_usd)} of {format_usd(self.limit_usd)} "
                f"({self.fraction:.0%}); warn_at is {self.warn_at:.0%}")


@dataclass(frozen=True, slots=True)
class CallOverrun(ThresholdCrossed):
    """What ``on_warn`` receives when one call cost more than the worst case it reserved.

    A ``ThresholdCrossed`` (so a callback written for warning levels takes it unchanged) whose
    ``spent_usd`` / ``fraction`` are the scope's after the call, plus the call's own numbers.
    """

    call_id: str = ""
    model: str = ""
    reserved_usd: Decimal = Decimal(0)
    actual_usd: Decimal = Decimal(0)

    def message(self) -> str:
        what = (f"more than the {format_usd(self.reserved_usd)} it reserved"
                if self.actual_usd > self.reserved_usd
                else "for more tokens than the model's context window plus its maximum output")
        return (f"spendguard: a {self.model} call ({self.call_id}) was charged "
                f"{format_usd(self.actual_usd)}, {what}; budget {self.scope!r} "
                f"(period {self.period_key}) has spent {format_usd(self.spent_usd)} of "
                f"{format_usd(self.limit_usd)}")


WarnCallback = Callable[[ThresholdCrossed], object]


def check_warn_at(value: object) -> Decimal | None:
    """``warn_at`` as a Decimal fraction in (0, 1], or None for "never warn"."""
    if value is None:
        return None
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
            raise TypeError
        # A fraction, not money: a float is fine, through its shortest repr (0.8 -> "0.8").
        fraction = Decimal(repr(value) if isinstance(value, float) else value)
    except (TypeError, InvalidOperation):
        raise BudgetConfigError(f"warn_at: {value!r} is not a fraction; write e.g. warn_at=0.8 "
                                f"(80 % of the limit) or None", field="warn_at") from None
    if not fraction.is_finite() or not 0 < fraction <= 1:
        raise BudgetConfigError(f"warn_at: {value!r} must be in (0, 1], e.g. 0.8 for 80 % of "
                                f"the limit; use None for no warning", field="warn_at")
    return fraction


def warn_usd(limit_usd: Decimal, warn_at: Decimal | None) -> Decimal | None:
    """The spend (USD) at which to warn; None when there is nothing sensible to warn about."""
    if warn_at is None or limit_usd <= 0:
        return None
    return limit_usd * warn_at


def announce(event: ThresholdCrossed, on_warn: WarnCallback | None) -> None:
    """Tell the user; never raises.

    It runs after a call was sent and paid for, often inside the SDK's HTTP transport: an
    exception there would fail a paid call (and the anthropic SDK would send it again). So an
    exception from ``on_warn``, or a ``BudgetWarning`` turned into one by ``-W error``, is
    logged on the ``spendguard._budget.budget`` logger instead of reaching the caller.
    """
    try:
        text = event.message()
        log.log(logging.WARNING if isinstance(event, CallOverrun) else logging.INFO, text)
        if on_warn is not None:
            on_warn(event)
        else:
            warnings.warn(text, BudgetWarning, stacklevel=4)
    except Exception:
        log.error("spendguard: reporting %r failed; the call is recorded and returned anyway",
                  event, exc_info=True)
