"""Drop-in guarded Anthropic clients: the official classes with ``budget=`` added."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anthropic

from spendguard.calls import Provider
from spendguard.clients import Guarded

if TYPE_CHECKING:
    from spendguard.batching.deferred import DeferredAnthropic

__all__ = ["Anthropic", "AsyncAnthropic"]


class Anthropic(Guarded, anthropic.Anthropic):
    """``anthropic.Anthropic`` whose every request is budgeted before it is sent.

    Takes the official constructor's arguments plus spendguard's (see
    :class:`~spendguard.clients.Guarded`): ``budget``, ``cap_output``, ``allow_unpriced``,
    ``store_prompts``, ``prices``, ``cache_order``.
    """

    _spendguard_provider = Provider.ANTHROPIC
    _spendguard_sdk_error = anthropic.AnthropicError

    @property
    def deferred(self) -> DeferredAnthropic:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.messages.create(...)`` returns a handle: call ``.result()``.
        """
        from spendguard.batching.deferred import anthropic_deferred  # noqa: PLC0415

        return anthropic_deferred(self, is_async=False)


class AsyncAnthropic(Guarded, anthropic.AsyncAnthropic):
    """``anthropic.AsyncAnthropic``, budgeted; arguments as :class:`Anthropic`."""

    _spendguard_provider = Provider.ANTHROPIC
    _spendguard_sdk_error = anthropic.AnthropicError

    @property
    def deferred(self) -> DeferredAnthropic:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.messages.create(...)`` returns a handle: await it.
        """
        from spendguard.batching.deferred import anthropic_deferred  # noqa: PLC0415

        return anthropic_deferred(self, is_async=True)
