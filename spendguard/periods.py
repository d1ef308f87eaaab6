"""Budget periods: which bucket of spending a moment in time belongs to (UTC).

A budget with no period has one bucket for all time (key ``"all"``); a daily budget has one per
UTC day (``"2026-05-21"``), a monthly one per UTC month (``"2026-05"``). Totals in the ledger are
kept per (scope, period key), so a period "rolls over" simply because a new key starts being used:
nothing is reset or deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from spendguard.errors import BudgetConfigError

__all__ = [
    "ALL_TIME", "PERIODS", "Clock", "Period", "as_utc", "check_period", "period_key", "utc_now",
]

Period = Literal["daily", "monthly"]
Clock = Callable[[], datetime]

PERIODS: tuple[Period, ...] = ("daily", "monthly")
ALL_TIME = "all"


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC: the default clock of every budget."""
    return datetime.now(UTC)


def check_period(value: object) -> Period | None:
    """``value`` as a period, or :class:`BudgetConfigError` naming the field and the choices."""
    if value is None:
        return None
    if value == "daily":
        return "daily"
    if value == "monthly":
        return "monthly"
    raise BudgetConfigError(
        f"period: {value!r} is not a budget period; use None (all time), \"daily\" or "
        f"\"monthly\" (both in UTC)",
        field="period",
    )


def as_utc(now: datetime) -> datetime:
    """``now`` converted to UTC; a naive datetime is refused (its zone is unknowable)."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise BudgetConfigError(
            f"clock: returned a naive datetime ({now!r}); return an aware one, e.g. "
            f"datetime.now(timezone.utc)",
            field="clock",
        )
    return now.astimezone(UTC)


def period_key(period: Period | None, now: datetime) -> str:
    """The key of the period containing ``now``: ``"all"``, ``"YYYY-MM-DD"`` or ``"YYYY-MM"``."""
    if period is None:
        return ALL_TIME
    utc = as_utc(now)
    if period == "daily":
        return f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
    return f"{utc.year:04d}-{utc.month:02d}"
