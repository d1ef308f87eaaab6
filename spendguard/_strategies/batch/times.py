"""Moments in batching: the polling clock's epoch seconds, aware UTC datetimes, deadlines.

The polling clock (``Polling.clock``, a ``ManualClock`` in tests) returns epoch seconds; jobs
are recorded with aware UTC datetimes. Pure: the caller passes ``now_s``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from spendguard._core.errors import ConfigError

__all__ = ["deadline_from", "epoch", "moment"]


def moment(epoch_s: float) -> datetime:
    """Epoch seconds (the polling clock) as an aware UTC datetime."""
    return datetime.fromtimestamp(epoch_s, UTC)


def epoch(when: datetime) -> float:
    """An aware datetime as epoch seconds."""
    return when.timestamp()


def deadline_from(deadline: datetime | timedelta | float | None,
                  now_s: float) -> datetime | None:
    """A deadline given as an aware datetime, a timedelta or seconds from now (``now_s``)."""
    if deadline is None:
        return None
    if isinstance(deadline, datetime):
        if deadline.tzinfo is None:
            raise ConfigError(f"deadline: {deadline!r} has no time zone; pass an aware "
                              f"datetime, e.g. datetime.now(timezone.utc) + timedelta(hours=6)")
        return deadline.astimezone(UTC)
    if isinstance(deadline, timedelta):
        return moment(now_s + deadline.total_seconds())
    if isinstance(deadline, bool) or not isinstance(deadline, int | float):
        raise ConfigError(f"deadline: expected a datetime, a timedelta or seconds from now, "
                          f"got {type(deadline).__name__}")
    return moment(now_s + float(deadline))
