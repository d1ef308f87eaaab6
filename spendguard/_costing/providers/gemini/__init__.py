"""Gemini (google-genai): the first provider behind the adapter seam
(:mod:`spendguard._costing.providers.adapter`).

``paths`` (endpoint and model from a URL path), ``routing`` (the price id), ``requests``
(a body read into a call, the input bound), ``usage`` (replies and streams). :data:`ADAPTER`
bundles them for the choke point; the client side (attaching the guard to a
``genai.Client``) is :mod:`spendguard._guard.gemini`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from spendguard._costing.calls import Call
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import PriceTable
from spendguard._costing.providers.adapter import PricedIds, ProviderAdapter, Route
from spendguard._costing.providers.gemini.errors import error_body
from spendguard._costing.providers.gemini.paths import endpoint_of, model_of
from spendguard._costing.providers.gemini.requests import (
    build_call,
    count_input,
    with_output_cap,
)
from spendguard._costing.providers.gemini.routing import route
from spendguard._costing.providers.gemini.usage import GeminiStreamReader, usage_from_gemini
from spendguard._costing.tokens.count import TokenCount
from spendguard._costing.usage import Usage

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

__all__ = ["ADAPTER", "GeminiAdapter", "stream_reader", "usage_from_gemini"]


def stream_reader(endpoint: str) -> GeminiStreamReader:
    """A fresh reader of one ``streamGenerateContent`` stream."""
    return GeminiStreamReader()


class GeminiAdapter:
    """The Gemini Developer API and Vertex AI's Gemini models."""

    name = "gemini"
    otel_name = "gcp.gemini"
    display_name = "Gemini"
    billing_names = ("Google", "Gemini API")
    sdk_package = "google.genai"
    base_url_env = "GOOGLE_GEMINI_BASE_URL"
    cache_ttls: tuple[str, ...] = ()  # an explicit cache bills storage by the hour instead
    # Price ids and price data beyond its price file: other tables, platforms, file sections.
    genai_prices_ids: Mapping[str, str] = {"google": ""}
    # Its entries bill what genai-prices does not publish (explicit-cache storage, grounding).
    genai_prices_fallback = False
    cache_write_multipliers: Mapping[str, Decimal] = {}
    price_sections: tuple[str, ...] = ()
    id_rules: Mapping[str, str] = {}  # its ids name versions (-001) and previews, not dates

    def litellm_id(self, key: str, litellm_provider: str) -> str | None:
        return None  # LiteLLM's Gemini records are not read

    def undated(self, model: str) -> str | None:
        return None

    def resolve_id(self, model: str, entries: PricedIds, day: date) -> tuple[str, str] | None:
        return None

    exact_input = False
    model_prefixes: tuple[str, ...] = ("gemini",)
    prompt_cache = "implicit"  # an explicit cache is its own endpoint

    def endpoint(self, path: str) -> Endpoint | None:
        return endpoint_of(path)

    def price_id(self, path: str) -> str | None:
        found = model_of(path)
        return None if found is None else found[0]

    def route(self, platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
              table: PriceTable) -> Route:
        return route(platform, url, body, table)

    def body_endpoint(self, body: Mapping[str, Any], *, embedding: bool) -> Endpoint:
        return Endpoint.EMBED if embedding else Endpoint.GENERATE

    def reply_endpoint(self, module: str) -> Endpoint | None:
        return Endpoint.GENERATE if module.startswith("google.genai.") else None

    def build_call(self, endpoint: Endpoint, body: dict[str, Any]) -> Call:
        return build_call(endpoint, body)

    def with_output_cap(self, endpoint: Endpoint, body: dict[str, Any],
                        tokens: int) -> dict[str, Any] | None:
        return with_output_cap(endpoint, body, tokens)

    def ended_cache(self, method: str, path: str) -> str | None:
        from spendguard._costing.providers.gemini.caches import cache_name  # noqa: PLC0415

        return cache_name(path) if method == "DELETE" else None

    def refuse_unpriced(self, call: Call, raw: bytes | None = None) -> None:
        return None

    def error_body(self, status: int, message: str, *, code: str) -> dict[str, Any]:
        return error_body(status, message, code=code)

    def end_user(self, body: Mapping[str, Any]) -> str | None:
        return None  # the API has no end-user field

    def count_input(self, endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
        return count_input(endpoint, body)

    def read_usage(self, payload: object, *, endpoint: str | None = None) -> Usage:
        return usage_from_gemini(payload, endpoint=endpoint)

    def stream_reader(self, endpoint: str) -> GeminiStreamReader:
        return stream_reader(endpoint)


ADAPTER: ProviderAdapter = GeminiAdapter()  # typed: the interface is checked here
