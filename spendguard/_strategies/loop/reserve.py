"""What the choke point reserved during a loop step: the money a step needs the budget to have.

A guarded client reserves each call's worst case (input counted, output at its cap) before it
sends it; the reservation shrinks to the actual cost when the call settles. A step therefore
needs, at its dearest moment, what it had already spent plus the worst case of the call it is
about to make. The loop guard projects the next step from that peak, read back from the
ledger's records of the step's calls, so it refuses to start a step with the very numbers the
choke point will use — never from a re-derived estimate.

Calls made concurrently inside one step are counted as if made one after another: each call's
worst case on top of what the calls before it cost. A budget without a ledger (any object with
a ``.remaining``) has no records; the step's actual cost stands in for its peak.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from spendguard._budget.ledger.base import Ledger, SpendRecord
from spendguard._core.money import ZERO

__all__ = ["StepWindow", "open_window", "peak_usd"]


@dataclass(frozen=True, slots=True)
class StepWindow:
    """Where a step's calls will be recorded: a ledger, a scope, and when the step began."""

    ledger: Ledger
    scope: str
    since: datetime
    before_ids: frozenset[str]
    """Records already there at ``since`` (same timestamp), which belong to earlier steps."""

    def records(self) -> list[SpendRecord]:
        """The step's calls so far, oldest first."""
        return [record for record in self.ledger.records(since=self.since, scope=self.scope)
                if record.id not in self.before_ids]


def open_window(budget: object) -> StepWindow | None:
    """A window on ``budget``'s ledger from now on, or None for a budget without one."""
    ledger = getattr(budget, "ledger", None)
    scope = getattr(budget, "scope", None)
    now = getattr(budget, "now", None)
    if not isinstance(ledger, Ledger) or not isinstance(scope, str) or not callable(now):
        return None
    since = now()
    if not isinstance(since, datetime):
        return None
    before = frozenset(record.id for record in ledger.records(since=since, scope=scope))
    return StepWindow(ledger, scope, since, before)


def peak_usd(records: list[SpendRecord], *, refused_worst_usd: Decimal | None = None) -> Decimal:
    """The most a step had committed at once: spent so far plus the next call's worst case.

    ``refused_worst_usd`` is the worst case of a call the budget refused at the end of the
    step (it was never recorded, but the next step would need room for it).
    """
    spent = ZERO
    peak = ZERO
    for record in records:
        peak = max(peak, spent + record.estimated_usd, spent + record.actual_usd)
        spent += record.actual_usd
    if refused_worst_usd is not None:
        peak = max(peak, spent + refused_worst_usd)
    return max(peak, spent)
