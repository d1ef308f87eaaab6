"""Which provider and endpoint a bare request body is for.

A body alone does not say where it goes. The model decides the provider (its price entry names
it; ``claude-*`` ids are Anthropic's when the model is not priced), and the body's shape the
OpenAI endpoint: ``messages`` for Chat Completions, ``input`` for Responses, or Embeddings for an
embedding model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard.errors import ConfigError, UnknownModelError
from spendguard.prices import ModelPrice, PriceTable, default_table

__all__ = ["ENDPOINTS", "endpoint_from_url", "model_price_or_none", "request_kind"]

ENDPOINTS = ("chat.completions", "responses", "embeddings", "messages")
_URLS = {"/v1/chat/completions": "chat.completions", "/v1/responses": "responses",
         "/v1/embeddings": "embeddings", "/v1/messages": "messages"}


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
                 table: PriceTable | None = None) -> tuple[str, str]:
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
        else:
            provider = "openai"
    if provider not in ("openai", "anthropic"):
        raise ConfigError(f"provider: expected 'openai' or 'anthropic', got {provider!r}")
    if endpoint is None:
        if provider == "anthropic":
            endpoint = "messages"
        elif price is not None and price.mode == "embedding":
            endpoint = "embeddings"
        elif "input" in body and "messages" not in body:
            endpoint = "responses"
        else:
            endpoint = "chat.completions"
    if endpoint not in ENDPOINTS:
        raise ConfigError(f"endpoint: expected one of {', '.join(ENDPOINTS)}, got {endpoint!r}")
    return provider, endpoint


def endpoint_from_url(url: Any) -> str | None:
    """The endpoint of a batch line's ``url`` (``/v1/chat/completions``...); None if unknown."""
    if not isinstance(url, str):
        return None
    return _URLS.get(url.split("?", 1)[0].rstrip("/"))
