"""Ledger records as FOCUS 1.2 rows (with 1.3's provider columns): one per call and token kind.

The column list and what each holds are in :mod:`spendguard._reporting.export.focus_columns`;
docs/finance.md explains the mapping. Rows are plain dicts of typed values (``Decimal``,
``str``, ``None``, dicts for JSON columns) that the CSV writer turns into text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from spendguard._budget.ledger.base import SpendRecord
from spendguard._core.money import MILLION
from spendguard._costing.endpoints import Provider
from spendguard._costing.prices import PriceTable
from spendguard._providers import adapter_for
from spendguard._reporting.export.lines import REQUEST, ChargeLine, Rates, charge_lines
from spendguard._reporting.export.records import ADJUSTMENT, RECOVERED, shown_tags, utc_text

__all__ = ["aggregate_by_day", "focus_rows"]

_UNATTRIBUTED = "Unattributed"  # a correction that names no provider
_METERS = {"input": "Input Tokens", "cache_read": "Cached Input Tokens",
           "output": "Output Tokens"}
_SUMMED = frozenset({"BilledCost", "EffectiveCost", "ListCost", "ContractedCost",
                     "ConsumedQuantity", "PricingQuantity", "x_CallCount"})
_PER_CALL = ("x_CallId", "x_CallTime", "x_RequestId", "x_Note")
_ONE_CALL, _NO_CALL = Decimal(1), Decimal(0)


def focus_rows(records: Iterable[SpendRecord], *, table: PriceTable,
               accounts: Mapping[str, str] | None = None,
               internal_tags: bool = False) -> Iterator[dict[str, Any]]:
    """One row per call and billed token kind (one per correction); ``accounts`` maps a
    provider (``"openai"``) to its billing account id. ``Tags`` leave out spendguard's own
    bookkeeping tags (``spendguard.call_id``, ...) unless ``internal_tags``.

    A call's own columns are worked out once for all its rows (a call has two or three), and
    the period columns once an hour: records come oldest first, so an hour's calls follow
    one another.
    """
    accounts = accounts or {}
    periods = _Periods()
    known: dict[tuple[object, ...], Rates | None] = {}
    for record in records:
        shared = None  # the call's own columns, once it has a line
        for line in charge_lines(record, table, known):
            if shared is None:
                shared = _call_columns(record, accounts, internal_tags, periods)
            yield _row(*shared, record, line)


def aggregate_by_day(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Rows summed per UTC day and everything else that tells them apart (account, model,
    price point, scope, tags, charge kind, status); per-call columns emptied. Costs and
    quantities add up exactly.

    ``rows`` come oldest first (as every ledger gives its records), so a day's rows are
    written as soon as the next day begins: memory holds one day's groups, not the export.
    """
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    current: str | None = None
    date: str | None = None  # the day of the rows so far, as their ChargePeriodStart begins
    day_columns: dict[str, str | None] = {}
    for row in rows:
        if date is None or not row["ChargePeriodStart"].startswith(date):  # a new day
            day = _parse_utc(row["ChargePeriodStart"]).replace(hour=0)
            date = row["ChargePeriodStart"][:len("2031-01-31")]
            day_columns = {"ChargePeriodStart": utc_text(day),
                           "ChargePeriodEnd": utc_text(day + timedelta(days=1)),
                           **dict.fromkeys(_PER_CALL)}
        start = day_columns["ChargePeriodStart"]
        if current is not None and start != current:
            yield from _sorted_day(groups)
            groups = {}
        current = start
        daily = {**row, **day_columns}
        # What tells groups apart: every column but the summed ones, a JSON column's object
        # as its sorted items.
        key = tuple([tuple(sorted(value.items())) if isinstance(value, dict) else value
                     for name, value in daily.items() if name not in _SUMMED])
        total = groups.get(key)
        if total is None:
            groups[key] = daily
            continue
        for name in _SUMMED:
            if total[name] is not None and daily[name] is not None:
                total[name] += daily[name]
    yield from _sorted_day(groups)


