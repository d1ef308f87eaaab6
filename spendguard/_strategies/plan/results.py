"""What running a plan returned: one outcome per request, in request order, and the measures.

Nothing is lost: a request that failed (refused by the budget, an API error, a bad body)
is an outcome carrying its exception. Cache hit rate and savings are measured from the usage
the provider returned, next to what the plan expected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from spendguard._caching.stats import CacheStats, tally
from spendguard._core.money import ZERO, format_usd
from spendguard._costing.usage import Usage

if TYPE_CHECKING:
    from spendguard._strategies.plan.model import Plan

__all__ = ["PlanResult", "RequestOutcome"]


@dataclass(frozen=True, slots=True)
class RequestOutcome:
    """One request's result: the SDK's reply, or the exception it raised."""

    index: int
    custom_id: str | None
    model: str
    response: Any = field(default=None, repr=False)
    error: BaseException | None = None
    usage: Usage | None = None
    cost_usd: Decimal | None = None
    """What the reply's usage costs (USD); None for a failed request."""

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class PlanResult:
    """Every request's outcome in request order, with measured cost and cache use."""

    plan: Plan = field(repr=False)
    outcomes: tuple[RequestOutcome, ...]

    @property
    def responses(self) -> list[Any]:
        """The SDK replies in request order (None where a request failed)."""
        return [outcome.response for outcome in self.outcomes]

    @property
    def failures(self) -> list[RequestOutcome]:
        """The requests that failed, each with its exception."""
        return [outcome for outcome in self.outcomes if not outcome.ok]

    @property
    def cost_usd(self) -> Decimal:
        """What the answered requests cost (USD), from their reported usage."""
        return sum((o.cost_usd for o in self.outcomes if o.cost_usd is not None), ZERO)

    @property
    def cache(self) -> CacheStats:
        """Measured hit rate and savings, with the plan's expectation alongside."""
        measured = tally(((o.model, o.usage, o.cost_usd) for o in self.outcomes
                          if o.usage is not None and o.cost_usd is not None),
                         table=self.plan.table)
        return CacheStats(measured.requests, measured.input_tokens, measured.cache_read_tokens,
                          measured.cache_write_tokens, measured.cost_usd, measured.saved_usd,
                          self.plan.expected_usd, self.plan.expected_hit_rate)

    def report(self) -> str:
        """Planned against measured, for people."""
        cache, plan = self.cache, self.plan
        lines = [
            f"plan {plan.id}: {len(self.outcomes) - len(self.failures)} answered, "
            f"{len(self.failures)} failed",
            f"  cost      {format_usd(cache.cost_usd)} measured, "
            f"{format_usd(plan.expected_usd)} expected, "
            f"{format_usd(plan.worst_usd)} worst case",
            f"  hit rate  {cache.hit_rate:.1%} measured, {plan.expected_hit_rate:.1%} expected",
            f"  saved     {format_usd(cache.saved_usd)} by caching measured, "
            f"{format_usd(plan.cache_savings_usd)} expected",
        ]
        for failure in self.failures[:5]:
            lines.append(f"  failed    request {failure.index}"
                         + (f" ({failure.custom_id})" if failure.custom_id else "")
                         + f": {type(failure.error).__name__}: {failure.error}")
        if len(self.failures) > 5:
            lines.append(f"  ...and {len(self.failures) - 5} more failures")
        return "\n".join(lines)
