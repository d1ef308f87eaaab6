"""Drop-in guarded OpenAI clients: the official classes with ``budget=`` added."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import openai

from spendguard.budget import Budget
from spendguard.caching import CacheOrder
from spendguard.calls import Provider
from spendguard.clients import UNSET, guard_client
from spendguard.prices import PriceTable

if TYPE_CHECKING:
    from spendguard.batching.deferred import DeferredOpenAI

__all__ = ["AsyncOpenAI", "OpenAI"]


class OpenAI(openai.OpenAI):
    """``openai.OpenAI`` whose every request is budgeted before it is sent.

    Takes the official constructor's arguments plus ``budget``, ``cap_output`` (shrink the
    output cap to fit what is left instead of refusing), ``allow_unpriced`` (let requests the
    guard cannot price through, uncounted), ``store_prompts`` (keep request text in the
    ledger; a hash otherwise), ``prices`` (a custom price table) and ``cache_order`` (True or
    a ``spendguard.CacheOrder``: order each request for the prompt cache before it is sent).
    """

    def __init__(self, *args: Any, budget: Budget | None = UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, cache_order: bool | CacheOrder = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        guard_client(self, Provider.OPENAI, openai.OpenAIError, budget, cap_output=cap_output,
                     allow_unpriced=allow_unpriced, store_prompts=store_prompts,
                     prices=prices, cache_order=cache_order)

    @property
    def deferred(self) -> DeferredOpenAI:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.chat.completions.create(...)`` returns a handle: call .result().
        """
        from spendguard.batching.deferred import openai_deferred  # noqa: PLC0415

        return openai_deferred(self, is_async=False)


class AsyncOpenAI(openai.AsyncOpenAI):
    """``openai.AsyncOpenAI`` whose every request is budgeted; arguments as :class:`OpenAI`."""

    def __init__(self, *args: Any, budget: Budget | None = UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, cache_order: bool | CacheOrder = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        guard_client(self, Provider.OPENAI, openai.OpenAIError, budget, cap_output=cap_output,
                     allow_unpriced=allow_unpriced, store_prompts=store_prompts,
                     prices=prices, cache_order=cache_order)

    @property
    def deferred(self) -> DeferredOpenAI:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.chat.completions.create(...)`` returns a handle: await it.
        """
        from spendguard.batching.deferred import openai_deferred  # noqa: PLC0415

        return openai_deferred(self, is_async=True)
