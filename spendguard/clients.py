"""Drop-in guarded clients: the official SDK classes with ``budget=`` added.

Importing this module imports both SDKs; ``spendguard/__init__`` loads it only when a client
name is first used, so ``import spendguard`` stays fast.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai

from spendguard.budget import Budget
from spendguard.calls import Provider
from spendguard.errors import ConfigError
from spendguard.metering import Guard, GuardOptions
from spendguard.prices import PriceTable
from spendguard.transport import install, installed_guard

__all__ = ["Anthropic", "AsyncAnthropic", "AsyncOpenAI", "OpenAI", "wrap"]

_UNSET: Any = object()


def _guard(client: Any, provider: Provider, sdk_error: type[Exception], budget: Any,
           cap_output: bool, allow_unpriced: bool, store_prompts: bool,
           prices: PriceTable | None) -> None:
    http_client = client._client
    if not isinstance(http_client, (httpx2.Client, httpx2.AsyncClient)):
        raise ConfigError(
            f"http_client: spendguard guards httpx2 clients; got {type(http_client).__module__}."
            f"{type(http_client).__name__}. Pass httpx2.Client(...) (or the SDK's "
            "DefaultHttpxClient) instead of a legacy httpx client."
        )
    existing = installed_guard(http_client)
    if existing is not None and budget is _UNSET:
        return  # a copy (client.with_options) shares its parent's guard
    if budget is not _UNSET and budget is not None and not isinstance(budget, Budget):
        raise ConfigError(
            f"budget: expected a spendguard.Budget, got {type(budget).__name__}; "
            "write budget=spendguard.Budget(\"10.00\")"
        )
    options = GuardOptions(cap_output=cap_output, allow_unpriced=allow_unpriced,
                           store_prompts=store_prompts, prices=prices)
    install(http_client, Guard(provider, None if budget is _UNSET else budget, options),
            sdk_error)


class OpenAI(openai.OpenAI):
    """``openai.OpenAI`` whose every request is budgeted before it is sent.

    Takes the official constructor's arguments plus ``budget``, ``cap_output`` (shrink the
    output cap to fit what is left instead of refusing), ``allow_unpriced`` (let requests the
    guard cannot price through, uncounted), ``store_prompts`` (keep request text in the
    ledger; a hash otherwise) and ``prices`` (a custom price table).
    """

    def __init__(self, *args: Any, budget: Budget | None = _UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _guard(self, Provider.OPENAI, openai.OpenAIError, budget, cap_output, allow_unpriced,
               store_prompts, prices)


class AsyncOpenAI(openai.AsyncOpenAI):
    """``openai.AsyncOpenAI`` whose every request is budgeted; arguments as :class:`OpenAI`."""

    def __init__(self, *args: Any, budget: Budget | None = _UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _guard(self, Provider.OPENAI, openai.OpenAIError, budget, cap_output, allow_unpriced,
               store_prompts, prices)


class Anthropic(anthropic.Anthropic):
    """``anthropic.Anthropic`` whose every request is budgeted; arguments as :class:`OpenAI`."""

    def __init__(self, *args: Any, budget: Budget | None = _UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _guard(self, Provider.ANTHROPIC, anthropic.AnthropicError, budget, cap_output,
               allow_unpriced, store_prompts, prices)


class AsyncAnthropic(anthropic.AsyncAnthropic):
    """``anthropic.AsyncAnthropic``, budgeted; arguments as :class:`OpenAI`."""

    def __init__(self, *args: Any, budget: Budget | None = _UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _guard(self, Provider.ANTHROPIC, anthropic.AnthropicError, budget, cap_output,
               allow_unpriced, store_prompts, prices)


def wrap(client: Any, budget: Budget | None = None, *, cap_output: bool = False,
         allow_unpriced: bool = False, store_prompts: bool = False,
         prices: PriceTable | None = None) -> Any:
    """Guard a client you already built (``openai`` or ``anthropic``, sync or async).

    The client's HTTP transport is wrapped in place and the same object is returned.
    """
    sdk_error: type[Exception]
    if isinstance(client, (openai.OpenAI, openai.AsyncOpenAI)):
        provider, sdk_error = Provider.OPENAI, openai.OpenAIError
    elif isinstance(client, (anthropic.Anthropic, anthropic.AsyncAnthropic)):
        provider, sdk_error = Provider.ANTHROPIC, anthropic.AnthropicError
    else:
        raise ConfigError(
            f"client: spendguard.wrap() takes an openai or anthropic client, got "
            f"{type(client).__name__}"
        )
    _guard(client, provider, sdk_error, budget, cap_output, allow_unpriced, store_prompts,
           prices)
    return client
