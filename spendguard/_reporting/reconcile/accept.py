"""Accepting a reconciliation: each dollar difference becomes an explicit adjustment record.

Nothing already in the ledger is edited. An adjustment is booked at the start of the UTC day it
corrects, names the provider and model, says in its note what both sides said and when it was
accepted, and is tagged ``reconciled=<provider>``; exports show it as a FOCUS ``Adjustment``
row. Running the same reconciliation again then finds nothing left to accept.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from spendguard._budget.ledger.base import Ledger, ScopeClaim
from spendguard._core.money import format_usd
from spendguard._core.periods import Period, as_utc, period_key
from spendguard._costing.endpoints import Provider
from spendguard._providers import adapter_for
from spendguard._reporting.reconcile.compare import Reconciliation

__all__ = ["RECONCILED_TAG", "accept_differences"]

RECONCILED_TAG = "reconciled"


def accept_differences(reconciliation: Reconciliation, ledger: Ledger, *, now: datetime,
                       scope: str | None = None, period: Period | None = None
                       ) -> Reconciliation:
    """Record every difference beyond the tolerance; returns the reconciliation with the ids
    of the adjustments in ``accepted``.

    ``scope`` (with its budget ``period``) charges the adjustments to that budget too;
    without it they change no budget's totals, only the ledger's record of what was spent.
    """
    accepted_at = as_utc(now).strftime("%Y-%m-%dT%H:%M:%SZ")
    name = (adapter_for(reconciliation.provider).display_name
            if reconciliation.provider in Provider.names() else reconciliation.provider)
    ids = []
    for difference in reconciliation.to_accept:
        amount = difference.usd_difference
        assert amount is not None  # to_accept holds rows with both amounts only
        day_start = datetime(difference.day.year, difference.day.month, difference.day.day,
                             tzinfo=UTC)
        claims = [] if scope is None else [ScopeClaim(scope, period_key(period, day_start))]
        note = (f"reconciled with {name}'s cost report for {difference.day.isoformat()} "
                f"(UTC): provider {format_usd(difference.provider_usd or amount)}, "
                f"ledger {format_usd(difference.ledger_usd)}; accepted "
                f"{accepted_at}")
        ids.append(ledger.adjust(claims, amount, time=day_start, note=note,
                                 tags={RECONCILED_TAG: reconciliation.provider},
                                 provider=reconciliation.provider, model=difference.model))
    return replace(reconciliation, accepted=tuple(ids))
