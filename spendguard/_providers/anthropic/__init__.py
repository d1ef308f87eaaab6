"""Anthropic: the Claude API, and Claude on Bedrock and Vertex AI, behind the adapter seam
(:mod:`spendguard._providers.adapter`).

``paths`` (endpoint of a path, the platforms' path forms), ``routing`` (Bedrock and Vertex
price ids), ``requests`` (a body read into a call), ``usage`` (replies, streams, batch
results), ``ids`` (dated snapshots, Bedrock and Vertex ids, LiteLLM's ids). :data:`ADAPTER`
bundles them; the input count is an upper bound (Claude's tokenizer is not public:
``_costing/tokens/anthropic.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from spendguard._costing.calls import Call, with_top_level_cap
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import PriceTable
from spendguard._costing.usage import Usage
from spendguard._providers.adapter import AdapterDefaults, PricedIds, ProviderAdapter, Route
from spendguard._providers.anthropic import addresses, endpoints, ids, paths, requests, routing, sdk
from spendguard._providers.anthropic.errors import error_body
from spendguard._providers.anthropic.usage import (
    MessageStreamReader,
    stream_reader,
    usage_from_anthropic,
)
from spendguard._providers.texts import block_text, last_user_text

if TYPE_CHECKING:  # pragma: no cover
    import httpx2


__all__ = ["ADAPTER", "AnthropicAdapter", "stream_reader", "usage_from_anthropic"]


class AnthropicAdapter(AdapterDefaults):
    """The Claude API, and Claude on Bedrock and Vertex AI."""

    name = "anthropic"
    otel_name = "anthropic"
    display_name = "Anthropic"
    billing_names = ("Anthropic", "Claude API")
    sdk_package = "anthropic"
    # Its SDK's clients: recognised (wrap, install, batches) and built (the CLI).
    sdk_clients = sdk.CLIENTS
    sdk_error = sdk.ERROR
    sdk_user_agent = sdk.USER_AGENT

    base_url_env = "ANTHROPIC_BASE_URL"
    # -- addresses: the gateway's upstream and routes, --upstream kinds, install()'s hosts
    platforms: tuple[str, ...] = ()  # Bedrock's and Vertex's paths say which they are
    api_base_url = "https://api.anthropic.com"
    default_wire = False
    gateway_headers: tuple[str, ...] = addresses.GATEWAY_HEADERS
    traffic_guard = True

    def key_env(self, platform: str | None) -> str:
        return "ANTHROPIC_API_KEY"

    def key_header(self, platform: str | None) -> str:
        return "x-api-key"

    def gateway_path(self, path: str) -> str | None:
        return addresses.gateway_path(path)

    def traffic_kind(self, host: str, path: str) -> str | None:
        return addresses.traffic_kind(self.name, host, path)

    cache_ttls: tuple[str, ...] = ("5m", "1h")
    # Price ids and price data beyond its price file: other tables, platforms, file sections.
    genai_prices_ids: Mapping[str, str] = {"anthropic": ""}
    genai_prices_fallback = True
    cache_write_multipliers: Mapping[str, Decimal] = {"5m": Decimal("1.25"), "1h": Decimal(2)}
    price_sections: tuple[str, ...] = ()
    id_rules: Mapping[str, str] = ids.ID_RULES

    def litellm_id(self, key: str, litellm_provider: str) -> str | None:
        return ids.litellm_id(key, litellm_provider)

    def undated(self, model: str) -> str | None:
        return ids.undated(model)

    def resolve_id(self, model: str, entries: PricedIds, day: date) -> tuple[str, str] | None:
        return ids.resolve_id(model, entries, day)

    exact_input = False
    model_prefixes: tuple[str, ...] = ("claude",)
    prompt_cache = "breakpoints"
    # Requests as plans read them and SDK calls as the strategies make them; their texts
    batch_request_fields: tuple[str, ...] = ("custom_id", "params")

    def batch_request(self, item: Mapping[str, Any]) -> tuple[Endpoint, dict[str, Any]] | None:
        return requests.batch_request(item)

    def prompt_text(self, endpoint: Endpoint, request: Mapping[str, Any]) -> str:
        return last_user_text(request.get("messages") or [])

    def reply_text(self, endpoint: Endpoint, response: Any) -> str:
        return block_text(response)

    def text_request(self, model: str, text: str, max_tokens: int) -> dict[str, Any]:
        return {"model": model, "max_tokens": max_tokens,
                "messages": [{"role": "user", "content": text}]}

    def endpoint(self, path: str) -> Endpoint | None:
        return paths.endpoint_of(path)

    def route(self, platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
              table: PriceTable) -> Route | None:
        return routing.route(platform, url, body, table)

    def body_endpoint(self, body: Mapping[str, Any], *, embedding: bool) -> Endpoint:
        return endpoints.MESSAGES

    def reply_endpoint(self, module: str) -> Endpoint | None:
        return endpoints.MESSAGES if module.startswith("anthropic.") else None

    def build_call(self, endpoint: Endpoint, body: dict[str, Any]) -> Call:
        return requests.build_call(endpoint, body)

    def with_output_cap(self, endpoint: Endpoint, body: dict[str, Any],
                        tokens: int) -> dict[str, Any] | None:
        return with_top_level_cap(endpoint, body, tokens)

    def error_body(self, status: int, message: str, *, code: str) -> dict[str, Any]:
        return error_body(status, message, code=code)

    def end_user(self, body: Mapping[str, Any]) -> str | None:
        return requests.end_user(body)

    def read_usage(self, payload: object, *, endpoint: str | None = None) -> Usage:
        return usage_from_anthropic(payload, endpoint=endpoint)

    def stream_reader(self, endpoint: str) -> MessageStreamReader:
        return stream_reader(endpoint)


ADAPTER: ProviderAdapter = AnthropicAdapter()  # typed: the interface is checked here
