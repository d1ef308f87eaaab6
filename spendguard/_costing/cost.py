"""What a request cost: :class:`~spendguard._costing.usage.Usage` x
:class:`~spendguard._costing.prices.ModelPrice`.

Pure Decimal arithmetic, no rounding (format for people with
:func:`spendguard._core.money.format_usd`).
Each token bucket is priced at one rate:

    rate = base rate (or a modifier's published absolute rate)
           x long-context tier multiplier, when the request's total input is above a threshold
           x every applicable modifier (batch, service tier, fast speed, data-residency region)

Which modifiers apply is read from the usage first: the provider's reported ``service_tier``
wins over the ``service_tier`` argument (the provider bills the tier it actually served; OpenAI
reports "priority" for a "fast" request, and may serve "default" when "flex" was asked for).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, localcontext
from typing import Any

from spendguard._core.money import MILLION, ZERO, format_usd
from spendguard._costing.prices import (
    LongContextTier,
    ModelPrice,
    PriceModifier,
    PriceTable,
    default_table,
)
from spendguard._costing.usage import Usage, usage_from

__all__ = ["STANDARD_TIERS", "Cost", "CostLine", "billable_tier", "cost", "total_usd",
           "worst_case_usd"]

STANDARD_TIERS = frozenset({"default", "auto", "standard", "standard_only"})
"""Service-tier names that mean Standard pricing (no modifier): OpenAI's requested "auto" and
reported "default", Anthropic's requested "auto" / "standard_only" and reported "standard"."""


def billable_tier(tier: object) -> str | None:
    """The service tier a request is priced at, None for the base (Standard) rate.

    The one rule for every requested or reported tier: no tier, an empty one or a Standard
    name is the base rate; any other name ("flex", "priority", "fast", "scale", "batch"...) is
    the price modifier of that name, which the model's entry must have (or pricing says how to
    add it).
    """
    if tier.__class__ is not str and not isinstance(tier, str):
        return None if tier is None else str(tier)
    return None if tier == "" or tier in STANDARD_TIERS else tier

_THOUSAND = Decimal(1000)


@dataclass(frozen=True)
class CostLine:
    """One priced bucket: ``tokens`` at ``usd_per_million`` came to ``usd``.

    ``kind`` is ``input``, ``cache_read``, ``cache_write_<ttl>``, ``output`` or ``tool:<name>``;
    for a tool line ``tokens`` counts requests and ``usd_per_million`` is per million requests.
    """

    kind: str
    tokens: int
    usd_per_million: Decimal
    usd: Decimal


