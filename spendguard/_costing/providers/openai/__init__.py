"""OpenAI: the OpenAI API, Azure OpenAI and the OpenAI-compatible hosts, behind the adapter
seam (:mod:`spendguard._costing.providers.adapter`).

``paths`` (endpoint of a path), ``routing`` (Azure deployments, compatible hosts), ``requests``
(a body read into a call), ``usage`` (replies, streams, batch lines), ``ids`` (dated
snapshots, LiteLLM's ids). :data:`ADAPTER` bundles them; the input count is exact, with
OpenAI's own tokenizers (``_costing/tokens``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from spendguard._costing.calls import Call, with_top_level_cap
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import PriceTable
from spendguard._costing.providers.adapter import PricedIds, ProviderAdapter, Route
from spendguard._costing.providers.openai import ids, paths, requests, routing
from spendguard._costing.providers.openai.errors import error_body
from spendguard._costing.providers.openai.usage import (
    ChatStreamReader,
    ResponsesStreamReader,
    stream_reader,
    unpriced_audio,
    usage_from_openai,
)
from spendguard._costing.usage import Usage

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

    from spendguard._costing.tokens.count import TokenCount

__all__ = ["ADAPTER", "OpenAIAdapter", "stream_reader", "unpriced_audio", "usage_from_openai"]


@functools.cache
def _counter() -> Callable[[Endpoint | str, Mapping[str, Any]], TokenCount]:
    """The input counter, imported on first count: reports and price files read the adapter's
    names without loading the tokenizers."""
    from spendguard._costing.providers.openai.counting import count_input  # noqa: PLC0415

    return count_input


class OpenAIAdapter:
    """The OpenAI API, and the platforms and hosts that speak it."""

    name = "openai"
    otel_name = "openai"
    display_name = "OpenAI"
    billing_names = ("OpenAI", "OpenAI API")
    sdk_package = "openai"
    base_url_env = "OPENAI_BASE_URL"
    cache_ttls: tuple[str, ...] = ("30m", "12h")
    # Price ids and price data beyond its price file: other tables, platforms, file sections.
    genai_prices_ids: Mapping[str, str] = {"openai": "", "deepseek": "deepseek/",
                                           "moonshotai": "moonshot/"}
    genai_prices_fallback = True
    cache_write_multipliers: Mapping[str, Decimal] = {}  # each model states its write rate
    price_sections: tuple[str, ...] = ("hosts", "azure_deployments", "self_hosted")
    id_rules: Mapping[str, str] = ids.ID_RULES

    def litellm_id(self, key: str, litellm_provider: str) -> str | None:
        return ids.litellm_id(key, litellm_provider)

    def undated(self, model: str) -> str | None:
        return ids.undated(model)

    def resolve_id(self, model: str, entries: PricedIds, day: date) -> tuple[str, str] | None:
        return ids.resolve_id(model, entries, day)

    exact_input = True
    model_prefixes: tuple[str, ...] = ()
    prompt_cache = "prefix"

    def endpoint(self, path: str) -> Endpoint | None:
        return paths.endpoint_of(path)

    def price_id(self, path: str) -> str | None:
        return None  # the body names the model (an Azure deployment is routed)

    def route(self, platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
              table: PriceTable) -> Route | None:
        return routing.route(platform, url, body, table)

    def body_endpoint(self, body: Mapping[str, Any], *, embedding: bool) -> Endpoint:
        if embedding:
            return Endpoint.EMBEDDINGS
        if "input" in body and "messages" not in body:
            return Endpoint.RESPONSES
        return Endpoint.CHAT

    def reply_endpoint(self, module: str) -> Endpoint | None:
        if module.startswith("openai.types.responses"):
            return Endpoint.RESPONSES
        if module.startswith("openai.types.chat"):
            return Endpoint.CHAT
        return None

    def build_call(self, endpoint: Endpoint, body: dict[str, Any]) -> Call:
        return requests.build_call(endpoint, body)

    def with_output_cap(self, endpoint: Endpoint, body: dict[str, Any],
                        tokens: int) -> dict[str, Any] | None:
        return with_top_level_cap(endpoint, body, tokens)

    def ended_cache(self, method: str, path: str) -> str | None:
        return None  # no explicit cache is billed for its storage

    def refuse_unpriced(self, call: Call, raw: bytes | None = None) -> None:
        requests.refuse_unpriced(call, raw)

    def error_body(self, status: int, message: str, *, code: str) -> dict[str, Any]:
        return error_body(status, message, code=code)

    def end_user(self, body: Mapping[str, Any]) -> str | None:
        return requests.end_user(body)

    def count_input(self, endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
        return _counter()(endpoint, body)

    def read_usage(self, payload: object, *, endpoint: str | None = None) -> Usage:
        return usage_from_openai(payload, endpoint=endpoint)

    def stream_reader(self, endpoint: str) -> ChatStreamReader | ResponsesStreamReader:
        return stream_reader(endpoint)


ADAPTER: ProviderAdapter = OpenAIAdapter()  # typed: the interface is checked here
