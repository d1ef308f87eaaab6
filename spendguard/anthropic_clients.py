"""Drop-in guarded Anthropic clients: the official classes with ``budget=`` added."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anthropic

from spendguard.calls import Provider
from spendguard.clients import Guarded

if TYPE_CHECKING:
    from spendguard.batching.deferred import DeferredAnthropic

__all__ = ["Anthropic", "AnthropicBedrock", "AnthropicVertex", "AsyncAnthropic",
           "AsyncAnthropicBedrock", "AsyncAnthropicVertex"]


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


class AnthropicBedrock(Guarded, anthropic.AnthropicBedrock):
    """``anthropic.AnthropicBedrock`` (Claude on Amazon Bedrock), budgeted.

    The model id in the request path (``anthropic.claude-…-v1:0``, cross-Region ``us.…`` /
    ``global.…``) is priced from ``pricing/platforms.toml``; streamed responses are AWS
    event-stream frames, metered as they flow. Arguments as :class:`Anthropic`.
    """

    _spendguard_provider = Provider.ANTHROPIC
    _spendguard_sdk_error = anthropic.AnthropicError


class AsyncAnthropicBedrock(Guarded, anthropic.AsyncAnthropicBedrock):
    """``anthropic.AsyncAnthropicBedrock``, budgeted; arguments as :class:`AnthropicBedrock`."""

    _spendguard_provider = Provider.ANTHROPIC
    _spendguard_sdk_error = anthropic.AnthropicError


class AnthropicVertex(Guarded, anthropic.AnthropicVertex):
    """``anthropic.AnthropicVertex`` (Claude on Google Vertex AI), budgeted.

    The model in the request path (``claude-…@date``) is priced at the global endpoint's rate
    for ``region="global"`` and the regional rate otherwise. Arguments as :class:`Anthropic`.
    """

    _spendguard_provider = Provider.ANTHROPIC
    _spendguard_sdk_error = anthropic.AnthropicError


class AsyncAnthropicVertex(Guarded, anthropic.AsyncAnthropicVertex):
    """``anthropic.AsyncAnthropicVertex``, budgeted; arguments as :class:`AnthropicVertex`."""

    _spendguard_provider = Provider.ANTHROPIC
    _spendguard_sdk_error = anthropic.AnthropicError
