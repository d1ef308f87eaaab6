"""When caching a prefix pays, and for how long to keep it: pure arithmetic over prices.

- TTL from the expected gap between reuses (start to start): Anthropic keeps 5 minutes by
  default or 1 hour at a higher write price; an entry is refreshed each time it is read, so
  the gap, not the whole run, must fit in the TTL. OpenAI's explicit TTLs are 30 minutes, or 12
  hours on the Responses API.
- Pay-back: a write costs more than plain input (1.25x for 5 minutes, 2x for 1 hour at
  Anthropic; 1.25x on OpenAI models that bill writes) and each later read saves most of the
  input price. With ``reuses`` reads after one write, caching pays when
  ``write + reuses x read < (1 + reuses) x input``.
"""

from __future__ import annotations

from decimal import Decimal

from spendguard._caching.kind import marks_breakpoints
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import ModelPrice
from spendguard._providers.adapter import adapter_for

__all__ = ["DEFAULT_MIN_CACHEABLE_TOKENS", "TTL_SECONDS", "choose_ttl", "min_cacheable_tokens",
           "pays_back"]

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0, "30m": 1800.0, "12h": 43200.0}
DEFAULT_MIN_CACHEABLE_TOKENS = 1024
"""Used for a model whose price entry states no minimum (OpenAI's, and Anthropic's usual one)."""


def choose_ttl(provider: str, endpoint: Endpoint, reuse_gap_s: float | None) -> str | None:
    """The cheapest TTL that outlives the gap between reuses; None when none does.

    An unknown gap gets the provider's default TTL.
    """
    # Every TTL the provider bills, but an endpoint with no TTL choice (Chat Completions)
    # writes only the default one.
    choices = adapter_for(provider).cache_ttls
    if not marks_breakpoints(provider) and not endpoint.cache_ttl_choice:
        choices = choices[:1]
    if reuse_gap_s is None:
        return choices[0]
    for ttl in choices:
        if reuse_gap_s <= TTL_SECONDS[ttl]:
            return ttl
    return None


def pays_back(model_price: ModelPrice, ttl: str, reuses: int | None) -> bool:
    """Whether writing a prefix once and reading it ``reuses`` times beats plain input.

    ``None`` reuses means unknown: caching was asked for, so one reuse is assumed. A model
    that bills no cache writes (OpenAI before gpt-5.6) always pays back.
    """
    if reuses is not None and reuses < 1:
        return False
    count = Decimal(1 if reuses is None else reuses)
    plain = model_price.input_usd_per_million
    if not model_price.cache_write_usd_per_million:
        return True
    write = model_price.cache_write_usd_per_million.get(ttl)
    if write is None:
        return False  # the model does not offer this TTL
    read = model_price.base_rate("cache_read")
    return write + count * read < (1 + count) * plain


def min_cacheable_tokens(model_price: ModelPrice | None) -> int:
    """The shortest prefix the model caches (tokens); shorter ones are silently not cached."""
    if model_price is None or model_price.min_cacheable_tokens is None:
        return DEFAULT_MIN_CACHEABLE_TOKENS
    return model_price.min_cacheable_tokens
