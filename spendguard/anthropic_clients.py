"""Drop-in guarded Anthropic clients: the official classes with ``budget=`` added."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic

from spendguard.budget import Budget
from spendguard.caching import CacheOrder
from spendguard.calls import Provider
from spendguard.clients import UNSET, guard_client
from spendguard.prices import PriceTable

if TYPE_CHECKING:
    from spendguard.batching.deferred import DeferredAnthropic

__all__ = ["Anthropic", "AsyncAnthropic"]


class Anthropic(anthropic.Anthropic):
    """``anthropic.Anthropic`` whose every request is budgeted; arguments as :class:`OpenAI`."""

    def __init__(self, *args: Any, budget: Budget | None = UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, cache_order: bool | CacheOrder = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        guard_client(self, Provider.ANTHROPIC, anthropic.AnthropicError, budget,
                     cap_output=cap_output, allow_unpriced=allow_unpriced,
                     store_prompts=store_prompts, prices=prices, cache_order=cache_order)

    @property
    def deferred(self) -> DeferredAnthropic:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.messages.create(...)`` returns a handle: call .result().
        """
        from spendguard.batching.deferred import anthropic_deferred  # noqa: PLC0415

        return anthropic_deferred(self, is_async=False)


class AsyncAnthropic(anthropic.AsyncAnthropic):
    """``anthropic.AsyncAnthropic``, budgeted; arguments as :class:`OpenAI`."""

    def __init__(self, *args: Any, budget: Budget | None = UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, cache_order: bool | CacheOrder = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        guard_client(self, Provider.ANTHROPIC, anthropic.AnthropicError, budget,
                     cap_output=cap_output, allow_unpriced=allow_unpriced,
                     store_prompts=store_prompts, prices=prices, cache_order=cache_order)

    @property
    def deferred(self) -> DeferredAnthropic:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.messages.create(...)`` returns a handle: await it.
        """
        from spendguard.batching.deferred import anthropic_deferred  # noqa: PLC0415

        return anthropic_deferred(self, is_async=True)
