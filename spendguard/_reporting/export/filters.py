"""Which records an export, report or reconciliation reads: a time range, a scope, a tag, a model.

Times are UTC. A bound may be an aware ``datetime`` or text: ``2026-05`` (a month),
``2026-05-21`` (a day) or an ISO 8601 time (``2026-05-21T10:00:00Z``; no zone means UTC). An
``until`` given as a month or a day includes all of it, as people mean "until May 31st".
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from spendguard._budget.ledger import open_ledger
from spendguard._budget.ledger.base import Ledger, SpendRecord
from spendguard._budget.ledger.filters import parse_tag
from spendguard._core.errors import ConfigError
from spendguard._core.periods import as_utc

__all__ = ["SpendFilter", "ledger_of", "parse_moment"]

_MONTH = re.compile(r"(\d{4})-(\d{2})")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
Moment = datetime | date | str


def parse_moment(value: Moment, *, field: str, end: bool = False) -> datetime:
    """``value`` as an aware UTC datetime; ``end`` makes a month or a day inclusive."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ConfigError(f"{field}: {value!r} has no time zone; pass an aware datetime, "
                              f"e.g. datetime(2026, 5, 1, tzinfo=timezone.utc)")
        return as_utc(value)
    if isinstance(value, date):
        start = datetime(value.year, value.month, value.day, tzinfo=UTC)
        return start + timedelta(days=1) if end else start
    if not isinstance(value, str):
        raise ConfigError(f"{field}: expected a date or time, got {type(value).__name__}")
    text = value.strip()
    month = _MONTH.fullmatch(text)
    try:
        if month:
            year, number = int(month[1]), int(month[2])
            start = datetime(year, number, 1, tzinfo=UTC)
            if not end:
                return start
            return datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC)
        if _DAY.fullmatch(text):
            return parse_moment(date.fromisoformat(text), field=field, end=end)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"{field}: {value!r} is not a date or time; write 2026-05 (a month), 2026-05-21 "
            f"(a day) or 2026-05-21T10:00:00Z (UTC)") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else as_utc(moment)


@dataclass(frozen=True, slots=True)
class SpendFilter:
    """The records to read: ``since <= time < until``, charged to ``scope``, tagged, by model."""

    since: datetime | None = None
    until: datetime | None = None
    scope: str | None = None
    tag: str | None = None
    model: str | None = None

    @classmethod
    def of(cls, *, since: Moment | None = None, until: Moment | None = None,
           scope: str | None = None, tag: str | None = None,
           model: str | None = None) -> SpendFilter:
        """A filter from user input, checked: bad dates and tags raise ``ConfigError``."""
        start = None if since is None else parse_moment(since, field="since")
        stop = None if until is None else parse_moment(until, field="until", end=True)
        if start is not None and stop is not None and stop <= start:
            raise ConfigError(f"until: {stop.isoformat()} is not after since "
                              f"({start.isoformat()}); swap them or widen the range")
        if tag is not None:
            parse_tag(tag)
        return cls(start, stop, scope or None, tag or None, model or None)

    def records(self, ledger: Ledger, *,
                progress: Callable[[int], object] | None = None) -> Iterator[SpendRecord]:
        """The ledger's finished calls and corrections that pass, oldest first, read as they
        are used (every backend reads them a page at a time). ``progress`` is told the count
        read so far after each record."""
        records = ledger.records(since=self.since, until=self.until, scope=self.scope,
                                 tag=self.tag, model=self.model)
        return records if progress is None else _counted(records, progress)


def _counted(records: Iterator[SpendRecord],
             progress: Callable[[int], object]) -> Iterator[SpendRecord]:
    for done, record in enumerate(records, start=1):
        yield record
        progress(done)


def ledger_of(ledger: Ledger | str | os.PathLike[str] | None, *,
              read_only: bool = True) -> Ledger:
    """``ledger`` itself, or the ledger at that URL or path; None means the default, resolved
    as :func:`~spendguard._budget.ledger.open_ledger` does ($SPENDGUARD_LEDGER, then the SQLite
    file).

    Opened ``read_only`` unless told otherwise: a report or an export must not create or
    change a ledger, and works on a read-only one."""
    if ledger is None or isinstance(ledger, str | os.PathLike):
        return open_ledger(ledger, read_only=read_only)
    if not isinstance(ledger, Ledger):
        raise ConfigError(f"ledger: expected a URL, a path or a Ledger, got "
                          f"{type(ledger).__name__}")
    return ledger
