"""Calling an official SDK client and reading its reply: provider, endpoint, text, tokens, USD.

The cascade, its judge check and the loop guard all need the same few facts about one call.
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
from spendguard._costing.providers.adapter import adapter_for, adapters
from spendguard._costing.usage import Usage, usage_from

__all__ = [
    "acall",
    "budget_left_usd",
    "call",
    "cost_usd",
    "endpoint_for",
    "is_async_client",
    "prompt_text",
    "provider_of",
    "rank_usd",
    "remaining_usd",
    "reply_kind",
    "reply_text",
    "reply_usage",
    "tagged",
    "worst_case_usd",
]

def provider_of(client: object) -> str:
    """``"openai"`` or ``"anthropic"``, from the SDK the client class comes from.

    Read from the class's module path, so neither SDK is imported to answer.
    """
    packages = _sdk_packages()
    for klass in type(client).__mro__:
        root = klass.__module__.partition(".")[0]
        if root in packages:
            return packages[root]
    raise ConfigError(
        f"client: expected an openai or anthropic SDK client (e.g. spendguard.OpenAI(...) or "
        f"openai.OpenAI(...)), got {type(client).__name__}"
    )


def is_async_client(client: object) -> bool:
    """True for ``AsyncOpenAI`` / ``AsyncAnthropic`` (and subclasses)."""
    packages = _sdk_packages()
    return any(klass.__name__.startswith("Async") for klass in type(client).__mro__
               if klass.__module__.partition(".")[0] in packages)


@functools.cache
def _sdk_packages() -> dict[str, str]:
    """The provider of each SDK, by the top-level package its classes live in. A client's
    class is matched on its module's first segment, so only the SDKs that are top-level
    packages (``openai``, ``anthropic``) match: the strategies read their replies, and a
    google-genai client (``google.genai``) is refused here as before."""
    return {adapter.sdk_package: adapter.name for adapter in adapters()}


def endpoint_for(provider: str, request: Mapping[str, Any]) -> Endpoint:
    """The endpoint a request body is for: messages (Anthropic), Responses or chat (OpenAI)."""
    return adapter_for(provider).body_endpoint(request, embedding=False)


def call(client: Any, endpoint: Endpoint, body: Mapping[str, Any]) -> Any:
    """Send one non-streaming request through the SDK and return its parsed reply."""
    if body.get("stream"):
        raise ConfigError("request: stream=True is not supported here; the reply must be "
                          "complete to be checked. Remove 'stream' from the request.")
    return endpoint.method_of(client)(**body)


async def acall(client: Any, endpoint: Endpoint, body: Mapping[str, Any]) -> Any:
    """The async twin of :func:`call`."""
    if body.get("stream"):
        raise ConfigError("request: stream=True is not supported here; the reply must be "
                          "complete to be checked. Remove 'stream' from the request.")
    return await endpoint.method_of(client)(**body)


def reply_text(endpoint: Endpoint, response: Any) -> str:
    """The text a reply carries (text blocks joined; empty when it has none)."""
    if endpoint == Endpoint.CHAT:
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices else None
        return content or ""
    if endpoint == Endpoint.RESPONSES:
        return str(getattr(response, "output_text", "") or "")
    blocks = getattr(response, "content", None) or []
    return "".join(block.text for block in blocks if getattr(block, "type", None) == "text")


def reply_kind(response: object) -> tuple[str, Endpoint]:
    """``(provider, endpoint)`` of an SDK reply object, from its class."""
    module = type(response).__module__
    for adapter in adapters():
        endpoint = adapter.reply_endpoint(module)
        if endpoint is not None:
            return adapter.name, endpoint
    raise ConfigError(f"response: expected a reply from the openai or anthropic SDK (a "
                      f"ChatCompletion, Response or Message), got {type(response).__name__}")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, Mapping) and part.get("type") in
                         ("text", "input_text"))
    return ""


def prompt_text(endpoint: Endpoint, request: Mapping[str, Any]) -> str:
    """The last user turn of a request, as text (what a judge is shown as the question)."""
    if endpoint == Endpoint.RESPONSES:
        items = request.get("input")
        if isinstance(items, str):
            return items
        messages = items if isinstance(items, list) else []
    else:
        messages = request.get("messages") or []
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


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


def worst_case_usd(provider: str, endpoint: Endpoint, body: Mapping[str, Any]) -> Decimal:
    """The most this request could cost (input counted offline, output at its cap), in USD."""
    call_ = build_call(Provider(provider), endpoint, dict(body))
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
