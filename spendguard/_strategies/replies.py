"""Calling an official SDK client and reading its reply: provider, endpoint, text, tokens, USD.

The cascade, its judge check, plans and the loop guard all need the same few facts about one
call, for each SDK (openai, anthropic, google-genai: a Gemini request may be written as the
REST body or as ``generate_content``'s arguments).
Each coupling to another spendguard layer (usage, cost, estimate, budget) is one small function
here, so that a change there is a change in one place.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from decimal import Decimal
from typing import Any

from spendguard._budget.reservations import remaining_for_call
from spendguard._budget.scopes import tags
from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Endpoint, Provider, build_call
from spendguard._costing.cost import cost
from spendguard._costing.estimate import estimate_call
from spendguard._costing.usage import Usage, usage_from
from spendguard._providers.adapter import (
    ProviderAdapter,
    adapter_for,
    adapters,
    default_wire_adapter,
)

__all__ = [
    "acall",
    "budget_left_usd",
    "call",
    "cost_usd",
    "default_endpoint",
    "endpoint_for",
    "is_async_client",
    "prompt_text",
    "provider_of",
    "rank_usd",
    "remaining_usd",
    "reply_kind",
    "reply_model",
    "reply_text",
    "reply_usage",
    "sdk_arguments",
    "tagged",
    "text_request",
    "worst_usd",
]

def provider_of(client: object) -> str:
    """``"openai"``, ``"anthropic"`` or ``"gemini"`` (``google.genai``), from the SDK the
    client class comes from.

    Read from the class's module path, so no SDK is imported to answer.
    """
    for klass in type(client).__mro__:
        provider = _sdk(klass)
        if provider is not None:
            return provider
    raise ConfigError(
        f"client: expected an openai, anthropic or google-genai SDK client (e.g. "
        f"spendguard.OpenAI(...), openai.OpenAI(...) or spendguard.Gemini(...)), got "
        f"{type(client).__name__}"
    )


def is_async_client(client: object) -> bool:
    """True for ``AsyncOpenAI`` / ``AsyncAnthropic`` / a genai client's ``.aio`` (and
    subclasses)."""
    return any(klass.__name__.startswith("Async") for klass in type(client).__mro__
               if _sdk(klass) is not None)


@functools.cache
def _sdk_packages() -> dict[str, str]:
    """The provider of each SDK, by the package its classes live in (``google.genai``)."""
    return {adapter.sdk_package: adapter.name for adapter in adapters()}


def _sdk(klass: type) -> str | None:
    module = klass.__module__
    for package, provider in _sdk_packages().items():
        if module == package or module.startswith(package + "."):
            return provider
    return None


def default_endpoint() -> Endpoint:
    """The endpoint a reply is from when nothing says: the default wire's first (chat)."""
    return Endpoint.of(default_wire_adapter().name)[0]


def endpoint_for(provider: str, request: Mapping[str, Any]) -> Endpoint:
    """The endpoint a request body is for: messages (Anthropic), generate_content (Gemini),
    Responses or chat (OpenAI)."""
    return adapter_for(provider).body_endpoint(request, embedding=False)


def text_request(provider: str, model: str, text: str, max_tokens: int) -> dict[str, Any]:
    """A one-turn request of ``text`` to ``model``, at most ``max_tokens`` of output, in the
    provider's body (messages; Gemini: contents and config)."""
    return adapter_for(provider).text_request(model, text, max_tokens)


def call(client: Any, endpoint: Endpoint, body: Mapping[str, Any]) -> Any:
    """Send one non-streaming request through the SDK and return its parsed reply."""
    if body.get("stream"):
        raise ConfigError("request: stream=True is not supported here; the reply must be "
                          "complete to be checked. Remove 'stream' from the request.")
    return endpoint.method_of(client)(**sdk_arguments(endpoint, body))


def sdk_arguments(endpoint: Endpoint, body: Mapping[str, Any]) -> dict[str, Any]:
    """The SDK method's keyword arguments for a request body, as the endpoint's provider
    spells them (Gemini's REST body is turned into ``model``, ``contents``, ``config``;
    other bodies are the arguments already)."""
    return _adapter(endpoint).sdk_arguments(endpoint, body)


