"""``spendguard.install()``: guard the LLM traffic of the whole process, whoever builds the client.

For code you do not control — frameworks that build their own clients, scripts you cannot
edit. The guard follows the traffic, not the SDK class; this is the one place spendguard
touches other libraries' classes, and only their construction:

- the ``__init__`` of the SDK clients (``openai.OpenAI`` / ``AsyncOpenAI`` and their Azure
  subclasses, ``anthropic.Anthropic`` / ``AsyncAnthropic``, ``AnthropicBedrock``,
  ``AnthropicVertex`` and their async twins, ``google.genai.Client``) is wrapped so that,
  once the SDK built the client, :func:`spendguard.wrap` guards it with the installed budget
  and options (Azure clients with the installed deployment mapping);
- the ``__init__`` of every HTTP client, ``httpx2`` and classic ``httpx``, sync and async,
  puts the dispatcher on its transport. A request a guarded SDK client tagged is budgeted by
  that client's guard; an untagged one addressed to a provider spendguard knows
  (:mod:`spendguard._adoption.hosts`: LiteLLM's own Anthropic requests, a client built
  before ``install()``) by the installed budget; anything else passes untouched. A request
  is guarded once, however many layers it crosses (the dispatcher marks it).

Clients built before ``install()`` are found once, when it is called (a scan of the live
objects), and get the dispatcher too; an http client a framework swaps in later is built
while installed, and a guarded SDK client re-checks its http client on every request.

A package not imported yet is patched when it is imported (a post-import hook on
``sys.meta_path``), so ``install()`` never imports an SDK itself. ``uninstall()`` restores the
original constructors and stops guarding untagged traffic; SDK clients built while installed
stay guarded.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from spendguard._adoption.hosts import ProviderHosts, declared_base_urls
from spendguard._budget.budget import Budget
from spendguard._caching.order import CacheOrder
from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Provider
from spendguard._costing.prices import PriceTable
from spendguard._costing.routing import AZURE
from spendguard._guard.azure import azure_platform, azure_prices
from spendguard._guard.clients import Guarded, guard_client
from spendguard._guard.metering import Guard
from spendguard._guard.options import ClientOptions, check_budget
from spendguard._guard.reaches.imports import PatchOnImport
from spendguard._guard.reaches.stainless import sdk_http_client
from spendguard._guard.sdk_clients import client_half, loaded_sdk_error, sdk_of
from spendguard._guard.transport import ClientGuard, client_guard, set_traffic_guard
from spendguard._guard.transport import install as install_dispatcher
from spendguard._providers import adapters

__all__ = ["install", "installed", "uninstall"]


@functools.cache  # filled by install() before its import hook, which asks on every import
def sdk_classes() -> dict[str, tuple[str, ...]]:
    """The SDK constructors install() wraps, by module: each adapter's hooked ``sdk_clients``
    (subclasses such as ``AzureOpenAI`` call them; a ``genai.Client`` builds its ``.aio``)."""
    found: dict[str, tuple[str, ...]] = {}
    for adapter in adapters():
        for entry in adapter.sdk_clients:
            if entry.hooked:
                found[entry.module] = (*found.get(entry.module, ()), entry.name)
    return found


HTTP_CLASSES: dict[str, tuple[str, ...]] = {
    "httpx2": ("Client", "AsyncClient"),
    "httpx": ("Client", "AsyncClient"),
}
"""The HTTP client constructors install() wraps, by package."""

_ORIGINAL = "__spendguard_original_init__"


@dataclass(slots=True)
class _Settings:
    options: ClientOptions
    hosts: ProviderHosts
    azure_deployments: Mapping[str, Any] | None
    unmapped_deployments: str
    _guards: dict[tuple[Provider, str | None, str | None], ClientGuard] = field(
        default_factory=dict)

    def azure(self) -> tuple[PriceTable | None, str]:
        """The price table carrying the deployment mapping, and the Azure platform."""
        return (azure_prices(self.azure_deployments, self.options.prices),
                azure_platform(self.unmapped_deployments))

    def traffic_tag(self, request: Any) -> ClientGuard | None:
        """The guard of an untagged request: by the provider it is addressed to, else None."""
        url = request.url
        host = url.host.lower()
        path = url.path
        table = self.options.prices
        if table is None:
            from spendguard._costing.prices import default_table  # noqa: PLC0415

            table = default_table()
        destination = self.hosts.destination(
            f"{url.scheme}://{url.netloc.decode('ascii')}{path}", host, path, table)
        if destination is None:
            return None
        sdk_error = _sdk_error_of(request.headers.get("user-agent", ""))
        key = (destination.provider, destination.platform,
               None if sdk_error is None else sdk_error.__module__)
        tag = self._guards.get(key)
        if tag is None:
            prices, platform = self.options.prices, destination.platform
            if platform is not None:
                prices, platform = self.azure()
            options = replace(self.options, prices=prices).guard_options(platform)
            tag = self._guards.setdefault(key, ClientGuard(
                Guard(destination.provider, self.options.budget, options), sdk_error))
        return tag


def _sdk_error_of(user_agent: str) -> type[Exception] | None:
    """The base error of the SDK that built a request (by its User-Agent), so a refusal of
    an SDK client built before install() is neither wrapped nor retried by that SDK."""
    for adapter in adapters():
        prefix = adapter.sdk_user_agent
        if prefix and user_agent.startswith(prefix):
            return loaded_sdk_error(adapter)  # None: that SDK is not imported
    return None


_lock = threading.RLock()
_settings: _Settings | None = None
_patched: dict[type, Callable[..., None]] = {}


def install(budget: Budget | None = None, *, cap_output: bool = False,
            allow_unpriced: bool = False, store_prompts: bool = False,
            prices: PriceTable | None = None, cache_order: bool | CacheOrder = False,
            base_urls: Mapping[str, str] | None = None,
            azure_deployments: Mapping[str, Any] | None = None,
            unmapped_deployments: str = "refuse") -> None:
    """Guard every LLM request this process sends from now on, whoever built the client.

    Takes :func:`spendguard.wrap`'s options, and what the platform clients need:
    ``azure_deployments`` maps Azure deployment names to models (a model id or a
    :class:`~spendguard.AzureDeployment` for data-zone / regional deployments), with
    ``unmapped_deployments`` as on :class:`~spendguard.AzureOpenAI`; Bedrock and Vertex
    requests name their model and region in the path. ``base_urls`` declares other provider
    endpoints (a proxy, a local server): ``{"http://localhost:8000/v1": "openai"}``; the
    SDKs' ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` count as declared. Calling it again
    replaces the budget and options. Undo with :func:`uninstall`.
    """
    check_budget(budget, expected="a spendguard.Budget or None",
                 example='spendguard.install(budget=spendguard.Budget("10.00"))')
    options = ClientOptions(budget=budget, cap_output=cap_output,
                            allow_unpriced=allow_unpriced, store_prompts=store_prompts,
                            prices=prices, cache_order=cache_order)
    ProviderHosts.declare(base_urls)  # a mistake in it is reported as the caller wrote it
    hosts = ProviderHosts.declare(declared_base_urls(os.environ, base_urls or {}))
    if azure_deployments is not None and not isinstance(azure_deployments, Mapping):
        raise ConfigError('azure_deployments: expected a mapping of deployment name to model, '
                          'e.g. azure_deployments={"prod-4o": "gpt-4o"}')
    if unmapped_deployments not in ("refuse", "price_from_response"):
        raise ConfigError(f"unmapped_deployments: {unmapped_deployments!r} is not 'refuse' "
                          "(the default) or 'price_from_response'")
    global _settings  # noqa: PLW0603 - install() is process-wide by design
    with _lock:
        first = _settings is None
        _settings = _Settings(options, hosts, azure_deployments, unmapped_deployments)
        set_traffic_guard(_traffic_tag)
        for package, names in {**sdk_classes(), **HTTP_CLASSES}.items():
            module = sys.modules.get(package)
            if module is not None:
                _patch(module, names)
        if _HOOK not in sys.meta_path:
            sys.meta_path.insert(0, _HOOK)
        if first:
            _guard_existing_http_clients()


def uninstall() -> None:
    """Stop guarding: the constructors are the originals again, untagged requests pass.

    SDK clients built while installed keep their guard. Does nothing when not installed.
    """
    global _settings  # noqa: PLW0603
    with _lock:
        _settings = None
        set_traffic_guard(None)
        if _HOOK in sys.meta_path:
            sys.meta_path.remove(_HOOK)
        for cls, original in _patched.items():
            type.__setattr__(cls, "__init__", original)
        _patched.clear()


def installed() -> bool:
    """Whether :func:`install` is active."""
    return _settings is not None


def _traffic_tag(request: Any) -> ClientGuard | None:
    settings = _settings
    return None if settings is None else settings.traffic_tag(request)


def _guard_existing_http_clients() -> None:
    """Give the dispatcher to the HTTP clients built before install() (found once, now)."""
    kinds: set[type] = set()
    pending = [cls for cls in _patched if cls.__module__.startswith("httpx")]
    while pending:  # the classes and their subclasses (the SDKs' client wrappers)
        cls = pending.pop()
        if cls not in kinds:
            kinds.add(cls)
            pending.extend(cls.__subclasses__())
    # A type look-up per object: the scan stays a few milliseconds in a large process.
    for candidate in gc.get_objects():
        if type(candidate) in kinds and not getattr(candidate, "is_closed", True):
            install_dispatcher(candidate)


def _patch(module: ModuleType, names: Sequence[str]) -> None:
    guarding = _dispatching if module.__name__ in HTTP_CLASSES else _guarding
    for name in names:
        cls = getattr(module, name, None)
        if not isinstance(cls, type) or cls in _patched:
            continue
        original = cls.__dict__.get("__init__")
        if original is None:  # a class that no longer defines it: nothing to wrap
            continue
        _patched[cls] = original
        type.__setattr__(cls, "__init__", guarding(original))


def _guarding(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        settings = _settings
        if settings is None or isinstance(self, Guarded) or _is_guarded(self) \
                or (sdk_http_client(self) is None and client_half(self) is None):
            return  # not installed, already guarded, or a subclass still building
        _guard_sdk_client(self, settings)

    setattr(__init__, _ORIGINAL, original)
    return __init__


def _guard_sdk_client(client: Any, settings: _Settings) -> None:
    sdk = sdk_of(client)  # never imports an SDK: an Anthropic client leaves openai alone
    if sdk is not None and sdk.platform == AZURE:  # the installed deployment mapping
        prices, platform = settings.azure()
        guard_client(client, sdk.provider, sdk.sdk_error,
                     replace(settings.options, prices=prices).as_dict(), platform=platform)
        return
    from spendguard._guard.clients import wrap  # noqa: PLC0415

    wrap(client, **settings.options.as_dict())


def _dispatching(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if _settings is not None:
            install_dispatcher(self)

    setattr(__init__, _ORIGINAL, original)
    return __init__


def _is_guarded(client: Any) -> bool:
    return client_guard(client) is not None  # a budget belongs to the SDK client


def _patched_classes(package: str) -> tuple[str, ...] | None:
    return sdk_classes().get(package) or HTTP_CLASSES.get(package)


def _patch_imported(module: ModuleType) -> None:
    """Patch a package the program just imported (while installed)."""
    names = _patched_classes(module.__name__)
    with _lock:
        if _settings is not None and names is not None:
            _patch(module, names)


_HOOK = PatchOnImport(lambda name: _patched_classes(name) is not None, _patch_imported)
"""Patches each package of :func:`sdk_classes` and :data:`HTTP_CLASSES` when it is imported."""
