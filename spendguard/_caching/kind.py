"""Which provider and endpoint a bare request body is for.

A body alone does not say where it goes. The model decides the provider (its price entry names
it; ``claude-*`` ids are Anthropic's when the model is not priced; a body with ``contents`` is
Gemini's), and the body's shape the OpenAI endpoint: ``messages`` for Chat Completions,
``input`` for Responses, or Embeddings for an embedding model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._core.errors import ConfigError, UnknownModelError
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import ModelPrice, PriceTable, default_table

__all__ = ["model_price_or_none", "request_kind"]

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
        if price is not None:
            provider = price.provider
        elif isinstance(model, str) and model.startswith("claude"):
            provider = "anthropic"
        elif "contents" in body:
            provider = "gemini"
        else:
            provider = "openai"
    if provider not in ("openai", "anthropic", "gemini"):
        raise ConfigError(f"provider: expected 'openai', 'anthropic' or 'gemini', got "
                          f"{provider!r}")
    if endpoint is None:
        return provider, _endpoint_of(provider, body, price)
    if endpoint not in _PRICED:
        raise ConfigError(f"endpoint: expected one of {', '.join(_PRICED)}, got {endpoint!r}")
    return provider, Endpoint(endpoint)


def _endpoint_of(provider: str, body: Mapping[str, Any], price: ModelPrice | None) -> Endpoint:
    if provider == "anthropic":
        return Endpoint.MESSAGES
    if provider == "gemini":
        return Endpoint.EMBED if price is not None and price.mode == "embedding" \
            else Endpoint.GENERATE
    if price is not None and price.mode == "embedding":
        return Endpoint.EMBEDDINGS
    if "input" in body and "messages" not in body:
        return Endpoint.RESPONSES
    return Endpoint.CHAT