def _adapter(endpoint: Endpoint) -> ProviderAdapter:
    """The adapter of the provider whose API has ``endpoint``."""
    provider = endpoint.provider
    if provider is None:
        raise ConfigError(f"endpoint: {endpoint!r} is no provider's priced endpoint")
    return adapter_for(provider)


async def acall(client: Any, endpoint: Endpoint, body: Mapping[str, Any]) -> Any:
    """The async twin of :func:`call`."""
    if body.get("stream"):
        raise ConfigError("request: stream=True is not supported here; the reply must be "
                          "complete to be checked. Remove 'stream' from the request.")
    return await endpoint.method_of(client)(**sdk_arguments(endpoint, body))


def reply_text(endpoint: Endpoint, response: Any) -> str:
    """The text a reply carries (text blocks joined; empty when it has none)."""
    return _adapter(endpoint).reply_text(endpoint, response)


def reply_kind(response: object) -> tuple[str, Endpoint]:
    """``(provider, endpoint)`` of an SDK reply object, from its class."""
    module = type(response).__module__
    for adapter in adapters():
        endpoint = adapter.reply_endpoint(module)
        if endpoint is not None:
            return adapter.name, endpoint
    raise ConfigError(f"response: expected a reply from the openai, anthropic or google-genai "
                      f"SDK (a ChatCompletion, Response, Message or GenerateContentResponse), "
                      f"got {type(response).__name__}")


def reply_model(response: object) -> str:
    """The model a reply names (``model``; Gemini: ``model_version``)."""
    return str(getattr(response, "model", None) or getattr(response, "model_version", None))


def prompt_text(endpoint: Endpoint, request: Mapping[str, Any]) -> str:
    """The last user turn of a request, as text (what a judge is shown as the question)."""
    return _adapter(endpoint).prompt_text(endpoint, request)


# --- couplings to other layers: one small function each -------------------------------------

def reply_usage(provider: str, response: Any) -> Usage:
    """The normalised token usage of a reply."""
    return usage_from(provider, response)


def cost_usd(model: str, usage: Usage) -> Decimal:
    """What ``usage`` of ``model`` costs, in USD, from the price tables."""
    return cost(model, usage).total


def rank_usd(model: str) -> Decimal:
    """A model's price for ordering tiers: one million input plus one million output tokens."""
    return cost_usd(model, Usage(input_tokens=1_000_000, output_tokens=1_000_000))


def worst_usd(provider: str, endpoint: Endpoint, body: Mapping[str, Any]) -> Decimal:
    """The request's worst case as the guard estimates it (input counted offline, output at
    its cap), in USD."""
    priced = adapter_for(provider).request_body(body)  # Gemini's SDK arguments: REST body
    call_ = build_call(Provider(provider), endpoint, priced)
    return estimate_call(call_).worst_usd


def budget_left_usd(client: object) -> Decimal | None:
    """The least any budget of a call from ``client`` has left: its own and ``with`` ones."""
    # No guarded client can exist before the transport module is loaded, so look only then
    # (and never load the metering stack for an unguarded client).
    transport: Any = sys.modules.get("spendguard._guard.transport")
    guard = transport.client_guard(client) if transport is not None else None
    return remaining_for_call(guard.budget if guard is not None else None)


def tagged(task: str | None, model: str) -> AbstractContextManager[object]:
    """Tag the ledger records of calls made inside with the cascade's task and tier."""
    if task is None:
        return nullcontext()
    return tags(**{"cascade.task": task, "cascade.tier": model})


def remaining_usd(budget: object) -> Decimal:
    """What a budget has left, in USD (``Budget.remaining``, a property or a method)."""
    remaining = getattr(budget, "remaining", None)
    if callable(remaining):
        remaining = remaining()
    if not isinstance(remaining, Decimal):
        raise ConfigError(
            f"budget: expected a spendguard.Budget (with a Decimal .remaining), got "
            f"{type(budget).__name__}"
        )
    return remaining
