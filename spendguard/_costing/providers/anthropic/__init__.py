"""Anthropic: the Claude API, and Claude on Bedrock and Vertex AI, behind the adapter seam
(:mod:`spendguard._costing.providers.adapter`).

``paths`` (endpoint of a path, the platforms' path forms), ``routing`` (Bedrock and Vertex
price ids), ``requests`` (a body read into a call), ``usage`` (replies, streams, batch
results), ``ids`` (dated snapshots, Bedrock and Vertex ids, LiteLLM's ids). :data:`ADAPTER`
bundles them; the input count is an upper bound (Claude's tokenizer is not public:
``_costing/tokens/anthropic.py``).
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
from spendguard._costing.providers.anthropic import ids, paths, requests, routing
from spendguard._costing.providers.anthropic.errors import error_body
from spendguard._costing.providers.anthropic.usage import (
    MessageStreamReader,
    stream_reader,
    usage_from_anthropic,
)
from spendguard._costing.usage import Usage

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

    from spendguard._costing.tokens.count import TokenCount

__all__ = ["ADAPTER", "AnthropicAdapter", "stream_reader", "usage_from_anthropic"]


@functools.cache
def _counter() -> Callable[[Endpoint | str, Mapping[str, Any]], TokenCount]:
    """The input counter, imported on first count: reports and price files read the adapter's
    names without loading the tokenizers."""
    from spendguard._costing.providers.anthropic.counting import count_input  # noqa: PLC0415

    return count_input


class AnthropicAdapter:
    """The Claude API, and Claude on Bedrock and Vertex AI."""

    name = "anthropic"
    otel_name = "anthropic"
    display_name = "Anthropic"
    billing_names = ("Anthropic", "Claude API")
    sdk_package = "anthropic"
    base_url_env = "ANTHROPIC_BASE_URL"
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

    def endpoint(self, path: str) -> Endpoint | None:
        return paths.endpoint_of(path)

    def price_id(self, path: str) -> str | None:
        return None  # a platform's path is priced by its route, against the table

    def route(self, platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
              table: PriceTable) -> Route | None:
        return routing.route(platform, url, body, table)

    def body_endpoint(self, body: Mapping[str, Any], *, embedding: bool) -> Endpoint:
        return Endpoint.MESSAGES

    def reply_endpoint(self, module: str) -> Endpoint | None:
        return Endpoint.MESSAGES if module.startswith("anthropic.") else None

    def build_call(self, endpoint: Endpoint, body: dict[str, Any]) -> Call:
        return requests.build_call(endpoint, body)

    def with_output_cap(self, endpoint: Endpoint, body: dict[str, Any],
                        tokens: int) -> dict[str, Any] | None:
        return with_top_level_cap(endpoint, body, tokens)

    def ended_cache(self, method: str, path: str) -> str | None:
        return None  # no explicit cache is billed for its storage

    def refuse_unpriced(self, call: Call, raw: bytes | None = None) -> None:
        return None

    def error_body(self, status: int, message: str, *, code: str) -> dict[str, Any]:
        return error_body(status, message, code=code)

    def end_user(self, body: Mapping[str, Any]) -> str | None:
        return requests.end_user(body)

    def count_input(self, endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
        return _counter()(endpoint, body)

    def read_usage(self, payload: object, *, endpoint: str | None = None) -> Usage:
        return usage_from_anthropic(payload, endpoint=endpoint)

    def stream_reader(self, endpoint: str) -> MessageStreamReader:
        return stream_reader(endpoint)


ADAPTER: ProviderAdapter = AnthropicAdapter()  # typed: the interface is checked here
