"""What a spend report says, computed in one pass over the ledger: pure data, exact money.

Totals are exact sums of the ledger's amounts, so a report agrees with the ledger (and with any
export of the same records) to the last digit; only the rendering rounds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from spendguard._budget.ledger.base import Ledger, SpendRecord
from spendguard._budget.observing import would_refuse_limits
from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO, normalised
from spendguard._core.periods import as_utc, utc_now, window_keys
from spendguard._reporting.export.records import (
    ADJUSTMENT,
    RECOVERED,
    decimal_text,
    input_side_tokens,
    is_batch,
    is_billed_call,
    is_marker,
    reported_tokens,
    shown_tags,
    utc_day,
)
from spendguard._reporting.report.folding import DEFAULT_TOP, fold_names, is_bookkeeping
from spendguard._reporting.report.forecast import OnTrack, on_track

__all__ = ["GROUPINGS", "BudgetUse", "EstimateCheck", "Group", "OnTrack", "SpendReport",
           "WouldRefuse", "summarise"]

OVERRUN = "overrun"

GROUPINGS = ("model", "scope", "tag", "day", "provider")
"""Ways to group a report; ``tag:KEY`` groups by the values of one tag."""


@dataclass
class Group:
    """Money and tokens of one group of records (a model, a scope, a day, ...)."""

    name: str
    spent_usd: Decimal = ZERO
    calls: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    batch_usd: Decimal = ZERO

    @property
    def cache_hit_rate(self) -> float | None:
        """Share of input tokens read from the prompt cache; None without input."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else None

    def add(self, record: SpendRecord, tokens: dict[str, int]) -> None:
        self.spent_usd += record.actual_usd
        self.calls += is_billed_call(record)
        self.input_tokens += input_side_tokens(tokens)
        self.cache_read_tokens += tokens.get("cache_read", 0)
        self.output_tokens += tokens.get("output", 0)
        if is_batch(record):
            self.batch_usd += record.actual_usd


@dataclass
class EstimateCheck:
    """How one model's pre-flight estimates compared with what its calls really used.

    Only calls whose usage the provider reported count. The input estimate is what spendguard
    counted before sending; the reserved amount is the worst case it held (output at the cap).
    """

    model: str
    calls: int = 0
    provider: str = ""
    estimated_input_tokens: int = 0
    actual_input_tokens: int = 0
    reserved_usd: Decimal = ZERO
    actual_usd: Decimal = ZERO

    @property
    def input_error(self) -> float | None:
        """(estimated - actual) / actual input tokens: + over-, - under-estimated."""
        if not self.actual_input_tokens:
            return None
        return (self.estimated_input_tokens - self.actual_input_tokens) / self.actual_input_tokens

    @property
    def reserved_over_actual(self) -> float | None:
        """How many times the actual cost the worst case held was."""
        return float(self.reserved_usd / self.actual_usd) if self.actual_usd else None


@dataclass(frozen=True)
class BudgetUse:
    """A budget scope in its latest period: spent and held, against its limit (USD)."""

    scope: str
    period_key: str
    spent_usd: Decimal
    reserved_usd: Decimal
    limit_usd: Decimal | None
    folded: int = 0
    """For a row of folded children: how many (its spend is theirs in the selection)."""

    @property
    def used(self) -> float | None:
        """Spent as a share of the limit (None when unlimited)."""
        return float(self.spent_usd / self.limit_usd) if self.limit_usd else None


@dataclass
class WouldRefuse:
    """Observe mode: the calls a scope sent that enforce mode would have refused, and their
    cost (USD, what enforcing would have saved)."""

    scope: str
    calls: int = 0
    spent_usd: Decimal = ZERO


