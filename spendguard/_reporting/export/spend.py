"""``export_spend``: the ledger written out for finance, as CSV, JSON Lines or FOCUS CSV."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, TextIO

from spendguard._budget.ledger.base import Ledger, SpendRecord
from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO, exact_sums, normalised
from spendguard._core.private_files import open_private
from spendguard._costing.prices import PriceTable, default_table
from spendguard._reporting.export.csv import write_csv
from spendguard._reporting.export.filters import SpendFilter, ledger_of
from spendguard._reporting.export.focus import aggregate_by_day, focus_rows
from spendguard._reporting.export.focus_columns import FOCUS_COLUMN_NAMES
from spendguard._reporting.export.jsonl import write_jsonl
from spendguard._reporting.export.rows import LEDGER_COLUMNS, ledger_row

__all__ = ["FORMATS", "ExportResult", "export_spend"]

Format = Literal["csv", "jsonl", "focus"]
FORMATS: tuple[Format, ...] = ("csv", "jsonl", "focus")
Aggregate = Literal["call", "day"]


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export wrote: rows, the total of its money column (USD), the file if any."""

    format: str
    rows: int
    total_usd: Decimal
    path: Path | None


def export_spend(out: str | os.PathLike[str] | TextIO, *, format: Format = "csv",
                 ledger: Ledger | str | os.PathLike[str] | None = None,
                 since: datetime | date | str | None = None,
                 until: datetime | date | str | None = None, scope: str | None = None,
                 tag: str | None = None, model: str | None = None,
                 aggregate: Aggregate = "call", accounts: Mapping[str, str] | None = None,
                 table: PriceTable | None = None, internal_tags: bool = False,
                 progress: Callable[[int], object] | None = None) -> ExportResult:
    """Write the ledger's records to ``out`` (a path or a text stream).

    ``format`` is ``"csv"`` or ``"jsonl"`` (one row per call or correction, every ledger
    field) or ``"focus"`` (FinOps FOCUS 1.2 CSV, one row per call and token kind, or per day
    with ``aggregate="day"``). ``ledger`` is a Ledger, a URL or a path; by default the one
    ``open_ledger()`` picks. ``since``/``until`` bound the time (UTC; an ``until`` day or
    month is included); ``scope``, ``tag`` (``"key"`` or ``"key=value"``) and ``model``
    filter. ``accounts`` maps a provider to its billing account id for FOCUS; ``table``
    prices FOCUS list prices (default: the process's price table). FOCUS ``Tags`` (and so
    the per-day groups) leave out spendguard's own bookkeeping tags (``spendguard.*``)
    unless ``internal_tags``. Raises ``ConfigError`` naming the argument on bad input.

    Records are read and written as a stream: memory holds a page of records, and with
    ``aggregate="day"`` the groups of one day, never the whole export. ``progress`` is told
    the number of records read so far after each one.
    """
    if format not in FORMATS:
        raise ConfigError(f"format: {format!r} is not an export format; use one of "
                          f"{', '.join(FORMATS)}")
    if aggregate not in ("call", "day"):
        raise ConfigError(f"aggregate: {aggregate!r} is not 'call' or 'day'")
    if aggregate == "day" and format != "focus":
        raise ConfigError("aggregate: rows are summed per day only in FOCUS exports; use "
                          "format='focus' with aggregate='day', or aggregate='call'")
    chosen = SpendFilter.of(since=since, until=until, scope=scope, tag=tag, model=model)
    table = table or default_table()
    _check_accounts(accounts or {}, table)
    records = _started(chosen.records(ledger_of(ledger), progress=progress))
    total = _Total()
    with _opened(out) as (stream, path), exact_sums():
        if format == "focus":
            rows: Iterable[dict[str, Any]] = total.of_rows(
                focus_rows(records, table=table, accounts=accounts,
                           internal_tags=internal_tags))
            if aggregate == "day":
                rows = aggregate_by_day(rows)
            count = write_csv(rows, FOCUS_COLUMN_NAMES, stream)
        else:
            writer = write_csv if format == "csv" else write_jsonl
            count = writer((ledger_row(record) for record in total.of_records(records)),
                           LEDGER_COLUMNS, stream)
    return ExportResult(format, count, normalised(total.usd), path)


def _check_accounts(accounts: Mapping[str, str], table: PriceTable) -> None:
    """Each account names a provider the price table knows (a typo would be silently unused)."""
    known = sorted({table.get(model).provider for model in table.models()})
    for provider, account in accounts.items():
        if provider not in known:
            raise ConfigError(f"accounts: {provider!r} is not a provider; name one of "
                              f"{', '.join(known)}, e.g. openai=org-abc123")
        if not account:
            raise ConfigError(f"accounts: the account of {provider!r} is empty")


def _started(records: Iterator[SpendRecord]) -> Iterator[SpendRecord]:
    """``records`` with the first one already read: a ledger that cannot be read fails before
    anything (a header, an empty file) is written."""
    first = next(records, None)
    return records if first is None else itertools.chain([first], records)


class _Total:
    """Adds up the money of what streams through, so the result can state its total."""

    def __init__(self) -> None:
        self.usd = ZERO

    def of_rows(self, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            self.usd += row["BilledCost"]
            yield row

    def of_records(self, records: Iterable[SpendRecord]) -> Iterator[SpendRecord]:
        for record in records:
            self.usd += record.actual_usd
            yield record


@contextmanager
def _opened(out: str | os.PathLike[str] | TextIO) -> Iterator[tuple[TextIO, Path | None]]:
    if isinstance(out, str | os.PathLike):
        path = Path(out)
        try:
            # newline="": the CSV writer ends lines itself (RFC 4180 CRLF).
            with open_private(path, newline="") as stream:
                yield stream, path
        except OSError as exc:
            raise ConfigError(f"out: cannot write {path}: {exc.strerror or exc}; check the path "
                              f"and its permissions") from exc
        return
    yield out, None
