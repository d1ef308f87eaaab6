"""The ledger against a provider's report, per UTC day and model: tokens first, then dollars.

Tokens should match exactly (a difference means calls that bypassed the guard, or usage that
was lost); dollars should match within rounding. Models are compared by their canonical id in
the price table, so a dated snapshot (``gpt-4o-2024-08-06``) meets its alias (``gpt-4o``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from spendguard._budget.ledger.base import SpendRecord
from spendguard._core.errors import UnknownModelError
from spendguard._core.money import ZERO
from spendguard._costing.prices import PriceTable
from spendguard._reporting.export.records import decimal_text, is_marker, reported_tokens, utc_day
from spendguard._reporting.reconcile.lines import KINDS, ProviderReport

__all__ = ["Difference", "Reconciliation", "compare"]


@dataclass(frozen=True)
class Difference:
    """One UTC day and model (or a charge no model made) on both sides.

    ``provider_usd`` is None when no cost report was given, ``provider_tokens`` when no usage
    report was. Only a model's charges are ``attributable`` (can become adjustments).
    """

    day: date
    model: str
    attributable: bool
    ledger_usd: Decimal
    provider_usd: Decimal | None
    ledger_tokens: Mapping[str, int] = field(default_factory=dict)
    provider_tokens: Mapping[str, int] | None = None

    @property
    def usd_difference(self) -> Decimal | None:
        """Provider minus ledger (USD): what the ledger is missing when positive."""
        return None if self.provider_usd is None else self.provider_usd - self.ledger_usd

    @property
    def token_differences(self) -> dict[str, int]:
        """Provider minus ledger tokens, per kind that differs."""
        if self.provider_tokens is None:
            return {}
        return {kind: diff for kind in KINDS
                if (diff := self.provider_tokens.get(kind, 0) - self.ledger_tokens.get(kind, 0))}

    def beyond(self, tolerance_usd: Decimal) -> bool:
        """Whether the dollars differ by more than ``tolerance_usd``."""
        diff = self.usd_difference
        return diff is not None and abs(diff) > tolerance_usd


@dataclass(frozen=True)
class Reconciliation:
    """Every day-and-model row of a reconciliation, and what it covered."""

    provider: str
    ledger_url: str
    start: datetime
    end: datetime
    tolerance_usd: Decimal
    has_usage: bool
    has_costs: bool
    differences: tuple[Difference, ...]
    accepted: tuple[str, ...] = ()

    @property
    def ledger_usd(self) -> Decimal:
        """What the ledger holds for this provider in the covered time (USD)."""
        return sum((d.ledger_usd for d in self.differences), ZERO)

    @property
    def provider_usd(self) -> Decimal | None:
        """What the provider's cost report says (USD), None without one."""
        if not self.has_costs:
            return None
        return sum((d.provider_usd or ZERO for d in self.differences), ZERO)

    @property
    def mismatched(self) -> list[Difference]:
        """Rows whose dollars differ beyond the tolerance or whose tokens differ at all."""
        return [d for d in self.differences
                if d.beyond(self.tolerance_usd) or d.token_differences]

    @property
    def to_accept(self) -> list[Difference]:
        """Rows whose dollar difference an ``accept`` would record as an adjustment."""
        return [d for d in self.differences if d.attributable and d.beyond(self.tolerance_usd)]

    @property
    def unresolved(self) -> list[Difference]:
        """Rows still wrong after this run: what ``spendguard reconcile`` exits 1 for.

        A model's dollars beyond the tolerance stay unresolved until accepted (an accept
        records every row of ``to_accept``). Token differences count where they are the only
        evidence (no cost report); with a cost report the dollars decide, and the tokens are
        shown. Charges no model made (credits, tax) are shown but cannot be booked to a
        model, so they never hold the exit status.
        """
        waiting = [] if self.accepted else self.to_accept
        return [d for d in self.differences
                if d in waiting or (not self.has_costs and d.token_differences)]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: money as exact decimal strings."""
        def money(value: Decimal | None) -> str | None:
            return None if value is None else decimal_text(value)
        return {
            "provider": self.provider, "ledger": self.ledger_url,
            "start": self.start.isoformat(), "end": self.end.isoformat(),
            "tolerance_usd": decimal_text(self.tolerance_usd),
            "ledger_usd": decimal_text(self.ledger_usd), "provider_usd": money(self.provider_usd),
            "accepted": list(self.accepted), "unresolved": len(self.unresolved),
            "rows": [{"day": d.day.isoformat(), "model": d.model, "attributable": d.attributable,
                      "ledger_usd": decimal_text(d.ledger_usd),
                      "provider_usd": money(d.provider_usd),
                      "usd_difference": money(d.usd_difference),
                      "ledger_tokens": dict(d.ledger_tokens),
                      "provider_tokens": None if d.provider_tokens is None
                      else dict(d.provider_tokens),
                      "token_differences": d.token_differences} for d in self.differences],
        }


def compare(report: ProviderReport, records: Iterable[SpendRecord], *, ledger_url: str,
            tolerance_usd: Decimal, table: PriceTable) -> Reconciliation:
    """Both sides summed per (UTC day, model); ``records`` should cover ``report``'s time."""
    usd: defaultdict[tuple[date, str], Decimal] = defaultdict(lambda: ZERO)
    tokens: defaultdict[tuple[date, str], defaultdict[str, int]] = defaultdict(
        lambda: defaultdict(int))
    theirs_usd: defaultdict[tuple[date, str], Decimal] = defaultdict(lambda: ZERO)
    theirs_tokens: defaultdict[tuple[date, str], defaultdict[str, int]] = defaultdict(
        lambda: defaultdict(int))
    unattributed: set[tuple[date, str]] = set()
    for record in records:
        if record.provider != report.provider or is_marker(record):
            continue
        key = (utc_day(record), _canonical(record.model, table) or "(no model)")
        usd[key] += record.actual_usd
        for kind, count in reported_tokens(record).items():
            tokens[key]["cache_write" if kind.startswith("cache_write_") else kind] += count
    for line in report.lines:
        model = _canonical(line.model, table) if line.model else None
        key = (line.day, model or line.label)
        if model is None:
            unattributed.add(key)
        if line.usd is not None:
            theirs_usd[key] += line.usd
        if line.tokens is not None and line.kind is not None:
            theirs_tokens[key][line.kind] += line.tokens
    rows = tuple(Difference(
        day, model, (day, model) not in unattributed, usd.get((day, model), ZERO),
        theirs_usd.get((day, model), ZERO) if report.has_costs else None,
        _per_kind(tokens.get((day, model))),
        _per_kind(theirs_tokens.get((day, model))) if report.has_usage else None)
        for day, model in sorted({*usd, *tokens, *theirs_usd, *theirs_tokens}))
    return Reconciliation(report.provider, ledger_url, report.start, report.end, tolerance_usd,
                          report.has_usage, report.has_costs, rows)


def _per_kind(counts: Mapping[str, int] | None) -> dict[str, int]:
    return {kind: (counts or {}).get(kind, 0) for kind in KINDS}


def _canonical(model: str, table: PriceTable) -> str:
    """The price table's id for ``model`` (its aliases and snapshots folded), else as given."""
    try:
        return table.get(model).model if model else model
    except UnknownModelError:
        return model
