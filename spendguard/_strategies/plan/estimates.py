"""One request's line in a plan: tokens by kind and USD, expected and at worst.

- *worst*: what the guard will reserve for the request: input at its upper bound, output at
  its cap (or the model's maximum), input priced as a cache write where that costs more;
- *expected*: input at the central count, split into cache reads, writes and plain input as
  :mod:`spendguard._strategies.plan.prefixes` expects; output at the cap when nothing better is
  known, or at the mean of past calls of the same model and task;
- *uncached*: the expected tokens with no cache at all (for the cache savings);
- *batch*: the expected tokens at the provider's batch rates (None where none is priced).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from spendguard._core.errors import ConfigError, UnknownModelError
from spendguard._costing.calls import Call, Endpoint, Provider, build_call
from spendguard._costing.cost import billable_tier, cost
from spendguard._costing.estimate import max_output_tokens, worst_cost_usd
from spendguard._costing.prices import PriceTable
from spendguard._costing.tokens import TokenCount
from spendguard._costing.usage import Usage
from spendguard._strategies.plan.history import Observed
from spendguard._strategies.plan.inputs import PlannedRequest
from spendguard._strategies.plan.prefixes import ExpectedCache

__all__ = ["Assumptions", "RequestPlan", "estimate_request"]


@dataclass(frozen=True, slots=True)
class Assumptions:
    """Latency when the ledger has none for a model and task: first token, then output speed."""

    first_token_s: float = 0.5
    output_tok_s: float = 50.0


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """One planned request: tokens by kind and USD, expected and worst case."""

    index: int
    custom_id: str | None
    provider: str
    endpoint: Endpoint
    model: str
    input_tokens: int
    """All input tokens, central estimate (cached or not)."""
    input_tokens_bound: int
    """The input count the guard reserves (equal to ``input_tokens`` when counted exactly)."""
    input_exact: bool
    cache_read_tokens: int
    cache_write_tokens: Mapping[str, int] = field(repr=False)
    output_tokens: int
    """Expected output tokens (see ``output_basis``)."""
    output_tokens_worst: int
    output_basis: str
    """``"cap"``, ``"model maximum"``, ``"history (N calls)"`` or ``"none"`` (embeddings)."""
    expected_usd: Decimal
    worst_usd: Decimal
    uncached_usd: Decimal
    batch_usd: Decimal | None
    latency_s: float
    group: int | None = None
    """Index of the request that writes this one's shared prefix (None: it shares none)."""
    after: tuple[int, ...] = ()

    @property
    def uncached_input_tokens(self) -> int:
        """Input tokens billed at the plain input rate."""
        return self.input_tokens - self.cache_read_tokens - sum(self.cache_write_tokens.values())


Split = tuple[int, int, tuple[tuple[str, int], ...], int, str | None, str | None]
"""Uncached input, cache reads, cache writes by TTL, output, speed, region."""


@functools.lru_cache(maxsize=8192)
def _priced(model: str, split: Split, batch: bool, tier: str | None,
            table: PriceTable | None) -> Decimal:
    # Requests of a fan-out mostly repeat the same few token splits: price each split once
    # (keyed by a plain tuple, which hashes far faster than a Usage).
    uncached, read, writes, output, speed, geo = split
    usage = Usage(input_tokens=uncached, cache_read_tokens=read, cache_write_tokens=dict(writes),
                  output_tokens=output, speed=speed, inference_geo=geo)
    return cost(model, usage, batch=batch, service_tier=tier, table=table).total


@functools.lru_cache(maxsize=8192)
def _worst(model: str, cache_ttls: tuple[str, ...], speed: str | None, geo: str | None,
           tier: str | None, input_tokens: int, output_tokens: int,
           table: PriceTable | None) -> Decimal:
    # Any generating call stands for all: only the model and its price options decide it.
    call = Call(Provider(str(_STAND_IN.provider)), _STAND_IN, model, {}, None,
                service_tier=tier, speed=speed, inference_geo=geo, cache_ttls=cache_ttls)
    return worst_cost_usd(call, input_tokens, output_tokens, table)


_STAND_IN = next(member for member in Endpoint if member.generates)


def _call(request: PlannedRequest) -> Call:
    try:
        return build_call(Provider(request.provider), request.endpoint, request.body)
    except ConfigError as exc:
        where = f"requests[{request.index}]" + (f" ({request.custom_id})"
                                                if request.custom_id else "")
        raise ConfigError(f"{where}: {exc}") from exc


def _output(call: Call, worst: int, observed: Observed | None) -> tuple[int, str]:
    if not call.endpoint.generates:
        return 0, "none"
    if observed is not None:
        return min(math.ceil(observed.mean_output_tokens), worst), \
            f"history ({observed.calls} calls)"
    return worst, "cap" if call.output_cap is not None else "model maximum"


def estimate_request(request: PlannedRequest, counted: TokenCount, cache: ExpectedCache, *,
                     observed: Observed | None, table: PriceTable,
                     assumptions: Assumptions) -> RequestPlan:
    """The plan line of one request (``counted``: its input tokens, as the guard counts)."""
    call = _call(request)
    model_price = table.get(call.model)
    bound = int(counted)
    output_worst = max_output_tokens(call, model_price, bound)
    output, basis = _output(call, output_worst, observed)
    central = counted.expected
    writes = {ttl: min(n, central) for ttl, n in cache.write_tokens.items() if n}
    read = min(cache.read_tokens, central - sum(writes.values()))
    expected: Split = (central - read - sum(writes.values()), read, tuple(sorted(writes.items())),
                       output, call.speed, call.inference_geo)
    plain: Split = (central, 0, (), output, call.speed, call.inference_geo)
    tier = billable_tier(call.service_tier)
    try:
        batch: Decimal | None = _priced(call.model, expected, True, None, table)
    except UnknownModelError:
        batch = None  # the model has no batch price
    if observed is not None and observed.mean_latency_s is not None:
        latency = observed.mean_latency_s
    else:
        latency = assumptions.first_token_s + output / assumptions.output_tok_s
    return RequestPlan(
        index=request.index, custom_id=request.custom_id, provider=request.provider,
        endpoint=request.endpoint, model=call.model, input_tokens=central,
        input_tokens_bound=bound, input_exact=counted.exact, cache_read_tokens=read,
        cache_write_tokens=writes, output_tokens=output, output_tokens_worst=output_worst,
        output_basis=basis, expected_usd=_priced(call.model, expected, False, tier, table),
        worst_usd=_worst(call.model, call.cache_ttls, call.speed, call.inference_geo, tier,
                         bound, output_worst, table),
        uncached_usd=_priced(call.model, plain, False, tier, table), batch_usd=batch,
        latency_s=latency, group=cache.group, after=cache.after)
