"""Which provider and endpoint a bare request body is for.

A body alone does not say where it goes. The model decides the provider (its price entry names
it; an unpriced model by the adapter whose ``model_prefixes`` it starts with, ``claude-*`` ids
Anthropic's, else the first provider's API, OpenAI's, which compatible hosts speak too), and
the provider's adapter reads the endpoint from the body's shape: for OpenAI ``messages`` for
Chat Completions, ``input`` for Responses, or Embeddings for an embedding model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._core.errors import ConfigError, UnknownModelError
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import ModelPrice, PriceTable, default_table
from spendguard._providers.adapter import adapter_for, adapters

__all__ = ["body_fields", "caches_implicitly", "marks_breakpoints", "model_price_or_none",
           "request_kind"]

_PRICED = tuple(member for member in Endpoint if member is not Endpoint.FREE)


def model_price_or_none(model: Any, table: PriceTable | None = None) -> ModelPrice | None:
    """The model's price entry, or None when it is not priced (never raises)."""
    if not isinstance(model, str):
        return None
    try:
        return (table or default_table()).get(model)
    except UnknownModelError:
        return None


def request_kind(body: Mapping[str, Any], *, provider: str | None = None,
                 endpoint: str | None = None,
                 table: PriceTable | None = None) -> tuple[str, Endpoint]:
    """``(provider, endpoint)`` of a request body; ``provider`` / ``endpoint`` pin either."""
    if not isinstance(body, Mapping):
        raise ConfigError(f"request: expected a dict (a request body), got "
                          f"{type(body).__name__}")
    model = body.get("model")
    price = model_price_or_none(model, table)
    if provider is None:
        provider = price.provider if price is not None else _guess(model)
    shaped = [adapter.name for adapter in adapters() if adapter.prompt_cache]
    if provider not in shaped:
        raise ConfigError(f"provider: expected {' or '.join(map(repr, shaped))}, got "
                          f"{provider!r}")
    if endpoint is None:
        embedding = price is not None and price.mode == "embedding"
        return provider, adapter_for(provider).body_endpoint(body, embedding=embedding)
    if endpoint not in _PRICED:
        raise ConfigError(f"endpoint: expected one of {', '.join(_PRICED)}, got {endpoint!r}")
    return provider, Endpoint(endpoint)


def _guess(model: Any) -> str:
    """The provider of an unpriced model: the adapter that claims its prefix, else the first."""
    found = adapters()
    if isinstance(model, str):
        for adapter in found:
            if adapter.model_prefixes and model.startswith(adapter.model_prefixes):
                return adapter.name
    return found[0].name


def marks_breakpoints(provider: str) -> bool:
    """Whether a provider caches at the markers a request places (``cache_control``), rather
    than by the longest prefix it has seen."""
    return adapter_for(provider).prompt_cache == "breakpoints"


def body_fields(provider: str, endpoint: Endpoint) -> tuple[str, str | None]:
    """The field of a body's turns and its top-level system field (None: the system prompt
    is a turn), as ``provider`` speaks ``endpoint``: the endpoint's own fields when it is one
    of the provider's, else ``messages`` holding every turn."""
    if endpoint.provider != provider:
        return "messages", None
    return endpoint.turns_field or "messages", endpoint.system_field


def caches_implicitly(provider: str) -> bool:
    """Whether a provider caches a request's common prefix by itself, taking neither markers
    nor a cache key, so only the order of its body's parts can help."""
    return adapter_for(provider).prompt_cache == "implicit"
