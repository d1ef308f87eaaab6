"""Drop-in guarded OpenAI clients: the official classes with ``budget=`` added."""

from __future__ import annotations

from typing import TYPE_CHECKING

import openai

from spendguard.calls import Provider
from spendguard.clients import Guarded

if TYPE_CHECKING:
    from spendguard.batching.deferred import DeferredOpenAI

__all__ = ["AsyncOpenAI", "OpenAI"]


class OpenAI(Guarded, openai.OpenAI):
    """``openai.OpenAI`` whose every request is budgeted before it is sent.

    Takes the official constructor's arguments plus spendguard's (see
    :class:`~spendguard.clients.Guarded`): ``budget``, ``cap_output``, ``allow_unpriced``,
    ``store_prompts``, ``prices``, ``cache_order``.
    """

    _spendguard_provider = Provider.OPENAI
    _spendguard_sdk_error = openai.OpenAIError

    @property
    def deferred(self) -> DeferredOpenAI:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.chat.completions.create(...)`` returns a handle: call ``.result()``.
        """
        from spendguard.batching.deferred import openai_deferred  # noqa: PLC0415

        return openai_deferred(self, is_async=False)


class AsyncOpenAI(Guarded, openai.AsyncOpenAI):
    """``openai.AsyncOpenAI`` whose every request is budgeted; arguments as :class:`OpenAI`."""

    _spendguard_provider = Provider.OPENAI
    _spendguard_sdk_error = openai.OpenAIError

    @property
    def deferred(self) -> DeferredOpenAI:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.chat.completions.create(...)`` returns a handle: await it.
        """
        from spendguard.batching.deferred import openai_deferred  # noqa: PLC0415

        return openai_deferred(self, is_async=True)
