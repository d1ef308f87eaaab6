"""Drop-in guarded Anthropic clients: the official classes with ``budget=`` added."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anthropic

from spendguard._costing.calls import Provider
from spendguard._guard.clients import UNSET, Guarded

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, Self

    import httpx2
    from anthropic import NotGiven, Timeout, not_given
    from anthropic._middleware import MiddlewareInput
    from anthropic._types import OpenTelemetryClientOption
    from anthropic.lib.credentials._cache import TokenCache
    from anthropic.lib.credentials._types import AccessTokenProvider, AsyncAccessTokenProvider

    from spendguard._budget.budget import Budget
    from spendguard._caching.order import CacheOrder
    from spendguard._costing.prices import PriceTable
    from spendguard._strategies.batch.deferred import DeferredAnthropic

__all__ = ["Anthropic", "AnthropicBedrock", "AnthropicVertex", "AsyncAnthropic",
           "AsyncAnthropicBedrock", "AsyncAnthropicVertex"]


class Anthropic(Guarded, anthropic.Anthropic):
    """``anthropic.Anthropic`` whose every request is budgeted before it is sent.

    Takes the official constructor's arguments plus spendguard's (see
    :class:`~spendguard._guard.clients.Guarded`): ``budget``, ``cap_output``, ``allow_unpriced``,
    ``store_prompts``, ``prices``, ``cache_order``.
    """

    if TYPE_CHECKING:  # the signatures mypy and IDEs see: the SDK's, plus spendguard's
        def __init__(
            self, *,
            api_key: str | None = None,
            auth_token: str | None = None,
            credentials: AccessTokenProvider | None = None,
            config: Mapping[str, Any] | None = None,
            profile: str | None = None,
            webhook_key: str | None = None,
            base_url: str | httpx2.URL | None = None,
            timeout: float | Timeout | NotGiven | None = not_given,
            max_retries: int = 2,
            default_headers: Mapping[str, str] | None = None,
            default_query: Mapping[str, object] | None = None,
            open_telemetry: OpenTelemetryClientOption = None,
            http_client: httpx2.Client | None = None,
            middleware: Sequence[MiddlewareInput] | None = None,
            _strict_response_validation: bool = False,
            _token_cache: TokenCache | NotGiven | None = not_given,
            budget: Budget | None = None, cap_output: bool = False, allow_unpriced: bool = False,
            store_prompts: bool = False, prices: PriceTable | None = None,
            cache_order: bool | CacheOrder = False,
        ) -> None: ...

        def copy(
            self, *,
            api_key: str | None = None,
            auth_token: str | None = None,
            credentials: AccessTokenProvider | NotGiven | None = not_given,
            config: Mapping[str, Any] | None = None,
            profile: str | None = None,
            webhook_key: str | None = None,
            base_url: str | httpx2.URL | None = None,
            timeout: float | Timeout | NotGiven | None = not_given,
            http_client: httpx2.Client | None = None,
            max_retries: int | NotGiven = not_given,
            open_telemetry: OpenTelemetryClientOption = None,
            default_headers: Mapping[str, str] | None = None,
            set_default_headers: Mapping[str, str] | None = None,
            default_query: Mapping[str, object] | None = None,
            set_default_query: Mapping[str, object] | None = None,
            middleware: Sequence[MiddlewareInput] | NotGiven | None = not_given,
            _extra_kwargs: Mapping[str, Any] = {},
            budget: Budget | None = UNSET, cap_output: bool = UNSET,
            allow_unpriced: bool = UNSET, store_prompts: bool = UNSET,
            prices: PriceTable | None = UNSET, cache_order: bool | CacheOrder = UNSET,
        ) -> Self: ...

        with_options = copy

    _spendguard_provider = Provider.ANTHROPIC
    _spendguard_sdk_error = anthropic.AnthropicError

    @property
    def deferred(self) -> DeferredAnthropic:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.messages.create(...)`` returns a handle: call ``.result()``.
        """
        from spendguard._strategies.batch.deferred import anthropic_deferred  # noqa: PLC0415

        return anthropic_deferred(self, is_async=False)


class AsyncAnthropic(Guarded, anthropic.AsyncAnthropic):
    """``anthropic.AsyncAnthropic``, budgeted; arguments as :class:`Anthropic`."""

    if TYPE_CHECKING:  # the signatures mypy and IDEs see: the SDK's, plus spendguard's
        def __init__(
            self, *,
            api_key: str | None = None,
            auth_token: str | None = None,
            credentials: AccessTokenProvider | AsyncAccessTokenProvider | None = None,
            config: Mapping[str, Any] | None = None,
            profile: str | None = None,
            webhook_key: str | None = None,
            base_url: str | httpx2.URL | None = None,
            timeout: float | Timeout | NotGiven | None = not_given,
            max_retries: int = 2,
            default_headers: Mapping[str, str] | None = None,
            default_query: Mapping[str, object] | None = None,
            open_telemetry: OpenTelemetryClientOption = None,
            http_client: httpx2.AsyncClient | None = None,
            middleware: Sequence[MiddlewareInput] | None = None,
            _strict_response_validation: bool = False,
            _token_cache: TokenCache | NotGiven | None = not_given,
            budget: Budget | None = None, cap_output: bool = False, allow_unpriced: bool = False,
            store_prompts: bool = False, prices: PriceTable | None = None,
            cache_order: bool | CacheOrder = False,
        ) -> None: ...

        def copy(
            self, *,
            api_key: str | None = None,
            auth_token: str | None = None,
            credentials: (AccessTokenProvider | AsyncAccessTokenProvider | NotGiven
                          | None) = not_given,
            config: Mapping[str, Any] | None = None,
            profile: str | None = None,
            webhook_key: str | None = None,
            base_url: str | httpx2.URL | None = None,
            timeout: float | Timeout | NotGiven | None = not_given,
            http_client: httpx2.AsyncClient | None = None,
            max_retries: int | NotGiven = not_given,
            open_telemetry: OpenTelemetryClientOption = None,
            default_headers: Mapping[str, str] | None = None,
            set_default_headers: Mapping[str, str] | None = None,
            default_query: Mapping[str, object] | None = None,
            set_default_query: Mapping[str, object] | None = None,
            middleware: Sequence[MiddlewareInput] | NotGiven | None = not_given,
            _extra_kwargs: Mapping[str, Any] = {},
            budget: Budget | None = UNSET, cap_output: bool = UNSET,
            allow_unpriced: bool = UNSET, store_prompts: bool = UNSET,
            prices: PriceTable | None = UNSET, cache_order: bool | CacheOrder = UNSET,
        ) -> Self: ...

        with_options = copy

    _spendguard_provider = Provider.ANTHROPIC
    _spendguard_sdk_error = anthropic.AnthropicError

    @property
    def deferred(self) -> DeferredAnthropic:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.messages.create(...)`` returns a handle: await it.
        """
        from spendguard._strategies.batch.deferred import anthropic_deferred  # noqa: PLC0415

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
