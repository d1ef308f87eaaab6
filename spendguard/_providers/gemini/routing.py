"""Gemini routes: the model is in the path (a cache's create request names it in its body)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from spendguard._core.errors import UnknownModelError
from spendguard._costing.prices import PriceTable
from spendguard._providers.adapter import Route
from spendguard._providers.gemini.paths import model_of

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

__all__ = ["route"]


def route(platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
          table: PriceTable) -> Route:
    """The route of a Gemini request: its model, whether the path streams, and the service
    (Vertex AI) when the path tells it apart."""
    from spendguard._providers.gemini.caches import cache_name, term  # noqa: PLC0415

    path = url.path
    # A model method names the model in its path; a cache's create request in its body; a
    # cache's TTL update neither: its model is the cache's, as noted when it was created.
    name = cache_name(path)
    known = None if name is None else term(name)
    if known is not None:
        return Route(known.model, False, cache=name)
    found = model_of(path) or (str(body.get("model") or "").rpartition("models/")[2], False)
    model, stream = found
    service = "gcp.vertex_ai" if "/publishers/google/" in path else None
    if model not in table:
        raise UnknownModelError(
            f"No price for Gemini model {model!r} in price table {table.version}; spendguard "
            "never sends a call it cannot price. Add it to a price file: "
            f'[models."{model}"] provider = "gemini", usd_per_million = {{ input = ..., '
            "cache_read = ..., output = ... }, context_window, max_output_tokens, source, "
            "as_of; and point SPENDGUARD_PRICES at it (docs/prices.md).",
            name=model, kind="model")
    return Route(model, stream, service=service)


