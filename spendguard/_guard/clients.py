"""Guarding a client: one guard per SDK client, carried by the requests it builds.

The drop-in classes live in :mod:`spendguard._dropin.openai` and
:mod:`spendguard._dropin.anthropic`, so building an OpenAI client never imports the anthropic
SDK (each takes a second or more to import) and vice versa.

The budget belongs to the SDK client, never to its httpx client (which other SDK clients may
share, as LangChain does): the client tags each request it builds in the SDK's own
per-request hook (``_prepare_request``), and the dispatcher put on the httpx client's
transport (:func:`spendguard._guard.transport.install`) budgets the request by that tag.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

import httpx2

from spendguard._budget.budget import Budget
from spendguard._caching.order import CacheOrder, as_cache_order
from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Provider
from spendguard._costing.prices import PriceTable
from spendguard._costing.routing import AZURE
from spendguard._guard.metering import Guard, GuardOptions
from spendguard._guard.transport import ClientGuard, install, tag_request

__all__ = ["UNSET", "Guarded", "guard_client", "is_http_client", "wrap"]


class _Unset:
    """The default of an option not given (a copy keeps its parent's)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()

OPTION_NAMES = ("budget", "cap_output", "allow_unpriced", "store_prompts", "prices",
                "cache_order")
"""spendguard's keyword options, the same on the constructors, ``copy()`` and ``wrap()``."""


class Guarded:
    """The arguments spendguard adds to the official constructors (a mixin of the drop-in
    clients, placed before the SDK class).

    ``budget``: the :class:`~spendguard.Budget` every call is charged to; ``cap_output``:
    shrink the output cap to fit what is left instead of refusing; ``allow_unpriced``: send
    requests to endpoints spendguard has no price for (image generation, audio transcription,
    a raw batch upload, ...) without counting them, instead of refusing them. It does not let
    through a call to a priced endpoint whose model, or whose audio or other token kind, has
    no price: those are refused either way (add a price); ``store_prompts``: keep request text
    in the ledger (a hash otherwise); ``prices``: a custom price table; ``cache_order``: True
    or a :class:`~spendguard.CacheOrder`, to order each request for the prompt cache.

    ``copy()`` / ``with_options()`` take the same options; one not given is kept from the
    client copied (its budget included).
    """

    _spendguard_provider: ClassVar[Provider]
    _spendguard_sdk_error: ClassVar[type[Exception]]
    _spendguard_tag: ClientGuard
    _spendguard_options: dict[str, Any]
    _spendguard_platform: str | None = None  # "azure": requests name deployments

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # inspect.signature (IDEs' runtime help, the SDKs' own signature tests) shows the
        # SDK's parameters followed by spendguard's, however the SDK's change.
        sdk_class = next(base for base in cls.__mro__[1:] if not issubclass(base, Guarded))
        if sdk_class is object:
            return
        for name in ("__init__", "copy"):
            ours = Guarded.__dict__[name]
            inherited = getattr(cls, name)
            # Only where spendguard's own would be used: a subclass's method is kept, and so
            # is one it inherits from a class between it and Guarded.
            if (inherited is ours or getattr(inherited, "_spendguard_signed", False)) \
                    and hasattr(sdk_class, name):
                setattr(cls, name, _signed(ours, getattr(sdk_class, name)))
        if "with_options" not in cls.__dict__:
            target: Any = cls
            target.with_options = target.copy

    def __init__(self, *args: Any, budget: Budget | None = UNSET, cap_output: bool = False,
                 allow_unpriced: bool = False, store_prompts: bool = False,
                 prices: PriceTable | None = None, cache_order: bool | CacheOrder = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # the SDK class that follows in the MRO
        guard_client(self, self._spendguard_provider, self._spendguard_sdk_error, budget,
                     cap_output=cap_output, allow_unpriced=allow_unpriced,
                     store_prompts=store_prompts, prices=prices, cache_order=cache_order,
                     platform=self._spendguard_platform)

    def _prepare_request(self, request: httpx2.Request) -> Any:
        """The SDK's per-attempt request hook: tag the request with this client's guard."""
        tag_request(request, self._spendguard_tag)
        # The http client may have been replaced since (pydantic-ai does, on a new event
        # loop): the one about to send gets the dispatcher too.
        install(cast(Any, self)._client)
        # The async SDKs' hook is a coroutine function: its coroutine is returned, awaited by
        # the SDK as usual.
        return cast(Any, super())._prepare_request(request)

    if not TYPE_CHECKING:
        # Typed per class in the drop-in modules (the SDK's copy() signature plus these
        # options); here only at run time, so those declarations need not match *args.
        def copy(self, *args: Any, budget: Budget | None = UNSET, cap_output: bool = UNSET,
                 allow_unpriced: bool = UNSET, store_prompts: bool = UNSET,
                 prices: PriceTable | None = UNSET, cache_order: bool | CacheOrder = UNSET,
                 **kwargs: Any) -> Any:
            """The SDK's ``copy()`` / ``with_options()``, plus spendguard's options: each one not
            given is kept from this client (the budget included)."""
            options = _merged_options(self._spendguard_options, budget=budget,
                                      cap_output=cap_output, allow_unpriced=allow_unpriced,
                                      store_prompts=store_prompts, prices=prices,
                                      cache_order=cache_order)
            # The SDKs' copy() passes _extra_kwargs on to the constructor of the copy.
            extra = dict(kwargs.pop("_extra_kwargs", None) or {})
            return cast(Any, super()).copy(*args, _extra_kwargs={**extra, **options}, **kwargs)

        with_options = copy


def _signed(ours: Callable[..., Any], sdk: Callable[..., Any]) -> Callable[..., Any]:
    """``ours`` (taking ``*args, **kwargs`` on to the SDK) with the SDK's signature plus
    spendguard's options, as ``inspect.signature`` reports it."""
    def method(*args: Any, **kwargs: Any) -> Any:
        return ours(*args, **kwargs)

    sdk_signature = inspect.signature(sdk)
    ours_signature = inspect.signature(ours)
    sdk_params = [p for p in sdk_signature.parameters.values()
                  if p.kind is not inspect.Parameter.VAR_KEYWORD]
    rest = [p for p in sdk_signature.parameters.values()
            if p.kind is inspect.Parameter.VAR_KEYWORD]
    added = [ours_signature.parameters[name] for name in OPTION_NAMES]
    method.__signature__ = sdk_signature.replace(  # type: ignore[attr-defined]
        parameters=[*sdk_params, *added, *rest])
    method.__name__ = ours.__name__
    method.__qualname__ = ours.__qualname__
    method.__doc__ = ours.__doc__ or sdk.__doc__
    method._spendguard_signed = True  # type: ignore[attr-defined]
    return method


def _merged_options(parent: dict[str, Any], **given: Any) -> dict[str, Any]:
    return {name: parent[name] if given[name] is UNSET else given[name] for name in OPTION_NAMES}


def guard_client(client: Any, provider: Provider, sdk_error: type[Exception], budget: Any, *,
                 cap_output: bool, allow_unpriced: bool, store_prompts: bool,
                 prices: PriceTable | None, cache_order: bool | CacheOrder = False,
                 platform: str | None = None) -> None:
    """Give ``client`` its own guard and put the dispatcher on its httpx2 client.

    ``platform`` is ``"azure"`` (or its price-from-response variant) for Azure OpenAI clients,
    whose requests name deployments; copies keep it."""
    http_client = client._client
    if not is_http_client(http_client):
        raise ConfigError(
            f"http_client: spendguard guards httpx2 and httpx clients; got "
            f"{type(http_client).__module__}.{type(http_client).__name__}. Pass "
            "httpx2.Client(...) (or the SDK's DefaultHttpxClient)."
        )
    if budget is UNSET and isinstance(getattr(client, "_spendguard_tag", None), ClientGuard):
        return  # guarded while it was built (spendguard.install()): keep that guard
    if budget is UNSET:
        budget = None
    if budget is not None and not isinstance(budget, Budget):
        raise ConfigError(
            f"budget: expected a spendguard.Budget, got {type(budget).__name__}; "
            "write budget=spendguard.Budget(\"10.00\")"
        )
    options = GuardOptions(cap_output=cap_output, allow_unpriced=allow_unpriced,
                           store_prompts=store_prompts, prices=prices,
                           cache_order=as_cache_order(cache_order), platform=platform)
    client._spendguard_tag = ClientGuard(Guard(provider, budget, options), sdk_error)
    client._spendguard_options = {
        "budget": budget, "cap_output": cap_output, "allow_unpriced": allow_unpriced,
        "store_prompts": store_prompts, "prices": prices, "cache_order": cache_order,
    }
    install(http_client)
    if not isinstance(client, Guarded):
        _hook_instance(client, provider, sdk_error)


def _hook_instance(client: Any, provider: Provider, sdk_error: type[Exception]) -> None:
    """Tag the requests of a client spendguard did not build (``wrap``), and guard its copies.

    Set on the instance only: other instances of the SDK class — even ones sharing its httpx
    client — are untouched.
    """
    if "_prepare_request" in vars(client):
        return  # hooked by an earlier wrap(); the hooks read the current tag
    owner = weakref.ref(client)  # no cycle: the hooks must not keep the client alive
    sdk_prepare = type(client)._prepare_request
    sdk_copy = type(client).copy

    def prepare_request(request: httpx2.Request) -> Any:
        this: Any = owner()  # alive: the hook is called through it
        tag_request(request, this._spendguard_tag)
        install(this._client)  # replaced since it was wrapped: guard the new one too
        return sdk_prepare(this, request)

    def copy(*args: Any, budget: Budget | None = UNSET, cap_output: bool = UNSET,
             allow_unpriced: bool = UNSET, store_prompts: bool = UNSET,
             prices: PriceTable | None = UNSET, cache_order: bool | CacheOrder = UNSET,
             **kwargs: Any) -> Any:
        this: Any = owner()  # alive: the hook is called through it
        options = _merged_options(this._spendguard_options, budget=budget,
                                  cap_output=cap_output, allow_unpriced=allow_unpriced,
                                  store_prompts=store_prompts, prices=prices,
                                  cache_order=cache_order)
        copied = sdk_copy(this, *args, **kwargs)
        guard_client(copied, provider, sdk_error, **options,
                     platform=this._spendguard_tag.guard.options.platform)
        return copied

    client._prepare_request = prepare_request
    client.copy = client.with_options = copy


def wrap(client: Any, budget: Budget | None = None, *, cap_output: bool = False,
         allow_unpriced: bool = False, store_prompts: bool = False,
         prices: PriceTable | None = None, cache_order: bool | CacheOrder = False) -> Any:
    """Guard a client you already built (``openai``, ``anthropic`` or ``google.genai``, sync
    or async).

    The same object is returned, now charging its calls (and those of its copies) to
    ``budget``. Other clients sharing its ``http_client`` keep their own budgets, or none.
    """
    from spendguard._guard.gemini import guard_genai_client, is_genai_client  # noqa: PLC0415

    if is_genai_client(client):  # spendguard.Gemini included: wrap() gives it another budget
        guard_genai_client(client, budget, cap_output=cap_output,
                           allow_unpriced=allow_unpriced, store_prompts=store_prompts,
                           prices=prices, cache_order=cache_order)
        return client
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
            f"client: spendguard.wrap() takes an openai, anthropic or google.genai client, got "
            f"{type(client).__name__}"
        )
    guard_client(client, provider, sdk_error, budget, cap_output=cap_output,
                 allow_unpriced=allow_unpriced, store_prompts=store_prompts, prices=prices,
                 cache_order=cache_order, platform=platform)
    return client


def is_http_client(value: object) -> bool:
    """Whether ``value`` is an ``httpx2`` client or a classic ``httpx`` one, sync or async."""
    if isinstance(value, (httpx2.Client, httpx2.AsyncClient)):
        return True
    import sys  # noqa: PLC0415

    legacy = sys.modules.get("httpx")  # never imported here: an httpx client means it was
    return legacy is not None and isinstance(value, (legacy.Client, legacy.AsyncClient))


def _is_instance(client: Any, package: str, names: tuple[str, ...]) -> bool:
    import sys  # noqa: PLC0415

    module = sys.modules.get(package)
    return module is not None and isinstance(client, tuple(getattr(module, n) for n in names))
