""""Are we on track this month?": each budget's period so far, its forecast, and when it runs out.

The method, stated so it can be checked (docs/finance.md, "On track"):

- **Rate**: what the scope spent in the trailing window before ``as_of`` (7 days for a monthly
  budget, 6 hours for a daily one) divided by the window's length — across the period's start
  when the period is younger than the window, so a new month starts from last week's pace.
- **Forecast** at the period's end: spent so far (the scope's records from the period's start
  to ``as_of``) plus the rate times the time left.
- **Runs out**: when spent so far plus the rate times the time since ``as_of`` reaches the
  limit, if that is before the period ends; the moment it is reached already when it is.

A straight-line projection of recent pace: exact for steady spending, behind a trend (it
trails growth and overshoots decline); the test suite backtests it on ledgers with a known
trend, and the docs give the error. Budgets with no calendar period (all time, rolling
windows) have no forecast.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from spendguard._budget.ledger.base import Ledger, SpendRecord
from spendguard._budget.observing import would_refuse_limits
from spendguard._budget.reservations import (
    EVENT_TAG,
    REFUSED_EVENT,
    REFUSED_SCOPE_TAG,
    REFUSED_USD_TAG,
)
from spendguard._core.money import ZERO, normalised
from spendguard._reporting.export.records import ADJUSTMENT, decimal_text, is_marker

__all__ = ["TRAILING", "OnTrack", "on_track", "period_bounds"]

TRAILING = {"monthly": timedelta(days=7), "daily": timedelta(hours=6)}
"""The trailing window the pace is measured over, per kind of period."""
_DAY = timedelta(days=1)


@dataclass(frozen=True)
class OnTrack:
    """One budget's current period: spent so far, where it is heading, against the last one.

    Money is exact USD. ``runs_out_at`` is None when the limit is not reached this period at
    the current pace (or there is no limit).
    """

    scope: str
    period_key: str
    period_start: datetime
    period_end: datetime
    as_of: datetime
    spent_usd: Decimal
    limit_usd: Decimal | None
    daily_rate_usd: Decimal
    forecast_usd: Decimal
    runs_out_at: datetime | None
    last_period_key: str
    last_period_usd: Decimal
    refused_calls: int = 0
    refused_usd: Decimal = ZERO
    would_refuse_calls: int = 0
    would_refuse_usd: Decimal = ZERO

    @property
    def status(self) -> str:
        """``over`` (limit reached), ``will exceed`` (the forecast passes the limit),
        ``on track``, or ``no limit``."""
        if self.limit_usd is None:
            return "no limit"
        if self.spent_usd >= self.limit_usd:
            return "over"
        return "will exceed" if self.forecast_usd > self.limit_usd else "on track"

    @property
    def elapsed_share(self) -> float:
        """How much of the period has passed at ``as_of`` (0 to 1)."""
        whole = (self.period_end - self.period_start).total_seconds()
        done = (min(self.as_of, self.period_end) - self.period_start).total_seconds()
        return max(0.0, min(1.0, done / whole)) if whole else 1.0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: money as exact decimal strings, times in ISO 8601 UTC."""
        return {
            "scope": self.scope, "period": self.period_key,
            "period_start": self.period_start.isoformat(),
            "period_end": self.period_end.isoformat(), "as_of": self.as_of.isoformat(),
            "elapsed_share": round(self.elapsed_share, 6),
            "spent_usd": decimal_text(self.spent_usd),
            "limit_usd": None if self.limit_usd is None else decimal_text(self.limit_usd),
            "daily_rate_usd": decimal_text(self.daily_rate_usd),
            "forecast_usd": decimal_text(self.forecast_usd), "status": self.status,
            "runs_out_at": None if self.runs_out_at is None else self.runs_out_at.isoformat(),
            "last_period": self.last_period_key,
            "last_period_usd": decimal_text(self.last_period_usd),
            "refused_calls": self.refused_calls,
            "refused_usd": decimal_text(self.refused_usd),
            "would_refuse_calls": self.would_refuse_calls,
            "would_refuse_usd": decimal_text(self.would_refuse_usd),
        }


