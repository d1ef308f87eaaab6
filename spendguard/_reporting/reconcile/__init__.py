"""Reconciliation: the ledger against the providers' own usage and cost reports.

``reconcile_spend(["costs.json"], provider="openai")`` compares per UTC day and model;
``accept=True`` records each dollar difference beyond the tolerance as an explicit adjustment
(status ``"adjustment"``) — the ledger's history is never edited.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

from spendguard._budget.ledger.base import Ledger
from spendguard._core.errors import ConfigError
from spendguard._core.money import parse_usd
from spendguard._core.periods import Period, check_period, utc_now
from spendguard._costing.prices import PriceTable, default_table
from spendguard._reporting.export.filters import ledger_of
from spendguard._reporting.reconcile.accept import RECONCILED_TAG, accept_differences
from spendguard._reporting.reconcile.compare import Difference, Reconciliation, compare
from spendguard._reporting.reconcile.files import PROVIDERS, read_provider_file
from spendguard._reporting.reconcile.lines import ProviderLine, ProviderReport

__all__ = [
    "PROVIDERS",
    "RECONCILED_TAG",
    "Difference",
    "ProviderLine",
    "ProviderReport",
    "Reconciliation",
    "read_provider_file",
    "reconcile_spend",
]

DEFAULT_TOLERANCE_USD = Decimal("0.01")


def reconcile_spend(files: Sequence[str | os.PathLike[str]], *, provider: str,
                    ledger: Ledger | str | os.PathLike[str] | None = None,
                    tolerance_usd: Decimal | str = DEFAULT_TOLERANCE_USD, accept: bool = False,
                    scope: str | None = None, period: Period | None = None,
                    now: datetime | None = None, table: PriceTable | None = None
                    ) -> Reconciliation:
    """Compare the ledger with ``provider``'s report ``files`` over the time they cover.

    Files are the JSON the usage / cost endpoints return (OpenAI
    ``/v1/organization/usage/completions`` and ``/costs``; Anthropic
    ``/v1/organizations/usage_report/messages`` and ``/cost_report``) or, for Anthropic, the
    same as CSV; for Gemini (``provider="gemini"``), a Google Cloud Billing export (standard
    usage cost data) saved as CSV, compared in dollars. With ``accept``, every dollar
    difference above ``tolerance_usd`` per day and model is recorded as an adjustment at
    ``now`` (default: the current time), optionally charged to budget ``scope`` in its
    ``period``. Raises ``ConfigError`` naming the file and field on a report it cannot read.
    """
    if isinstance(files, str | os.PathLike) or not files:
        raise ConfigError("files: pass a list of one or more report files")
    tolerance = parse_usd(tolerance_usd, field="tolerance_usd")
    check_period(period)
    if period is not None and scope is None:
        raise ConfigError("period: applies to the scope adjustments are charged to; give "
                          "scope= as well, or drop period=")
    report = ProviderReport.merge(provider, (read_provider_file(path, provider)
                                             for path in files))
    if accept and not report.has_costs:
        raise ConfigError("accept: these files hold token usage only; dollar differences need "
                          "the provider's cost report (OpenAI /v1/organization/costs, "
                          "Anthropic /v1/organizations/cost_report)")
    opened = ledger_of(ledger, read_only=not accept)  # accepting writes adjustments
    records = opened.records(since=report.start, until=report.end)
    result = compare(report, records, ledger_url=opened.url, tolerance_usd=tolerance,
                     table=table or default_table())
    if not accept:
        return result
    return accept_differences(result, opened, now=now or utc_now(), scope=scope, period=period)
