"""OpenAI: the OpenAI API, Azure OpenAI and the OpenAI-compatible hosts, behind the adapter
seam (:mod:`spendguard._providers.adapter`).

``paths`` (endpoint of a path), ``routing`` (Azure deployments, compatible hosts), ``requests``
(a body read into a call), ``usage`` (replies, streams, batch lines), ``ids`` (dated
snapshots, LiteLLM's ids). :data:`ADAPTER` bundles them; the input count is exact, with
OpenAI's own tokenizers (``_costing/tokens``).
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
from spendguard._providers.openai import (
    addresses,
    endpoints,
    ids,
    paths,
    requests,
    routing,
    sdk,
    texts,
)
from spendguard._providers.openai.errors import error_body
from spendguard._providers.openai.platforms import AZURE
from spendguard._providers.openai.usage import (
    ChatStreamReader,
    ResponsesStreamReader,
    stream_reader,
    unpriced_audio,
    usage_from_openai,
)

if TYPE_CHECKING:  # pragma: no cover
    import httpx2


__all__ = ["ADAPTER", "OpenAIAdapter", "stream_reader", "unpriced_audio", "usage_from_openai"]


class OpenAIAdapter(AdapterDefaults):
    """The OpenAI API, and the platforms and hosts that speak it."""

    name = "openai"
    otel_name = "openai"
    display_name = "OpenAI"
    billing_names = ("OpenAI", "OpenAI API")
    sdk_package = "openai"
    # Its SDK's clients: recognised (wrap, install, batches) and built (the CLI).
    sdk_clients = sdk.CLIENTS
    sdk_error = sdk.ERROR
    sdk_user_agent = sdk.USER_AGENT

    base_url_env = "OPENAI_BASE_URL"
    # -- addresses: the gateway's upstream and routes, --upstream kinds, install()'s hosts
    platforms: tuple[str, ...] = (AZURE,)
    api_base_url = "https://api.openai.com/v1"
    default_wire = True
    gateway_headers: tuple[str, ...] = ()
    traffic_guard = True

    def key_env(self, platform: str | None) -> str:
        return "AZURE_OPENAI_API_KEY" if platform == AZURE else "OPENAI_API_KEY"

    def key_header(self, platform: str | None) -> str:
        return "api-key" if platform == AZURE else "authorization"

    def gateway_path(self, path: str) -> str | None:
        return addresses.gateway_path(path)

    def traffic_kind(self, host: str, path: str) -> str | None:
        return addresses.traffic_kind(self.name, host)

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
    # Requests as plans read them and SDK calls as the strategies make them; their texts
    batch_request_fields: tuple[str, ...] = ("custom_id", "method", "url", "body")

    def batch_request(self, item: Mapping[str, Any]) -> tuple[Endpoint, dict[str, Any]] | None:
        return requests.batch_request(item)

    def prompt_text(self, endpoint: Endpoint, request: Mapping[str, Any]) -> str:
        return texts.prompt_text(endpoint, request)

    def reply_text(self, endpoint: Endpoint, response: Any) -> str:
        return texts.reply_text(endpoint, response)

    def text_request(self, model: str, text: str, max_tokens: int) -> dict[str, Any]:
        return {"model": model, "max_tokens": max_tokens,
                "messages": [{"role": "user", "content": text}]}

    def endpoint(self, path: str) -> Endpoint | None:
        return paths.endpoint_of(path)

    def route(self, platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
              table: PriceTable) -> Route | None:
        return routing.route(platform, url, body, table)

    def body_endpoint(self, body: Mapping[str, Any], *, embedding: bool) -> Endpoint:
        if embedding:
            return endpoints.EMBEDDINGS
        if "input" in body and "messages" not in body:
            return endpoints.RESPONSES
        return endpoints.CHAT

    def reply_endpoint(self, module: str) -> Endpoint | None:
        if module.startswith("openai.types.responses"):
            return endpoints.RESPONSES
        if module.startswith("openai.types.chat"):
            return endpoints.CHAT
        return None

    def build_call(self, endpoint: Endpoint, body: dict[str, Any]) -> Call:
        return requests.build_call(endpoint, body)

    def with_output_cap(self, endpoint: Endpoint, body: dict[str, Any],
                        tokens: int) -> dict[str, Any] | None:
        return with_top_level_cap(endpoint, body, tokens)

    def refuse_unpriced(self, call: Call, raw: bytes | None = None) -> None:
        requests.refuse_unpriced(call, raw)

    def error_body(self, status: int, message: str, *, code: str) -> dict[str, Any]:
        return error_body(status, message, code=code)

    # Settling: a reply billed later
    def billed_later(self, endpoint: Endpoint, body: object) -> str | None:
        # Only a Responses reply can be: no further call for the others (every chat reply).
        return requests.billed_later(endpoint, body) if endpoint is endpoints.RESPONSES else None

    def end_user(self, body: Mapping[str, Any]) -> str | None:
        return requests.end_user(body)

    def read_usage(self, payload: object, *, endpoint: str | None = None) -> Usage:
        return usage_from_openai(payload, endpoint=endpoint)

    def stream_reader(self, endpoint: str) -> ChatStreamReader | ResponsesStreamReader:
        return stream_reader(endpoint)


ADAPTER: ProviderAdapter = OpenAIAdapter()  # typed: the interface is checked here
