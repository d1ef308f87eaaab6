"""Budget periods: which bucket of spending a moment in time belongs to (UTC).

A budget with no period has one bucket for all time (key ``"all"``); a daily budget has one per
UTC day (``"2026-05-21"``), a monthly one per UTC month (``"2026-05"``). Totals in the ledger are
kept per (scope, period key), so a period "rolls over" simply because a new key starts being used:
nothing is reset or deleted.

A rolling window (``"1h"``, ``"24h"``, ``"7d"``: a whole number of ``s``/``m``/``h``/``d``, at
least a minute) counts what was spent in the last window instead. It is kept in
:data:`WINDOW_STEPS` steps of a 60th of the window each (a minute for ``"1h"``): a call is
charged to the step it was reserved in, key ``"1h@<step start, Unix seconds>"``, and a limit is
checked against that step, the :data:`WINDOW_STEPS` before it and the
:data:`WINDOW_LEAD_STEPS` after it (spent by processes whose clock reading was newer). So a
settled call counts for at least the whole window after its reservation and at most one step
longer: the sum is never less than the true spend of the last window.

A call still open is held apart from the steps, under the window's one held key
(``"1h@open"``, :func:`held_key`), with its worst case and its count, until it settles or is
released: an open call counts in every window, however long it runs. Settling moves what it
cost into the step it was reserved in (a settled call counts at its reservation time). The
same arithmetic runs in the Redis ledger's Lua scripts.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime

from spendguard._core.errors import BudgetConfigError

__all__ = [
    "ALL_TIME", "PERIODS", "WINDOW_STEPS", "Clock", "Period", "as_utc", "check_period",
    "held_key", "period_key", "read_clock", "utc_now", "warning_key", "window_keys",
    "window_seconds",
]

Period = str
"""``"daily"``, ``"monthly"`` or a rolling window such as ``"1h"``, ``"24h"``, ``"7d"``."""
Clock = Callable[[], datetime]

PERIODS: tuple[str, ...] = ("daily", "monthly")
ALL_TIME = "all"
WINDOW_STEPS = 60
"""Steps a rolling window is kept in; a limit sums the current step and this many before."""
WINDOW_LEAD_STEPS = 2
"""Steps after a claim's own that its limit sums too. A process reads its clock before it
waits for the ledger; a busy one may then write after another process already charged the
next step, which a check of its own step and the ones before would not see."""

_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_WINDOW = re.compile(r"([1-9][0-9]{0,6})([smhd])")
_WINDOW_KEY = re.compile(r"([1-9][0-9]{0,6})([smhd])@([0-9]+)")
_MAX_WINDOW_S = 366 * 86400
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC: the default clock of every budget."""
    return datetime.now(UTC)


def read_clock(clock: Clock) -> datetime:
    """``as_utc(clock())``. The default clock is read directly: its time is UTC already, and
    every guarded call reads a clock several times."""
    return datetime.now(UTC) if clock is _SYSTEM_CLOCK else as_utc(clock())


_SYSTEM_CLOCK = utc_now


def check_period(value: object) -> Period | None:
    """``value`` as a period, or :class:`BudgetConfigError` naming the field and the choices.

    A rolling window comes back in its largest exact unit (``"24h"`` is ``"1d"``, ``"90m"``
    stays ``"90m"``), so equal windows share their totals.
    """
    if value is None or value in PERIODS:
        return value  # None or one of PERIODS
    match = _WINDOW.fullmatch(value) if isinstance(value, str) else None
    if match is not None:
        seconds = int(match[1]) * _UNIT_S[match[2]]
        if seconds % WINDOW_STEPS == 0 and seconds <= _MAX_WINDOW_S:
            return _window_label(seconds)
    raise BudgetConfigError(
        f"period: {value!r} is not a budget period; use None (all time), \"daily\" or "
        f"\"monthly\" (both in UTC), or a rolling window such as \"1h\", \"24h\" or \"7d\" "
        f"(a whole number of s, m, h or d: at least 1m, at most 366d, whole minutes)",
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
    """The key of the period containing ``now``: ``"all"``, ``"YYYY-MM-DD"``, ``"YYYY-MM"``,
    or for a rolling window the step it falls in (``"1h@1779357900"``)."""
    if period is None:
        return ALL_TIME
    utc = as_utc(now)
    if period == "daily":
        return f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
    if period == "monthly":
        return f"{utc.year:04d}-{utc.month:02d}"
    seconds = window_seconds(period)
    if seconds is None:
        check_period(period)  # raises, naming the choices
        raise AssertionError(period)  # pragma: no cover - check_period raised
    step_s = seconds // WINDOW_STEPS
    since_epoch_s = int((utc - _EPOCH).total_seconds() // 1)
    return f"{_window_label(seconds)}@{since_epoch_s - since_epoch_s % step_s}"


def window_seconds(period: str) -> int | None:
    """The length of a rolling window in seconds, or None for anything else."""
    match = _WINDOW.fullmatch(period)
    return None if match is None else int(match[1]) * _UNIT_S[match[2]]


@functools.lru_cache(maxsize=256)  # read for every reserve; a key is the same for a while
def window_keys(key: str) -> tuple[str, ...]:
    """The period keys whose totals a limit checks at ``key``: itself, and for a rolling
    window's step also the :data:`WINDOW_STEPS` steps before it, newest first, then the
    :data:`WINDOW_LEAD_STEPS` steps after it, then the window's held key (its open calls,
    :func:`held_key`)."""
    match = _WINDOW_KEY.fullmatch(key)
    if match is None:
        return (key,)
    label, start_s = f"{match[1]}{match[2]}", int(match[3])
    step_s = int(match[1]) * _UNIT_S[match[2]] // WINDOW_STEPS
    return (*(f"{label}@{start_s - back * step_s}" for back in range(WINDOW_STEPS + 1)),
            *(f"{label}@{start_s + ahead * step_s}"
              for ahead in range(1, WINDOW_LEAD_STEPS + 1)),
            f"{label}@open")


@functools.lru_cache(maxsize=256)
def held_key(key: str) -> str:
    """Where a call open at period key ``key`` is held until it closes: ``key`` itself, or for
    a rolling window's step the window's one held key (``"1h@1779357900"`` -> ``"1h@open"``),
    which every check of that window sums, however old the call's step."""
    match = _WINDOW_KEY.fullmatch(key)
    return key if match is None else f"{match[1]}{match[2]}@open"


def warning_key(key: str) -> str:
    """The key a warning level is reported once under: the period, or for a rolling window the
    whole window-length stretch the step falls in (at most one warning per window length)."""
    match = _WINDOW_KEY.fullmatch(key)
    if match is None:
        return key
    window_s, start_s = int(match[1]) * _UNIT_S[match[2]], int(match[3])
    return f"{match[1]}{match[2]}@{start_s - start_s % window_s}"


def _window_label(seconds: int) -> str:
    for unit in ("d", "h", "m", "s"):
        if seconds % _UNIT_S[unit] == 0:
            return f"{seconds // _UNIT_S[unit]}{unit}"
    raise AssertionError(seconds)  # pragma: no cover - every whole second divides by "s"