def _sorted_day(groups: dict[tuple[Any, ...], dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(groups.values(), key=lambda row: (row["ProviderName"], row["SkuId"] or "",
                                                    row["SkuPriceId"] or "",
                                                    row["ResourceId"] or ""))


def _billing_names(provider: str) -> tuple[str, str]:
    """(the company's name, the service's name) of a record's provider: its adapter's, else
    the name as the ledger holds it."""
    if provider in Provider.names():
        return adapter_for(provider).billing_names
    return (provider or _UNATTRIBUTED, f"{provider} API" if provider else _UNATTRIBUTED)


class _Periods:
    """The billing and charge period columns of the hour a record falls in, kept for the
    hour last asked."""

    __slots__ = ("_hour", "_texts")

    def __init__(self) -> None:
        self._hour: datetime | None = None
        self._texts: dict[str, str] = {}

    def of(self, moment: datetime) -> dict[str, str]:
        hour = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        if hour != self._hour:
            month = hour.replace(day=1, hour=0)
            next_month = (month + timedelta(days=32)).replace(day=1)
            self._hour = hour
            self._texts = {
                "BillingPeriodStart": utc_text(month),
                "BillingPeriodEnd": utc_text(next_month),
                "ChargePeriodStart": utc_text(hour),
                "ChargePeriodEnd": utc_text(hour + timedelta(hours=1)),
            }
        return self._texts


def _call_columns(record: SpendRecord, accounts: Mapping[str, str], internal_tags: bool,
                  periods: _Periods) -> tuple[dict[str, Any], dict[str, Any]]:
    """The columns every row of ``record`` shares: those before its cost, and those between
    its cost and its token kind (a row's columns keep one order)."""
    company, service = _billing_names(record.provider)
    innermost = record.scopes[-1] if record.scopes else None
    head: dict[str, Any] = {
        "BillingAccountId": accounts.get(record.provider) or record.provider or "unattributed",
        "BillingAccountName": None,
        "BillingCurrency": "USD",
        **periods.of(record.time),
        "ChargeClass": None,
        "InvoiceId": None,
        "InvoiceIssuerName": company,
        "ProviderName": company,
        "PublisherName": company,
        "ServiceProviderName": company,
        "HostProviderName": company,
        "ServiceCategory": "AI and Machine Learning",
        "ServiceSubcategory": "Generative AI",
        "ServiceName": service,
        "ResourceId": innermost,
        "ResourceName": innermost,
        "ResourceType": None if innermost is None else "Budget Scope",
        "Tags": _tags(record, internal_tags),
    }
    tail: dict[str, Any] = {
        "x_CallId": record.id,
        "x_CallTime": utc_text(record.time),
        "x_Endpoint": record.endpoint or None,
        "x_Note": record.note,
        "x_PriceTableVersion": record.table_version or None,
        "x_RequestId": record.request_id,
        "x_Status": record.status,
    }
    return head, tail


def _row(head: dict[str, Any], tail: dict[str, Any], record: SpendRecord,
         line: ChargeLine) -> dict[str, Any]:
    """One row: the call's columns, and those of one of its charge lines."""
    adjustment = line.kind == ADJUSTMENT
    return {
        **head,
        "BilledCost": line.billed_usd,
        "EffectiveCost": line.billed_usd,
        "x_CallCount": _NO_CALL if adjustment else _ONE_CALL,
        **tail,
        "x_TokenKind": line.kind if line.kind not in (REQUEST, ADJUSTMENT) else None,
        "x_UsageEstimated": record.usage_estimated,
        **(_adjustment(record, line) if adjustment else _usage(record, line)),
    }


def _usage(record: SpendRecord, line: ChargeLine) -> dict[str, Any]:
    model = record.model
    if line.kind == REQUEST:
        # No per-token price today: one request at the amount the ledger charged.
        quantity, unit, rate = Decimal(1), "Requests", line.billed_usd
        consumed = (Decimal(line.tokens), "Tokens") if line.tokens else (quantity, "Requests")
        meter, price_id = "Requests", f"{model}:request"
    else:
        assert line.usd_per_million is not None  # a token line always has its rate
        quantity, unit, rate = Decimal(line.tokens) / MILLION, "1000000 Tokens", \
            line.usd_per_million
        consumed = (Decimal(line.tokens), "Tokens")
        meter = _METERS.get(line.kind) or _write_meter(line.kind)
        price_id = ":".join([model, line.kind, *(["batch"] if line.batch else []),
                             *([f"above-{line.tier_above_tokens}"]
                               if line.tier_above_tokens else [])])
    description = f"{model} {meter.lower()}" + (" (Batch API)" if line.batch else "")
    if record.status == RECOVERED:
        description += ", charged at the reserved worst case: the call's process vanished"
    return {
        "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based",
        "ChargeDescription": description, "PricingCategory": "Standard",
        "ConsumedQuantity": consumed[0], "ConsumedUnit": consumed[1],
        "PricingQuantity": quantity, "PricingUnit": unit,
        "ListUnitPrice": rate, "ContractedUnitPrice": rate,
        "ListCost": quantity * rate, "ContractedCost": quantity * rate,
        "SkuId": model, "SkuPriceId": price_id, "SkuMeter": meter,
        "SkuPriceDetails": {"x_TokenKind": line.kind, "x_Batch": line.batch,
                            "x_LongContextAboveInputTokens": line.tier_above_tokens},
    }


def _adjustment(record: SpendRecord, line: ChargeLine) -> dict[str, Any]:
    return {
        "ChargeCategory": "Adjustment", "ChargeFrequency": "One-Time",
        "ChargeDescription": record.note or "ledger adjustment", "PricingCategory": None,
        "ConsumedQuantity": None, "ConsumedUnit": None,
        "PricingQuantity": None, "PricingUnit": None,
        "ListUnitPrice": None, "ContractedUnitPrice": None,
        "ListCost": line.billed_usd, "ContractedCost": line.billed_usd,
        "SkuId": record.model or None, "SkuPriceId": None, "SkuMeter": None,
        "SkuPriceDetails": None,
    }


def _write_meter(kind: str) -> str:
    if kind.startswith("cache_write_"):
        return f"Cache Write Tokens ({kind.removeprefix('cache_write_')})"
    return f"{kind.replace('_', ' ').title()} Tokens"


def _tags(record: SpendRecord, internal: bool) -> dict[str, str | bool]:
    """User tags as they are; scopes under the ``spendguard/`` prefix FOCUS asks for."""
    tags: dict[str, str | bool] = dict(shown_tags(record.tags, internal=internal))
    if record.scopes:
        tags["spendguard/scope"] = record.scopes[-1]
        tags.update({f"spendguard/scope/{scope}": True for scope in record.scopes})
    return dict(sorted(tags.items()))


def _parse_utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)

