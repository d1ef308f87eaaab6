"""Measured prompt caching: hit rate and savings from the usage providers actually returned.

Hit rate is ``cache reads / (cache reads + cache writes + uncached input)``: the share of input
tokens served from the cache. Savings are what the same tokens would have cost with no cache
(every input token at the plain input rate) minus what they did cost, priced with the same
table, so only the cache's effect is counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from spendguard._budget.ledger.base import SpendRecord
from spendguard._core.errors import UnknownModelError
from spendguard._core.money import ZERO, format_usd
from spendguard._costing.cost import cost
from spendguard._costing.prices import PriceTable
from spendguard._costing.usage import Usage

__all__ = ["EXPECTED_HIT_TAG", "EXPECTED_USD_TAG", "CacheStats", "from_records", "tally",
           "usage_of_record"]

EXPECTED_USD_TAG = "plan.expected_usd"
EXPECTED_HIT_TAG = "plan.expected_hit_rate"


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Input tokens by cache outcome over some calls, with what the cache saved (USD)."""

    requests: int = 0
    input_tokens: int = 0
    """Uncached input tokens."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: Decimal = ZERO
    saved_usd: Decimal = ZERO
    """No-cache price of the same tokens minus their price (negative when writes did not pay)."""
    expected_usd: Decimal | None = None
    """A plan's expected cost, when these calls ran one (read from its ledger marker)."""
    expected_hit_rate: float | None = None

    @property
    def hit_rate(self) -> float:
        """Share of input tokens read from the cache (0.0 with no input)."""
        total = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
        return self.cache_read_tokens / total if total else 0.0

    def __str__(self) -> str:
        text = (f"{self.requests} calls: hit rate {self.hit_rate:.1%} ({self.cache_read_tokens} "
                f"read, {self.cache_write_tokens} written, {self.input_tokens} uncached), cost "
                f"{format_usd(self.cost_usd)}, saved "
                f"{format_usd(self.saved_usd)} by caching")
        if self.expected_usd is not None:
            text += f"; planned {format_usd(self.expected_usd)}"
            if self.expected_hit_rate is not None:
                text += f" at {self.expected_hit_rate:.1%} hits"
        return text


def _saved_usd(model: str, usage: Usage, table: PriceTable | None) -> Decimal:
    plain = Usage(input_tokens=usage.total_input_tokens, output_tokens=usage.output_tokens,
                  speed=usage.speed, inference_geo=usage.inference_geo,
                  service_tier=usage.service_tier)
    try:
        return cost(model, plain, table=table).total - cost(model, usage, table=table).total
    except UnknownModelError:
        return ZERO  # a model no longer priced: its tokens count, its savings cannot


def tally(calls: Iterable[tuple[str, Usage, Decimal]], *,
          table: PriceTable | None = None) -> CacheStats:
    """Stats over ``(model, usage, cost_usd)`` of finished calls."""
    requests = uncached = read = written = 0
    spent = saved = ZERO
    for model, usage, cost_usd in calls:
        requests += 1
        uncached += usage.input_tokens
        read += usage.cache_read_tokens
        written += usage.total_cache_write_tokens
        spent += cost_usd
        saved += _saved_usd(model, usage, table)
    return CacheStats(requests, uncached, read, written, spent, saved)


def usage_of_record(record: SpendRecord) -> Usage:
    """The usage a ledger record settled (its tokens by kind)."""
    tokens = record.tokens
    return Usage(input_tokens=tokens.get("input", 0),
                 cache_read_tokens=tokens.get("cache_read", 0),
                 cache_write_tokens={kind.removeprefix("cache_write_"): count
                                     for kind, count in tokens.items()
                                     if kind.startswith("cache_write_")},
                 output_tokens=tokens.get("output", 0))


def from_records(records: Iterable[SpendRecord], *,
                 table: PriceTable | None = None) -> CacheStats:
    """Stats over ledger records: billed calls count; a plan's $0 marker gives the estimate."""
    calls: list[tuple[str, Usage, Decimal]] = []
    expected: Decimal | None = None
    expected_hits: list[float] = []
    for record in records:
        if record.status == "adjustment":
            if EXPECTED_USD_TAG in record.tags:
                expected = (expected or ZERO) + Decimal(record.tags[EXPECTED_USD_TAG])
                expected_hits.append(float(record.tags.get(EXPECTED_HIT_TAG, "0")))
            continue
        if record.status == "released" or not record.tokens:
            continue
        calls.append((record.model, usage_of_record(record), record.actual_usd))
    stats = tally(calls, table=table)
    return CacheStats(stats.requests, stats.input_tokens, stats.cache_read_tokens,
                      stats.cache_write_tokens, stats.cost_usd, stats.saved_usd, expected,
                      sum(expected_hits) / len(expected_hits) if expected_hits else None)
