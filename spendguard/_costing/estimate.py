"""What a call can cost at most, before it is sent.

Pure arithmetic over a :class:`~spendguard._costing.calls.Call`: input tokens counted offline (exact
for OpenAI models, a stated upper bound for Anthropic), output tokens from the request's cap (or the
model's maximum when the request sets none), priced with the tables. The worst case is what the
budget reserves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Call
from spendguard._costing.cost import total_usd, worst_case_usd
from spendguard._costing.prices import CACHE_STORAGE, ModelPrice, PriceTable, default_table
from spendguard._costing.tokens import TokenCount, count_request_tokens
from spendguard._costing.usage import Usage
from spendguard._providers.adapter import adapter_for

__all__ = ["Estimate", "estimate_call", "max_output_tokens", "worst_cost_usd"]


@dataclass(frozen=True, slots=True)
class Estimate:
    """The pre-flight numbers of one call: tokens and the worst-case cost in USD."""

    model: str
    input_tokens: TokenCount
    output_tokens_worst: int
    worst_usd: Decimal
    table_version: str
    price: ModelPrice | None = field(default=None, compare=False, repr=False)
    """The entry that priced it (the guard prices the bill with it too), when known."""
    at: datetime | None = field(default=None, compare=False)
    """The call's time the rates in force were looked up for (None: when it was estimated)."""

    @property
    def exact_input(self) -> bool:
        """True when the input was counted with the model's own tokenizer."""
        return self.input_tokens.exact


def max_output_tokens(call: Call, model_price: ModelPrice, input_tokens: int) -> int:
    """The most output tokens the call can produce across all its choices."""
    if not call.endpoint.generates:
        return 0
    if (model_price.price_source == "catalog" and model_price.max_output_tokens is None
            and call.output_cap is None):
        raise ConfigError(
            f"{call.model}: priced by the fallback catalog ({model_price.table_version}), "
            "which publishes no maximum output for it, so the worst case of a request without "
            "an output cap is unknown and spendguard refused to send it; set max_tokens "
            "(or max_completion_tokens / max_output_tokens), or add the model with its "
            "max_output_tokens to a price file (docs/prices.md)")
    ceiling = model_price.max_output_tokens or model_price.context_window
    if ceiling is None and call.output_cap is not None and model_price.price_source == "catalog":
        return call.output_cap * call.choices
    if ceiling is None:
        raise ConfigError(
            f"{call.model}: the price table knows no maximum output for this model and the "
            "request sets no output cap; set max_tokens (or max_completion_tokens / "
            "max_output_tokens), or add max_output_tokens to the model's price entry"
        )
    # Comparisons rather than min() and max(): every guarded call comes here.
    if model_price.context_window:
        room = model_price.context_window - input_tokens  # what the input leaves of it
        if room < ceiling:
            ceiling = room if room > 0 else 0
    cap = call.output_cap
    per_choice = ceiling if cap is None or cap > ceiling else cap
    return per_choice * call.choices


def worst_cost_usd(call: Call, input_tokens: int, output_tokens: int,
                   table: PriceTable | None = None, *, at: datetime | None = None,
                   price: ModelPrice | None = None) -> Decimal:
    """The call's worst case for these tokens (:func:`~spendguard._costing.cost.worst_case_usd`
    with the call's cache TTLs, service tier, speed and region), at the rates in force at
    ``at``; ``price``: the call's entry when it was looked up already.

    Input is priced at the highest rate it could land in: uncached, or written to a cache
    (cache writes cost more than plain input) when the request may write one.
    """
    if price is None:
        price = (table or default_table()).get(call.model, at)
    return worst_case_usd(price, input_tokens, output_tokens, cache_ttls=call.cache_ttls,
                          service_tier=call.service_tier, speed=call.speed,
                          inference_geo=call.inference_geo)


def estimate_call(call: Call, table: PriceTable | None = None, *,
                  at: datetime | None = None, raw: bytes | None = None) -> Estimate:
    """The worst case of one call, ready to reserve, at the rates in force at ``at`` (the
    call's time; None: now). ``raw``: the JSON bytes ``call.body`` was parsed from, when the
    caller has them (a quicker test for a request that cannot ask for audio)."""
    table = table or default_table()
    model_price = table.get(call.model, at)
    adapter_for(call.provider).refuse_unpriced(call, raw)
    # Platform and host entries count with their model's tokenizer (a bound when unknown).
    body = call.body if model_price.count_as is None else {**call.body,
                                                            "model": model_price.count_as}
    # str() of a StrEnum member is its value, without the enum's property lookup.
    input_tokens = count_request_tokens(str(call.provider), call.endpoint, body)
    output_tokens = max_output_tokens(call, model_price, int(input_tokens))
    # A cache's TTL update writes no tokens: it adds storage, at most for its whole new TTL.
    worst = (worst_cost_usd(call, int(input_tokens), output_tokens, price=model_price)
             if call.endpoint.bills_tokens else Decimal(0))
    if call.endpoint.cache_storage:  # an explicit cache's storage for the TTL
        seconds = adapter_for(call.provider).cache_storage_seconds(call.body)
        storage = Usage(tool_requests={CACHE_STORAGE: int(input_tokens) * seconds})
        worst += total_usd(model_price, storage)
    return Estimate(call.model, input_tokens, output_tokens, worst, model_price.table_version,
                    model_price, at)