@dataclass(frozen=True)
class Cost:
    """The price of one request in USD, with the lines, tier and modifiers that made it."""

    model: str
    total: Decimal
    lines: tuple[CostLine, ...]
    table_version: str
    tier: LongContextTier | None
    modifiers: tuple[str, ...]
    usage: Usage
    effective_from: date | None = None
    """The first day the rates that priced it were in force, when they carry a date."""

    @property
    def estimated(self) -> bool:
        """True when the usage priced here was estimated rather than reported."""
        return self.usage.estimated

    def line(self, kind: str) -> CostLine | None:
        """The line of one kind (``"output"``, ``"cache_write_5m"``, ...), if billed."""
        return next((line for line in self.lines if line.kind == kind), None)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; amounts are exact decimal strings."""
        return {
            "model": self.model,
            "total_usd": str(self.total),
            "table_version": self.table_version,
            "effective_from": self.effective_from.isoformat() if self.effective_from else None,
            "tier": str(self.tier) if self.tier else None,
            "modifiers": list(self.modifiers),
            "estimated": self.estimated,
            "lines": [{"kind": line.kind, "tokens": line.tokens,
                       "usd_per_million": str(line.usd_per_million), "usd": str(line.usd)}
                      for line in self.lines],
            "usage": self.usage.as_dict(),
        }

    def __str__(self) -> str:
        extras = [str(self.tier)] if self.tier else []
        extras += list(self.modifiers)
        suffix = f", {', '.join(extras)}" if extras else ""
        usd = format_usd(self.total)
        return f"{usd} ({self.model}{suffix}; prices {self.table_version})"


def cost(model: str, usage: Usage | object, *, batch: bool = False,
         service_tier: str | None = None, table: PriceTable | None = None,
         at: datetime | date | None = None) -> Cost:
    """The cost of one request of ``model`` that used ``usage``, made at ``at`` (None: now).

    ``usage`` is a :class:`Usage`, or a provider response / usage dict / SDK object read with
    the model's provider. ``batch`` prices at Batch API rates (also implied by a reported
    ``service_tier`` of "batch"); ``service_tier`` applies when the usage reports none. The
    rates are those in force on the call's UTC day (for a rate with dated changes,
    ``Cost.effective_from`` says which). Raises
    :class:`~spendguard._core.errors.UnknownModelError` when the model, a token kind, a tool or
    a modifier has no price: never a silent $0.
    """
    model_price = (table or default_table()).get(model, at)
    read = usage if isinstance(usage, Usage) else usage_from(model_price.provider, usage)
    return _priced(model_price, read, batch=batch, service_tier=service_tier)


def _priced(model_price: ModelPrice, usage: Usage, *, batch: bool,
            service_tier: str | None) -> Cost:
    names = _modifier_names(usage, batch=batch, service_tier=service_tier)
    tier = model_price.tier_for(usage.total_input_tokens)
    lines: list[CostLine] = []
    with localcontext() as context:
        context.prec = 40  # exact for any realistic token count x rate
        for kind, tokens in _buckets(usage, model_price):
            rate = _cached_rate(model_price, kind, tier, names)
            lines.append(CostLine(kind, tokens, rate, tokens * rate / MILLION))
        for tool, count in usage.tool_requests.items():
            per_1k = model_price.tool_rate_per_1k(tool)
            lines.append(CostLine(f"tool:{tool}", count, per_1k * _THOUSAND,
                                  count * per_1k / _THOUSAND))
        total = sum((line.usd for line in lines), ZERO)
    return Cost(model_price.model, total, tuple(lines), model_price.table_version, tier,
                tuple(names), usage, model_price.effective_from)


def total_usd(model_price: ModelPrice, usage: Usage, *, service_tier: str | None = None,
              batch: bool = False) -> Decimal:
    """``cost(...).total`` for an entry already looked up, without building the cost lines.

    The guard prices every call twice (its worst case, then the bill) and only keeps the
    total: this multiplies the same cached rates in the same order and precision as
    :func:`cost`, so the amount is identical. Usage with server-tool requests goes through
    :func:`cost` itself (tool rates are priced per request, not per token).
    """
    if usage.tool_requests:
        return _priced(model_price, usage, batch=batch, service_tier=service_tier).total
    names = _modifier_names(usage, batch=batch, service_tier=service_tier)
    # Most entries have no long-context tier: then the input total needs no adding up.
    tier = model_price.tier_for(usage.total_input_tokens) if model_price.tiers else None
    return _sum(model_price, tier, names, _buckets(usage, model_price))


def worst_case_usd(model_price: ModelPrice, input_tokens: int, output_tokens: int, *,
                   cache_ttls: tuple[str, ...] = (), service_tier: str | None = None,
                   speed: str | None = None, inference_geo: str | None = None,
                   batch: bool = False) -> Decimal:
    """The worst case: the dearest way these tokens can be billed, the input uncached or
    written to the cache at one of ``cache_ttls`` (cache writes cost more than plain input),
    the output as output; at Batch API rates with ``batch``.

    The one computation of a worst case (the guard's, the plan's, the batch's and the
    cascade's all come here). The same amount as the greatest :func:`total_usd` over one
    ``Usage`` per place the input may land (the same rates, order and precision, the first of
    equal amounts kept), without building those ``Usage`` values: the guard prices every
    call's worst case before sending it.
    """
    # _modifier_names applies billable_tier itself (the same answer for an answer of it).
    # No label at all (the usual request): no modifier, with no call to find that out.
    names = () if not batch and service_tier is None and speed is None \
        and inference_geo is None else _modifier_names(
            _NO_USAGE, batch=batch, service_tier=service_tier, speed=speed,
            inference_geo=inference_geo)
    tier = model_price.tier_for(input_tokens) if model_price.tiers else None
    output = ([("output", output_tokens)]
              if output_tokens or model_price.output_usd_per_million is not None else [])
    # The buckets _buckets() lists for Usage(input_tokens=..., output_tokens=...), then for
    # Usage(cache_write_tokens={ttl: input_tokens}, output_tokens=...) per cache-write TTL the
    # entry prices (a zero write would only repeat the first amount).
    worst = _sum(model_price, tier, names, [("input", input_tokens), *output])
    if input_tokens:
        for ttl in cache_ttls:
            if ttl in model_price.cache_write_usd_per_million:
                written = _sum(model_price, tier, names,
                               [("input", 0), (f"cache_write_{ttl}", input_tokens), *output])
                worst = max(worst, written)  # the first of equal amounts, as max() keeps
    return worst


def _sum(model_price: ModelPrice, tier: LongContextTier | None, names: tuple[str, ...],
         buckets: list[tuple[str, int]]) -> Decimal:
    """The buckets priced at the cached rates, in their order, at :func:`cost`'s precision."""
    rates = _rate_vector(model_price, tier, names)
    total = ZERO
    with localcontext() as context:
        context.prec = 40  # as in cost(): exact for any realistic token count x rate
        for kind, tokens in buckets:  # membership, not .get: no call per known rate
            rate = rates[kind] if kind in rates else _cached_rate(model_price, kind, tier, names)
            total += tokens * rate / MILLION
    return total


# A rate depends only on the entry, the tier, the modifiers and the kind, and a guarded call
# prices twice (worst case, bill): each (entry, tier, modifiers) has one vector of rates by
# kind, filled as kinds are priced. A cached vector holds its ModelPrice, so the id in its key
# cannot be reused while it is cached; bounded by clearing.
_RATES: dict[tuple[int, int, tuple[str, ...]], tuple[ModelPrice, dict[str, Decimal]]] = {}
_MAX_RATES = 4096


def _rate_vector(model_price: ModelPrice, tier: LongContextTier | None,
                 names: tuple[str, ...]) -> dict[str, Decimal]:
    """The rates by kind worked out so far for one entry, tier and set of modifiers."""
    key = (id(model_price), id(tier), names)  # the tier belongs to the entry
    if key in _RATES:
        return _RATES[key][1]
    if len(_RATES) >= _MAX_RATES:
        _RATES.clear()
    rates: dict[str, Decimal] = {}
    _RATES[key] = (model_price, rates)
    return rates


def _cached_rate(model_price: ModelPrice, kind: str, tier: LongContextTier | None,
                 names: tuple[str, ...]) -> Decimal:
    rates = _rate_vector(model_price, tier, names)
    rate = rates.get(kind)
    if rate is None:
        # Raises for an unpriced kind or modifier, every time: only rates are cached.
        rate = _rate(model_price, kind, tier, [model_price.modifier(name) for name in names])
        rates[kind] = rate
    return rate


def _modifier_names(usage: Usage, *, batch: bool, service_tier: str | None,
                    speed: str | None = None, inference_geo: str | None = None,
                    ) -> tuple[str, ...]:
    """The modifiers that price ``usage`` (its labels, or the given ones where it has none)."""
    tier = usage.service_tier if usage.service_tier is not None else service_tier
    if tier is not None:  # None is the base rate: no call for the usual case
        tier = billable_tier(tier)
    speed = usage.speed if usage.speed is not None else speed
    geo = usage.inference_geo if usage.inference_geo is not None else inference_geo
    names = []
    if batch or tier == "batch":
        names.append("batch")
    if tier is not None and tier != "batch":
        names.append(tier)
    if speed not in (None, "standard"):
        names.append(f"speed_{speed}")
    if geo not in (None, "global"):
        names.append(f"inference_geo_{geo}")
    return tuple(names)


_NO_USAGE = Usage()  # no labels of its own: _modifier_names then reads the given ones


def _buckets(usage: Usage, model_price: ModelPrice) -> list[tuple[str, int]]:
    buckets = [("input", usage.input_tokens)]
    if usage.cache_read_tokens:
        buckets.append(("cache_read", usage.cache_read_tokens))
    if usage.cache_write_tokens:  # most replies wrote none: no call for them
        for ttl, n in usage.cache_write_tokens.items():
            buckets.append((f"cache_write_{ttl}", n))
    if usage.output_tokens or model_price.output_usd_per_million is not None:
        buckets += (("output", usage.output_tokens),)  # the usual last bucket, with no call
    return buckets


def _rate(model_price: ModelPrice, kind: str, tier: LongContextTier | None,
          modifiers: Sequence[PriceModifier]) -> Decimal:
    published = [m.usd_per_million[kind] for m in modifiers if kind in m.usd_per_million]
    rate = published[-1] if published else model_price.base_rate(kind)
    if tier is not None:
        rate *= tier.multiplier_for(kind)
    for modifier in modifiers:
        if modifier.applies_to(kind):
            rate *= modifier.multiplier
    return rate