@dataclass
class SpendReport:
    """Everything a report shows; ``groups`` follow ``by``."""

    by: str
    ledger_url: str
    since: datetime | None
    until: datetime | None
    total: Group = field(default_factory=lambda: Group("total"))
    groups: list[Group] = field(default_factory=list)
    by_model: list[Group] = field(default_factory=list)
    by_day: list[Group] = field(default_factory=list)
    day_model_usd: dict[tuple[date, str], Decimal] = field(default_factory=dict)
    budgets: list[BudgetUse] = field(default_factory=list)
    estimates: list[EstimateCheck] = field(default_factory=list)
    would_refuse: list[WouldRefuse] = field(default_factory=list)
    adjustments_usd: Decimal = ZERO
    recovered_usd: Decimal = ZERO
    runaway_trips: dict[tuple[str, str], int] = field(default_factory=dict)
    """Runaway rules that tripped, counted per (scope, rule)."""
    overrun_calls: int = 0  # calls that cost more than the worst case they reserved
    overrun_usd: Decimal = ZERO
    overlapping: bool = False  # groups may share records (scopes, tags)
    on_track: list[OnTrack] = field(default_factory=list)
    """Each budget with a calendar period: its current period so far, forecast, runs-out date,
    the last period, refused and would-refuse calls (see :mod:`...report.forecast`)."""

    @property
    def total_usd(self) -> Decimal:
        """The exact sum of every record's amount: the ledger's total for this selection."""
        return normalised(self.total.spent_usd)

    @property
    def batch_share(self) -> float | None:
        """Share of the spend that went through a Batch API."""
        return float(self.total.batch_usd / self.total_usd) if self.total_usd else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: money as exact decimal strings."""
        def group(g: Group) -> dict[str, Any]:
            return {"name": g.name, "spent_usd": decimal_text(g.spent_usd), "calls": g.calls,
                    "input_tokens": g.input_tokens, "cache_read_tokens": g.cache_read_tokens,
                    "output_tokens": g.output_tokens, "cache_hit_rate": g.cache_hit_rate,
                    "batch_usd": decimal_text(g.batch_usd)}
        return {
            "by": self.by, "ledger": self.ledger_url,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "total": group(self.total), "groups": [group(g) for g in self.groups],
            "batch_share": self.batch_share,
            "adjustments_usd": decimal_text(self.adjustments_usd),
            "recovered_usd": decimal_text(self.recovered_usd),
            "runaway_trips": [{"scope": scope, "rule": rule, "trips": count}
                              for (scope, rule), count in sorted(self.runaway_trips.items())],
            "overrun_calls": self.overrun_calls,
            "overrun_usd": decimal_text(self.overrun_usd),
            "budgets": [{"scope": b.scope, "period": b.period_key,
                         "spent_usd": decimal_text(b.spent_usd),
                         "reserved_usd": decimal_text(b.reserved_usd),
                         "limit_usd": None if b.limit_usd is None else decimal_text(b.limit_usd),
                         "folded": b.folded}
                        for b in self.budgets],
            "estimates": [{"model": e.model, "calls": e.calls,
                           "estimated_input_tokens": e.estimated_input_tokens,
                           "actual_input_tokens": e.actual_input_tokens,
                           "input_error": e.input_error,
                           "reserved_usd": decimal_text(e.reserved_usd),
                           "actual_usd": decimal_text(e.actual_usd)} for e in self.estimates],
            "would_refuse": [{"scope": w.scope, "calls": w.calls,
                              "spent_usd": decimal_text(w.spent_usd)}
                             for w in self.would_refuse],
            "on_track": [track.as_dict() for track in self.on_track],
        }


def check_by(by: str) -> str:
    """``by`` if it names a grouping, else ``ConfigError`` listing them."""
    if by in GROUPINGS or (by.startswith("tag:") and len(by) > 4):
        return by
    raise ConfigError(f"by: {by!r} is not a grouping; use one of {', '.join(GROUPINGS)}, or "
                      f"tag:KEY for the values of one tag")


def summarise(records: Iterable[SpendRecord], *, by: str, ledger: Ledger,
              since: datetime | None = None, until: datetime | None = None,
              top: int | None = DEFAULT_TOP, internal_tags: bool = False,
              as_of: datetime | None = None) -> SpendReport:
    """Read ``records`` once into a report grouped ``by`` (see :data:`GROUPINGS`).

    Children of one parent and kind past the ``top`` that spent most are folded into one row
    (:mod:`~spendguard._reporting.report.folding`); ``top=None`` shows every scope.
    ``by="tag"`` leaves out spendguard's own bookkeeping tags (``spendguard.*``) unless
    ``internal_tags``; ``tag:KEY`` groups by the key asked for, whatever it is. The budgets'
    forecasts are for the periods containing ``as_of`` (default: now).
    """
    report = SpendReport(check_by(by), ledger.url, since, until,
                         overlapping=by in ("scope", "tag"))
    groups: dict[str, Group] = {}
    models: dict[str, Group] = {}
    days: dict[date, Group] = {}
    estimates: dict[str, EstimateCheck] = {}
    latest: dict[str, tuple[datetime, str, Decimal | None]] = {}
    day_model: defaultdict[tuple[date, str], Decimal] = defaultdict(lambda: ZERO)
    observed: dict[str, WouldRefuse] = {}
    spent_by_scope: defaultdict[str, Decimal] = defaultdict(lambda: ZERO)
    for record in records:
        if is_marker(record):  # $0 events carried by tags: runaway trips are listed
            if record.tags.get("spendguard.event") == "runaway":
                trip = (record.scopes[-1] if record.scopes else "",
                        record.tags.get("spendguard.rule", "?"))
                report.runaway_trips[trip] = report.runaway_trips.get(trip, 0) + 1
            continue
        tokens = reported_tokens(record)
        model = record.model or "(no model)"
        report.total.add(record, tokens)
        for name in _names(record, by, internal_tags):
            groups.setdefault(name, Group(name)).add(record, tokens)
        models.setdefault(model, Group(model)).add(record, tokens)
        day = utc_day(record)
        days.setdefault(day, Group(day.isoformat())).add(record, tokens)
        day_model[(day, model)] += record.actual_usd
        if record.status == ADJUSTMENT:
            report.adjustments_usd += record.actual_usd
        elif record.status == RECOVERED:
            report.recovered_usd += record.actual_usd
        elif record.status == OVERRUN:
            report.overrun_calls += 1
            report.overrun_usd += record.actual_usd
        _check_estimate(estimates, record, tokens)
        refused_by = would_refuse_limits(record.tags)
        for scope in refused_by:
            would = observed.setdefault(scope, WouldRefuse(scope))
            would.calls += record.status != ADJUSTMENT
            would.spent_usd += record.actual_usd
        for scope, key, limit in zip(record.scopes, record.period_keys,
                                     record.limits_usd or [None] * len(record.scopes),
                                     strict=False):
            spent_by_scope[scope] += record.actual_usd
            if scope not in latest or latest[scope][0] <= record.time:
                # an observe-mode call went out with its limit lifted; the tag keeps the limit
                latest[scope] = (record.time, key, refused_by.get(scope, limit))
    folded = fold_names(spent_by_scope, top)
    if by == "scope":
        groups = _folded_groups(groups, folded)
    report.groups = sorted(groups.values(), key=_by_name if by == "day" else _by_spend)
    report.by_model = sorted(models.values(), key=_by_spend)
    report.by_day = [days[day] for day in sorted(days)]
    report.day_model_usd = dict(day_model)
    report.estimates = sorted(estimates.values(), key=lambda e: -e.actual_usd)
    report.would_refuse = [observed[scope] for scope in sorted(observed)]
    rows: dict[str, list[str]] = {}
    for scope, row in folded.items():
        rows.setdefault(row, []).append(scope)
    for scope, (_, key, limit) in sorted(latest.items()):
        if scope in folded or is_bookkeeping(scope):
            continue
        # A rolling window: the window ending at the scope's latest step, as a limit reads it.
        keys = window_keys(key)
        totals = ledger.totals(scope, key) if len(keys) == 1 else ledger.totals_sum(scope, keys)
        report.budgets.append(BudgetUse(scope, key, totals.spent_usd, totals.reserved_usd,
                                        limit))
    report.budgets += [BudgetUse(row, "", sum((spent_by_scope[s] for s in scopes), ZERO), ZERO,
                                 None, folded=len(scopes)) for row, scopes in sorted(rows.items())]
    report.on_track = on_track(ledger, [(b.scope, b.period_key, b.limit_usd)
                                        for b in report.budgets if not b.folded],
                               as_utc(as_of) if as_of is not None else utc_now())
    return report


def _folded_groups(groups: dict[str, Group], folded: dict[str, str]) -> dict[str, Group]:
    """Scope groups with folded children summed into their row, count scopes left out."""
    out: dict[str, Group] = {}
    for name, group in groups.items():
        if is_bookkeeping(name):
            continue
        row = folded.get(name)
        if row is None:
            out[name] = group
            continue
        into = out.setdefault(row, Group(row))
        into.spent_usd += group.spent_usd
        into.calls += group.calls
        into.input_tokens += group.input_tokens
        into.cache_read_tokens += group.cache_read_tokens
        into.output_tokens += group.output_tokens
        into.batch_usd += group.batch_usd
    return out


def _names(record: SpendRecord, by: str, internal_tags: bool) -> list[str]:
    if by == "model":
        return [record.model or "(no model)"]
    if by == "provider":
        return [record.provider or "(no provider)"]
    if by == "day":
        return [utc_day(record).isoformat()]
    if by == "scope":
        return list(record.scopes) or ["(no scope)"]
    if by == "tag":
        tags = shown_tags(record.tags, internal=internal_tags)
        return [f"{key}={value}" for key, value in sorted(tags.items())] or ["(untagged)"]
    key = by.removeprefix("tag:")
    return [record.tags.get(key, f"(no {key})")]


def _check_estimate(estimates: dict[str, EstimateCheck], record: SpendRecord,
                    tokens: dict[str, int]) -> None:
    if (record.status != "ok" or record.usage_estimated
            or record.estimated_input_tokens is None or not tokens):
        return
    check = estimates.setdefault(record.model,
                                 EstimateCheck(record.model, provider=record.provider or ""))
    check.calls += 1
    check.estimated_input_tokens += record.estimated_input_tokens
    check.actual_input_tokens += input_side_tokens(tokens)
    check.reserved_usd += record.estimated_usd
    check.actual_usd += record.actual_usd


def _by_spend(group: Group) -> tuple[Decimal, str]:
    return -group.spent_usd, group.name


def _by_name(group: Group) -> tuple[str]:
    return (group.name,)
