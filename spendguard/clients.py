"""Guarding a client: wrap its HTTP transport with spendguard's choke point.

The drop-in classes live in :mod:`spendguard.openai_clients` and
:mod:`spendguard.anthropic_clients`, so building an OpenAI client never imports the anthropic
SDK (each takes a second or more to import) and vice versa.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx2

from spendguard.budget import Budget
from spendguard.caching import CacheOrder, as_cache_order
from spendguard.calls import Provider
from spendguard.errors import ConfigError
from spendguard.metering import Guard, GuardOptions
from spendguard.prices import PriceTable
from spendguard.routing import AZURE
from spendguard.transport import install, installed_guard

__all__ = ["UNSET", "Guarded", "guard_client", "wrap"]

UNSET: Any = object()


class Guarded:
    """The arguments spendguard adds to the official constructors (a mixin of the four
    drop-in clients, placed before the SDK class).

    ``budget``: the :class:`~spendguard.Budget` every call is charged to; ``cap_output``:
    shrink the output cap to fit what is left instead of refusing; ``allow_unpriced``: let
    requests the guard cannot price through, uncounted; ``store_prompts``: keep request text
    in the ledger (a hash otherwise); ``prices``: a custom price table; ``cache_order``: True
    or a :class:`~spendguard.CacheOrder`, to order each request for the prompt cache.
    """

    _spendguard_provider: ClassVar[Provider]
    _spendguard_sdk_error: ClassVar[type[Exception]]
    _spendguard_platform: str | None = None  # "azure": requests name deployments

    def __init__(self, *args: Any, budget: Budget | None = UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, cache_order: bool | CacheOrder = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # the SDK class that follows in the MRO
        guard_client(self, self._spendguard_provider, self._spendguard_sdk_error, budget,
                     cap_output=cap_output, allow_unpriced=allow_unpriced,
                     store_prompts=store_prompts, prices=prices, cache_order=cache_order,
                     platform=self._spendguard_platform)


def guard_client(client: Any, provider: Provider, sdk_error: type[Exception], budget: Any, *,
                 cap_output: bool, allow_unpriced: bool, store_prompts: bool,
                 prices: PriceTable | None, cache_order: bool | CacheOrder = False,
                 platform: str | None = None) -> None:
    """Install the guard on ``client``'s httpx2 client (a copy keeps its parent's guard)."""
    http_client = client._client
    if not isinstance(http_client, (httpx2.Client, httpx2.AsyncClient)):
        raise ConfigError(
            f"http_client: spendguard guards httpx2 clients; got {type(http_client).__module__}."
            f"{type(http_client).__name__}. Pass httpx2.Client(...) (or the SDK's "
            "DefaultHttpxClient) instead of a legacy httpx client."
        )
    existing = installed_guard(http_client)
    if existing is not None and budget is UNSET:
        return  # a copy (client.with_options) shares its parent's guard
    if budget is not UNSET and budget is not None and not isinstance(budget, Budget):
        raise ConfigError(
            f"budget: expected a spendguard.Budget, got {type(budget).__name__}; "
            "write budget=spendguard.Budget(\"10.00\")"
        )
    options = GuardOptions(cap_output=cap_output, allow_unpriced=allow_unpriced,
                           store_prompts=store_prompts, prices=prices,
                           cache_order=as_cache_order(cache_order), platform=platform)
    install(http_client, Guard(provider, None if budget is UNSET else budget, options),
            sdk_error)


def wrap(client: Any, budget: Budget | None = None, *, cap_output: bool = False,
         allow_unpriced: bool = False, store_prompts: bool = False,
         prices: PriceTable | None = None, cache_order: bool | CacheOrder = False) -> Any:
    """Guard a client you already built (``openai`` or ``anthropic``, sync or async).

    The client's HTTP transport is wrapped in place and the same object is returned.
    """
    package = type(client).__module__.partition(".")[0]
    sdk_error: type[Exception]
    platform: str | None = None
    if package == "openai" or _is_instance(client, "openai", ("OpenAI", "AsyncOpenAI")):
        import openai  # noqa: PLC0415 - only the SDK in use is imported

        provider, sdk_error = Provider.OPENAI, openai.OpenAIError
        if isinstance(client, (openai.AzureOpenAI, openai.AsyncAzureOpenAI)):
            platform = AZURE
    elif package == "anthropic" or _is_instance(client, "anthropic",
                                                ("Anthropic", "AsyncAnthropic")):
        import anthropic  # noqa: PLC0415 - only the SDK in use is imported

        provider, sdk_error = Provider.ANTHROPIC, anthropic.AnthropicError
    else:
        raise ConfigError(
            f"client: spendguard.wrap() takes an openai or anthropic client, got "
            f"{type(client).__name__}"
        )
    guard_client(client, provider, sdk_error, budget, cap_output=cap_output,
                 allow_unpriced=allow_unpriced, store_prompts=store_prompts, prices=prices,
                 cache_order=cache_order, platform=platform)
    return client


def _is_instance(client: Any, package: str, names: tuple[str, ...]) -> bool:
    import sys  # noqa: PLC0415

    module = sys.modules.get(package)
    return module is not None and isinstance(client, tuple(getattr(module, n) for n in names))
