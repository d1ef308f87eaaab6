"""Gemini (google-genai): the first provider behind the adapter seam
(:mod:`spendguard._providers.adapter`).

``paths`` (endpoint and model from a URL path), ``routing`` (the price id), ``requests``
(a body read into a call, the input bound), ``usage`` (replies and streams). :data:`ADAPTER`
bundles them for the choke point; the client side (attaching the guard to a
``genai.Client``) is :mod:`spendguard._providers.gemini.guard`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from spendguard._costing.calls import Call
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import PriceTable
from spendguard._costing.tokens.count import TokenCount
from spendguard._costing.usage import Usage
from spendguard._providers.adapter import AdapterDefaults, ProviderAdapter, Route
from spendguard._providers.gemini import endpoints, sdk, texts
from spendguard._providers.gemini.addresses import gateway_path
from spendguard._providers.gemini.errors import error_body
from spendguard._providers.gemini.kwargs import rest_body, sdk_kwargs
from spendguard._providers.gemini.paths import endpoint_of, model_of
from spendguard._providers.gemini.requests import (
    build_call,
    cache_ttl_seconds,
    count_input,
    with_output_cap,
)
from spendguard._providers.gemini.routing import route
from spendguard._providers.gemini.usage import GeminiStreamReader, usage_from_gemini

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

__all__ = ["ADAPTER", "GeminiAdapter", "stream_reader", "usage_from_gemini"]


def stream_reader(endpoint: str) -> GeminiStreamReader:
    """A fresh reader of one ``streamGenerateContent`` stream."""
    return GeminiStreamReader()


class GeminiAdapter(AdapterDefaults):
    """The Gemini Developer API and Vertex AI's Gemini models."""

    name = "gemini"
    otel_name = "gcp.gemini"
    display_name = "Gemini"
    billing_names = ("Google", "Gemini API")
    sdk_package = "google.genai"
    # Its SDK's clients: recognised (wrap, install, batches) and built (the CLI).
    sdk_clients = sdk.CLIENTS
    sdk_error = sdk.ERROR
    sdk_user_agent = sdk.USER_AGENT

    base_url_env = "GOOGLE_GEMINI_BASE_URL"
    # -- addresses: the gateway's upstream and routes, --upstream kinds, install()'s hosts
    platforms: tuple[str, ...] = ()  # Vertex AI's paths say it
    api_base_url = "https://generativelanguage.googleapis.com"
    default_wire = False
    gateway_headers: tuple[str, ...] = ()
    traffic_guard = False  # install() guards the clients google-genai builds, not its hosts

    def key_env(self, platform: str | None) -> str:
        return "GEMINI_API_KEY"

    def key_header(self, platform: str | None) -> str:
        return "x-goog-api-key"

    def gateway_path(self, path: str) -> str | None:
        return gateway_path(path)

    cache_ttls: tuple[str, ...] = ()  # an explicit cache bills storage by the hour instead
    # Price ids and price data beyond its price file: other tables, platforms, file sections.
    genai_prices_ids: Mapping[str, str] = {"google": ""}
    # Its entries bill what genai-prices does not publish (explicit-cache storage, grounding).
    genai_prices_fallback = False
    cache_write_multipliers: Mapping[str, Decimal] = {}
    price_sections: tuple[str, ...] = ()
    id_rules: Mapping[str, str] = {}  # its ids name versions (-001) and previews, not dates

    exact_input = False
    model_prefixes: tuple[str, ...] = ("gemini",)
    prompt_cache = "implicit"  # an explicit cache is its own endpoint
    # Requests as plans read them and SDK calls as the strategies make them; their texts
    batch_request_fields: tuple[str, ...] = ()  # plans do not read its batch requests

    def request_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return rest_body(body)  # generate_content's arguments, or the REST body already

    def sdk_arguments(self, endpoint: Endpoint, body: Mapping[str, Any]) -> dict[str, Any]:
        return sdk_kwargs(body) if endpoint is endpoints.GENERATE else dict(body)

    def prompt_text(self, endpoint: Endpoint, request: Mapping[str, Any]) -> str:
        return texts.prompt_text(endpoint, request)

    def reply_text(self, endpoint: Endpoint, response: Any) -> str:
        return texts.reply_text(endpoint, response)

    def text_request(self, model: str, text: str, max_tokens: int) -> dict[str, Any]:
        return {"model": model, "contents": text, "config": {"max_output_tokens": max_tokens}}

    def endpoint(self, path: str) -> Endpoint | None:
        return endpoint_of(path)

    def price_id(self, path: str) -> str | None:
        found = model_of(path)
        return None if found is None else found[0]

    def route(self, platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
              table: PriceTable) -> Route:
        return route(platform, url, body, table)

    def body_endpoint(self, body: Mapping[str, Any], *, embedding: bool) -> Endpoint:
        return endpoints.EMBED if embedding else endpoints.GENERATE

    def reply_endpoint(self, module: str) -> Endpoint | None:
        return endpoints.GENERATE if module.startswith("google.genai.") else None

    def build_call(self, endpoint: Endpoint, body: dict[str, Any]) -> Call:
        return build_call(endpoint, body)

    def with_output_cap(self, endpoint: Endpoint, body: dict[str, Any],
                        tokens: int) -> dict[str, Any] | None:
        return with_output_cap(endpoint, body, tokens)

    def ended_cache(self, method: str, path: str) -> str | None:
        from spendguard._providers.gemini.caches import cache_name  # noqa: PLC0415

        return cache_name(path) if method == "DELETE" else None

    def cache_reply_end(self, reply: object) -> tuple[str, datetime] | None:
        from spendguard._providers.gemini.caches import reply_end  # noqa: PLC0415

        return reply_end(reply)

    def release_cache_storage(self, name: str, until: datetime, *,
                              forget: bool) -> tuple[str, int, int] | None:
        from spendguard._providers.gemini.caches import release_storage  # noqa: PLC0415

        released = release_storage(name, until, forget=forget)
        if released is None:
            return None
        term, seconds = released
        return term.model, term.tokens, seconds

    def error_body(self, status: int, message: str, *, code: str) -> dict[str, Any]:
        return error_body(status, message, code=code)

    # Endpoints in settling: which one is priced, replies without usage, explicit caches
    def priced_endpoint(self, endpoint: Endpoint, path: str, *,
                        allow_unpriced: bool) -> Endpoint | None:
        if endpoint is not endpoints.CACHE_UPDATE:
            return endpoint
        from spendguard._providers.gemini.caches import (  # noqa: PLC0415
            update_endpoint,
        )

        return update_endpoint(path, allow_unpriced=allow_unpriced)

    def reports_no_usage(self, endpoint: Endpoint, body: object) -> bool:
        # Its embeddings report no usage: billed as the input bounded before sending.
        return endpoint is endpoints.EMBED and isinstance(body, dict) \
            and "usageMetadata" not in body

    def settled_reply(self, endpoint: Endpoint, body: object, usage: Usage) -> str | None:
        if not endpoint.cache_storage:
            return None
        from spendguard._providers.gemini.caches import settled_note  # noqa: PLC0415

        return settled_note(body, usage, update=endpoint is endpoints.CACHE_UPDATE)

    def cache_storage_seconds(self, body: Mapping[str, Any]) -> int:
        return cache_ttl_seconds(body)

    def count_input(self, endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
        return count_input(endpoint, body)

    def read_usage(self, payload: object, *, endpoint: str | None = None) -> Usage:
        return usage_from_gemini(payload, endpoint=endpoint)

    def stream_reader(self, endpoint: str) -> GeminiStreamReader:
        return stream_reader(endpoint)


ADAPTER: ProviderAdapter = GeminiAdapter()  # typed: the interface is checked here
