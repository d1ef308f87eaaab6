"""Drop-in guarded OpenAI clients: the official classes with ``budget=`` added."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import openai

from spendguard._costing.calls import Provider
from spendguard._costing.prices import PriceTable
from spendguard._costing.routing import AZURE
from spendguard._guard.azure import AzureDeployment, azure_platform, azure_prices
from spendguard._guard.clients import UNSET, Guarded

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from typing import Any, Self

    import httpx2
    from openai import NotGiven, Timeout, not_given
    from openai._client import DataResidency, WorkloadIdentity, X509WorkloadIdentity, _Provider

    from spendguard._budget.budget import Budget
    from spendguard._caching.order import CacheOrder
    from spendguard._costing.prices import PriceTable
    from spendguard._strategies.batch.deferred import DeferredOpenAI

__all__ = ["AsyncAzureOpenAI", "AsyncOpenAI", "AzureDeployment", "AzureOpenAI", "OpenAI"]


class OpenAI(Guarded, openai.OpenAI):
    """``openai.OpenAI`` whose every request is budgeted before it is sent.

    Takes the official constructor's arguments plus spendguard's (see
    :class:`~spendguard._guard.clients.Guarded`): ``budget``, ``cap_output``, ``allow_unpriced``,
    ``store_prompts``, ``prices``, ``cache_order``.
    """

    if TYPE_CHECKING:  # the signatures mypy and IDEs see: the SDK's, plus spendguard's
        def __init__(
            self, *,
            api_key: str | Callable[[], str] | None = None,
            admin_api_key: str | None = None,
            workload_identity: WorkloadIdentity | X509WorkloadIdentity | None = None,
            organization: str | None = None,
            project: str | None = None,
            webhook_secret: str | None = None,
            provider: _Provider | None = None,
            base_url: str | httpx2.URL | NotGiven | None = not_given,
            data_residency: DataResidency | None = None,
            websocket_base_url: str | httpx2.URL | None = None,
            timeout: float | Timeout | NotGiven | None = not_given,
            max_retries: int = 2,
            default_headers: Mapping[str, str] | None = None,
            default_query: Mapping[str, object] | None = None,
            http_client: httpx2.Client | None = None,
            _strict_response_validation: bool = False,
            _enforce_credentials: bool = True,
            budget: Budget | None = None, cap_output: bool = False, allow_unpriced: bool = False,
            store_prompts: bool = False, prices: PriceTable | None = None,
            cache_order: bool | CacheOrder = False,
        ) -> None: ...

        def copy(
            self, *,
            api_key: str | Callable[[], str] | None = None,
            admin_api_key: str | None = None,
            workload_identity: WorkloadIdentity | X509WorkloadIdentity | None = None,
            provider: _Provider | NotGiven | None = not_given,
            organization: str | None = None,
            project: str | None = None,
            webhook_secret: str | None = None,
            websocket_base_url: str | httpx2.URL | None = None,
            base_url: str | httpx2.URL | NotGiven | None = not_given,
            data_residency: DataResidency | None = None,
            timeout: float | Timeout | NotGiven | None = not_given,
            http_client: httpx2.Client | None = None,
            max_retries: int | NotGiven = not_given,
            default_headers: Mapping[str, str] | None = None,
            set_default_headers: Mapping[str, str] | None = None,
            default_query: Mapping[str, object] | None = None,
            set_default_query: Mapping[str, object] | None = None,
            _enforce_credentials: bool | None = None,
            _extra_kwargs: Mapping[str, Any] = {},
            budget: Budget | None = UNSET, cap_output: bool = UNSET,
            allow_unpriced: bool = UNSET, store_prompts: bool = UNSET,
            prices: PriceTable | None = UNSET, cache_order: bool | CacheOrder = UNSET,
        ) -> Self: ...

        with_options = copy

    _spendguard_provider = Provider.OPENAI
    _spendguard_sdk_error = openai.OpenAIError

    @property
    def deferred(self) -> DeferredOpenAI:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.chat.completions.create(...)`` returns a handle: call ``.result()``.
        """
        from spendguard._strategies.batch.deferred import openai_deferred  # noqa: PLC0415

        return openai_deferred(self, is_async=False)