def period_bounds(key: str) -> tuple[str, datetime, datetime, str] | None:
    """``(kind, start, end, previous key)`` of a calendar period key (``2026-05`` monthly,
    ``2026-05-21`` daily); None for ``all`` and rolling windows."""
    try:
        if len(key) == 7:
            start = datetime.strptime(key, "%Y-%m").replace(tzinfo=UTC)
            end = (start + timedelta(days=32)).replace(day=1)
            previous = (start - _DAY).strftime("%Y-%m")
            return "monthly", start, end, previous
        if len(key) == 10:
            start = datetime.strptime(key, "%Y-%m-%d").replace(tzinfo=UTC)
            return "daily", start, start + _DAY, (start - _DAY).strftime("%Y-%m-%d")
    except ValueError:
        return None
    return None


@dataclass
class _Running:
    scope: str
    kind: str
    key: str
    start: datetime
    end: datetime
    previous: str
    limit: Decimal | None
    trailing_usd: Decimal = ZERO
    spent_usd: Decimal = ZERO
    refused_calls: int = 0
    refused_usd: Decimal = ZERO
    would_calls: int = 0
    would_usd: Decimal = ZERO


def on_track(ledger: Ledger, budgets: Sequence[tuple[str, str, Decimal | None]],
             as_of: datetime) -> list[OnTrack]:
    """The forecast of each ``(scope, a period key of its, limit)`` with a calendar period, for
    the period containing ``as_of``: one streaming pass over the records since the earliest
    window or period start (memory: one running total per scope)."""
    running: dict[str, _Running] = {}
    for scope, key, limit in budgets:
        bounds = period_bounds(key)
        if bounds is None:
            continue
        kind = bounds[0]
        current = as_of.strftime("%Y-%m" if kind == "monthly" else "%Y-%m-%d")
        _, start, end, previous = period_bounds(current) or bounds
        running[scope] = _Running(scope, kind, current, start, end, previous, limit)
    if not running:
        return []
    earliest = min(min(r.start, as_of - TRAILING[r.kind]) for r in running.values())
    _read(ledger.records(since=earliest, until=as_of), running, as_of)
    found = []
    for scope in sorted(running):
        r = running[scope]
        spent = r.spent_usd
        window_days = Decimal(TRAILING[r.kind].total_seconds()) / Decimal(86400)
        rate = r.trailing_usd / window_days
        left_days = Decimal(max((r.end - as_of).total_seconds(), 0)) / Decimal(86400)
        forecast = spent + rate * left_days
        found.append(OnTrack(
            scope, r.key, r.start, r.end, as_of, normalised(spent), r.limit,
            normalised(rate.quantize(Decimal("1E-12"))),
            normalised(forecast.quantize(Decimal("1E-12"))),
            _runs_out(spent, r.limit, rate, as_of, r.end), r.previous,
            normalised(ledger.totals(scope, r.previous).spent_usd), r.refused_calls,
            normalised(r.refused_usd), r.would_calls, normalised(r.would_usd)))
    return found


def _read(records: Iterable[SpendRecord], running: dict[str, _Running],
          as_of: datetime) -> None:
    for record in records:
        if is_marker(record):
            if record.tags.get(EVENT_TAG) == REFUSED_EVENT:
                scope = record.tags.get(REFUSED_SCOPE_TAG, "")
                r = running.get(scope)
                if r is not None and r.start <= record.time < r.end:
                    r.refused_calls += 1
                    r.refused_usd += Decimal(record.tags.get(REFUSED_USD_TAG, "0"))
            continue
        would = would_refuse_limits(record.tags)
        for scope in record.scopes:
            r = running.get(scope)
            if r is None:
                continue
            if record.time >= as_of - TRAILING[r.kind]:
                r.trailing_usd += record.actual_usd
            if record.time >= r.start:
                r.spent_usd += record.actual_usd
            if scope in would and r.start <= record.time < r.end:
                r.would_calls += record.status != ADJUSTMENT
                r.would_usd += record.actual_usd


def _runs_out(spent: Decimal, limit: Decimal | None, rate: Decimal, as_of: datetime,
              end: datetime) -> datetime | None:
    if limit is None:
        return None
    if spent >= limit:
        return as_of
    if rate <= 0:
        return None
    days = (limit - spent) / rate
    if days * 86400 > Decimal((end - as_of).total_seconds()):
        return None
    return as_of + timedelta(seconds=float(days * 86400))
