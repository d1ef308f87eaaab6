"""A plan: every request's estimate, the totals, and how to run it.

Built by :func:`spendguard.plan`; immutable. Money is Decimal USD; times are seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from spendguard._caching.volatile import VolatileValue
from spendguard._core.money import ZERO, format_usd
from spendguard._costing.prices import PriceTable
from spendguard._strategies.plan.estimates import RequestPlan
from spendguard._strategies.plan.inputs import PlannedRequest
from spendguard._strategies.plan.schedule import simulate_duration_s

if TYPE_CHECKING:
    from spendguard._strategies.plan.results import PlanResult

__all__ = ["Plan", "PlanTotals"]

Approve = Callable[["Plan"], Any]


@dataclass(frozen=True, slots=True)
class PlanTotals:
    """Sums over a plan's requests (tokens, and USD)."""

    requests: int
    input_tokens: int
    input_tokens_bound: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    output_tokens_worst: int
    expected_usd: Decimal
    worst_usd: Decimal
    uncached_usd: Decimal
    batch_usd: Decimal | None
    """Expected at batch rates; None when some model has no batch price."""

    @classmethod
    def of(cls, rows: Sequence[RequestPlan]) -> PlanTotals:
        batch = [row.batch_usd for row in rows]
        return cls(
            requests=len(rows),
            input_tokens=sum(r.input_tokens for r in rows),
            input_tokens_bound=sum(r.input_tokens_bound for r in rows),
            cache_read_tokens=sum(r.cache_read_tokens for r in rows),
            cache_write_tokens=sum(sum(r.cache_write_tokens.values()) for r in rows),
            output_tokens=sum(r.output_tokens for r in rows),
            output_tokens_worst=sum(r.output_tokens_worst for r in rows),
            expected_usd=sum((r.expected_usd for r in rows), ZERO),
            worst_usd=sum((r.worst_usd for r in rows), ZERO),
            uncached_usd=sum((r.uncached_usd for r in rows), ZERO),
            batch_usd=None if any(b is None for b in batch) else sum(
                (b for b in batch if b is not None), ZERO),
        )

    @property
    def uncached_input_tokens(self) -> int:
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens

    @property
    def hit_rate(self) -> float:
        """Expected share of input tokens read from the cache."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0


@dataclass(frozen=True, slots=True)
class Plan:
    """What a list of requests will cost and how long it will take, before any is sent.

    ``rows`` hold one :class:`RequestPlan` per request, in request order; ``totals`` their
    sums. ``requests`` are the bodies :meth:`run` sends (reordered for the cache when the plan
    was built with ``cache_order``). ``budget_left_usd`` is filled in when :meth:`run` asks
    ``approve`` (what the tightest budget had left).
    """

    id: str
    requests: tuple[PlannedRequest, ...] = field(repr=False)
    rows: tuple[RequestPlan, ...] = field(repr=False)
    totals: PlanTotals
    concurrency: int
    task: str | None = None
    cache_ordered: bool = False
    volatile: tuple[VolatileValue, ...] = ()
    notes: tuple[str, ...] = ()
    table_version: str = ""
    budget_left_usd: Decimal | None = None
    table: PriceTable | None = field(default=None, repr=False, compare=False)
    """The prices the plan was made with; :meth:`run` prices the replies with them too."""

    # -- the headline numbers --------------------------------------------------------------

    @property
    def expected_usd(self) -> Decimal:
        """Expected cost (USD): central input counts, expected cache use and output."""
        return self.totals.expected_usd

    @property
    def worst_usd(self) -> Decimal:
        """The most the plan can cost (USD): the sum of what the guard reserves per call."""
        return self.totals.worst_usd

    @property
    def cache_savings_usd(self) -> Decimal:
        """Expected cost with no cache minus the expected cost (USD)."""
        return self.totals.uncached_usd - self.totals.expected_usd

    @property
    def batch_savings_usd(self) -> Decimal | None:
        """Expected cost minus the same at batch rates (USD); None without batch prices."""
        batch = self.totals.batch_usd
        return None if batch is None else self.totals.expected_usd - batch

    @property
    def expected_hit_rate(self) -> float:
        """Expected share of input tokens read from the cache."""
        return self.totals.hit_rate

    def duration_s(self, concurrency: int | None = None) -> float:
        """Expected seconds to run the plan with ``concurrency`` requests at a time."""
        return simulate_duration_s([r.latency_s for r in self.rows],
                                   [r.after for r in self.rows],
                                   concurrency or self.concurrency)

    # -- running -----------------------------------------------------------------------------

    def run(self, client: Any, *, concurrency: int | None = None,
            approve: Approve | None = None, progress: bool | None = None,
            warm_up: bool = True) -> PlanResult:
        """Send every request through ``client`` (a sync SDK client, guarded or not).

        At most ``concurrency`` at a time (default: the plan's). When the worst case exceeds
        what the budget has left, ``approve(plan)`` decides (truthy: go), else
        ``BudgetExceeded`` is raised; either way before anything is sent. With ``warm_up``
        the first request of each shared prefix is answered before the rest are sent, so they
        read the cache. ``progress`` draws a bar on stderr (None: when it is a terminal).
        Results come back in request order; a failed request is an outcome, not an exception.
        """
        from spendguard._strategies.plan.runner import run_plan  # noqa: PLC0415 - loads replies

        return run_plan(self, client, concurrency=concurrency or self.concurrency,
                        approve=approve, progress=progress, warm_up=warm_up)

    async def arun(self, client: Any, *, concurrency: int | None = None,
                   approve: Approve | None = None, progress: bool | None = None,
                   warm_up: bool = True) -> PlanResult:
        """The async twin of :meth:`run`, for ``AsyncOpenAI`` / ``AsyncAnthropic``;
        ``approve`` may be a coroutine function."""
        from spendguard._strategies.plan.runner import arun_plan  # noqa: PLC0415

        return await arun_plan(self, client, concurrency=concurrency or self.concurrency,
                               approve=approve, progress=progress, warm_up=warm_up)

    # -- reading -----------------------------------------------------------------------------

    def output_bases(self) -> dict[str, int]:
        """How expected output was set, and for how many requests (``"cap"``: 37...)."""
        found: dict[str, int] = {}
        for row in self.rows:
            found[row.output_basis] = found.get(row.output_basis, 0) + 1
        return found

    def summary(self) -> str:
        """The plan for people: totals, savings, time, and what the estimate rests on."""
        t = self.totals
        models = sorted({row.model for row in self.rows})
        lines = [
            f"plan {self.id}: {t.requests} requests to {', '.join(models)}",
            f"  input    {t.input_tokens:>12,} tokens expected (bound {t.input_tokens_bound:,})"
            f": {t.cache_read_tokens:,} cache reads, {t.cache_write_tokens:,} cache writes, "
            f"{t.uncached_input_tokens:,} plain",
            f"  output   {t.output_tokens:>12,} tokens expected (worst {t.output_tokens_worst:,})"
            f"; expected output from {_bases(self.output_bases())}",
            f"  cost     {format_usd(t.expected_usd)} expected, "
            f"{format_usd(t.worst_usd)} worst case",
            f"  cache    {self.expected_hit_rate:.1%} of input read from cache, saving "
            f"{format_usd(self.cache_savings_usd)}"
            + (" (ordered for the cache)" if self.cache_ordered else ""),
        ]
        savings = self.batch_savings_usd
        lines.append("  batch    " + ("no batch price for some model" if savings is None else
                                      f"{format_usd(savings)} less if deferred to "
                                      "the batch API (results within 24 h)"))
        lines.append(f"  time     about {_duration(self.duration_s())} at concurrency "
                     f"{self.concurrency}")
        if self.budget_left_usd is not None:
            lines.append(f"  budget   {format_usd(self.budget_left_usd)} left")
        lines += [f"  volatile {value}" for value in self.volatile]
        lines += [f"  note     {note}" for note in self.notes]
        return "\n".join(lines)

    def as_dict(self, *, per_request: bool = False) -> dict[str, Any]:
        """A JSON-ready dict; USD amounts are exact decimal strings."""
        t = self.totals
        out: dict[str, Any] = {
            "plan_id": self.id, "requests": t.requests,
            "models": sorted({row.model for row in self.rows}),
            "input_tokens": t.input_tokens, "input_tokens_bound": t.input_tokens_bound,
            "cache_read_tokens": t.cache_read_tokens,
            "cache_write_tokens": t.cache_write_tokens, "output_tokens": t.output_tokens,
            "output_tokens_worst": t.output_tokens_worst, "output_basis": self.output_bases(),
            "expected_usd": str(t.expected_usd), "worst_usd": str(t.worst_usd),
            "uncached_usd": str(t.uncached_usd),
            "cache_savings_usd": str(self.cache_savings_usd),
            "expected_hit_rate": round(self.expected_hit_rate, 4),
            "batch_usd": None if t.batch_usd is None else str(t.batch_usd),
            "batch_savings_usd": None if self.batch_savings_usd is None
            else str(self.batch_savings_usd),
            "concurrency": self.concurrency, "duration_s": round(self.duration_s(), 1),
            "cache_ordered": self.cache_ordered, "table_version": self.table_version,
            "volatile": [str(v) for v in self.volatile], "notes": list(self.notes),
        }
        if per_request:
            out["per_request"] = [_row(row) for row in self.rows]
        return out


def _row(row: RequestPlan) -> dict[str, Any]:
    return {"index": row.index, "custom_id": row.custom_id, "model": row.model,
            "input_tokens": row.input_tokens, "input_tokens_bound": row.input_tokens_bound,
            "cache_read_tokens": row.cache_read_tokens,
            "cache_write_tokens": dict(row.cache_write_tokens),
            "output_tokens": row.output_tokens, "output_tokens_worst": row.output_tokens_worst,
            "output_basis": row.output_basis, "expected_usd": str(row.expected_usd),
            "worst_usd": str(row.worst_usd)}


def _bases(bases: dict[str, int]) -> str:
    names = {"cap": "the output caps", "model maximum": "the models' maximum output",
             "none": "nothing (embeddings)"}
    return ", ".join(f"{names.get(basis, basis)} ({count})" for basis, count in bases.items())


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