class AsyncOpenAI(Guarded, openai.AsyncOpenAI):
    """``openai.AsyncOpenAI`` whose every request is budgeted; arguments as :class:`OpenAI`."""

    if TYPE_CHECKING:  # the signatures mypy and IDEs see: the SDK's, plus spendguard's
        def __init__(
            self, *,
            api_key: str | Callable[[], Awaitable[str]] | None = None,
            admin_api_key: str | None = None,
            workload_identity: WorkloadIdentity | X509WorkloadIdentity | None = None,
            organization: str | None = None,
            project: str | None = None,
            webhook_secret: str | None = None,
            provider: _Provider | None = None,
            base_url: str | httpx2.URL | NotGiven | None = not_given,
            data_residency: DataResidency | None = None,
            websocket_base_url: str | httpx2.URL | None = None,
            timeout: float | Timeout | NotGiven | None = not_given,
            max_retries: int = 2,
            default_headers: Mapping[str, str] | None = None,
            default_query: Mapping[str, object] | None = None,
            http_client: httpx2.AsyncClient | None = None,
            _strict_response_validation: bool = False,
            _enforce_credentials: bool = True,
            budget: Budget | None = None, cap_output: bool = False, allow_unpriced: bool = False,
            store_prompts: bool = False, prices: PriceTable | None = None,
            cache_order: bool | CacheOrder = False,
        ) -> None: ...

        def copy(
            self, *,
            api_key: str | Callable[[], Awaitable[str]] | None = None,
            admin_api_key: str | None = None,
            workload_identity: WorkloadIdentity | X509WorkloadIdentity | None = None,
            provider: _Provider | NotGiven | None = not_given,
            organization: str | None = None,
            project: str | None = None,
            webhook_secret: str | None = None,
            websocket_base_url: str | httpx2.URL | None = None,
            base_url: str | httpx2.URL | NotGiven | None = not_given,
            data_residency: DataResidency | None = None,
            timeout: float | Timeout | NotGiven | None = not_given,
            http_client: httpx2.AsyncClient | None = None,
            max_retries: int | NotGiven = not_given,
            default_headers: Mapping[str, str] | None = None,
            set_default_headers: Mapping[str, str] | None = None,
            default_query: Mapping[str, object] | None = None,
            set_default_query: Mapping[str, object] | None = None,
            _enforce_credentials: bool | None = None,
            _extra_kwargs: Mapping[str, Any] = {},
            budget: Budget | None = UNSET, cap_output: bool = UNSET,
            allow_unpriced: bool = UNSET, store_prompts: bool = UNSET,
            prices: PriceTable | None = UNSET, cache_order: bool | CacheOrder = UNSET,
        ) -> Self: ...

        with_options = copy

    _spendguard_provider = Provider.OPENAI
    _spendguard_sdk_error = openai.OpenAIError

    @property
    def deferred(self) -> DeferredOpenAI:
        """Requests that may wait for the batch API, at its discount.

        ``client.deferred.chat.completions.create(...)`` returns a handle: await it.
        """
        from spendguard._strategies.batch.deferred import openai_deferred  # noqa: PLC0415

        return openai_deferred(self, is_async=True)


class AzureOpenAI(Guarded, openai.AzureOpenAI):
    """``openai.AzureOpenAI``, budgeted: each request's deployment is priced as its model.

    ``deployments`` maps deployment names to the models they run (``{"prod-4o": "gpt-4o"}``,
    or :class:`AzureDeployment` for a data-zone / regional deployment); the price file's
    ``[azure_deployments]`` section does the same. A request to an unmapped deployment is
    refused before sending, unless ``unmapped_deployments="price_from_response"``: then it is
    sent **unguarded** (nothing reserved, no limit enforced for it) and priced afterwards from
    the response's ``model`` ($0 and status ``"unpriced"`` when that is unknown too). Other
    arguments as :class:`OpenAI`.
    """

    _spendguard_provider = Provider.OPENAI
    _spendguard_sdk_error = openai.OpenAIError
    _spendguard_platform = AZURE

    def __init__(self, *args: Any,
                 deployments: Mapping[str, str | AzureDeployment] | None = None,
                 unmapped_deployments: str = "refuse", prices: PriceTable | None = None,
                 **kwargs: Any) -> None:
        self._spendguard_platform = azure_platform(unmapped_deployments)
        super().__init__(*args, prices=azure_prices(deployments, prices), **kwargs)


class AsyncAzureOpenAI(Guarded, openai.AsyncAzureOpenAI):
    """``openai.AsyncAzureOpenAI``, budgeted; arguments as :class:`AzureOpenAI`."""

    _spendguard_provider = Provider.OPENAI
    _spendguard_sdk_error = openai.OpenAIError
    _spendguard_platform = AZURE

    def __init__(self, *args: Any,
                 deployments: Mapping[str, str | AzureDeployment] | None = None,
                 unmapped_deployments: str = "refuse", prices: PriceTable | None = None,
                 **kwargs: Any) -> None:
        self._spendguard_platform = azure_platform(unmapped_deployments)
        super().__init__(*args, prices=azure_prices(deployments, prices), **kwargs)
