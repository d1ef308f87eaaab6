"""Which official SDK a client object comes from, asked of the provider adapters.

Each adapter names its SDK's client classes and base error
(:attr:`~spendguard._providers.adapter.ProviderAdapter.sdk_clients`, ``sdk_error``);
they are looked up in ``sys.modules`` only, so asking never imports an SDK (the classes of an
SDK the program has not imported cannot be the client's).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from spendguard._costing.endpoints import Provider
from spendguard._providers import adapters

if TYPE_CHECKING:  # pragma: no cover
    from spendguard._providers.adapter import ProviderAdapter
    from spendguard._providers.sdk import SdkClient

__all__ = ["SdkOfClient", "client_half", "loaded_class", "loaded_sdk_error", "sdk_of"]


@dataclass(frozen=True, slots=True)
class SdkOfClient:
    """The provider whose SDK built a client, that SDK's base error, and the guard's
    platform for the client (``"azure"``; None for most)."""

    provider: Provider
    sdk_error: type[Exception]
    platform: str | None


def loaded_class(entry: SdkClient) -> type | None:
    """The class ``entry`` names, when its SDK is imported already; else None."""
    module = sys.modules.get(entry.module)
    found = None if module is None else getattr(module, entry.name, None)
    return found if isinstance(found, type) else None


def loaded_sdk_error(adapter: ProviderAdapter) -> type[Exception] | None:
    """The base error class of the adapter's SDK, when it has one and it is imported."""
    module_name, _, name = adapter.sdk_error.rpartition(".")
    module = sys.modules.get(module_name) if module_name else None
    error = None if module is None else getattr(module, name, None)
    return error if isinstance(error, type) and issubclass(error, Exception) else None


def sdk_of(client: object) -> SdkOfClient | None:
    """The SDK ``client`` is a client of: its class comes from an adapter's SDK package, or
    derives from one of the SDK's own-API client classes. None for anything else, and for an
    SDK with no base error (google-genai), whose clients its own client half attaches to."""
    module = type(client).__module__
    for adapter in adapters():
        if not adapter.sdk_error:
            continue
        package = adapter.sdk_package
        if not (module == package or module.startswith(package + ".")
                or any(entry.own_api and _is_instance(client, entry)
                       for entry in adapter.sdk_clients)):
            continue
        sdk_error = loaded_sdk_error(adapter)
        if sdk_error is None:  # pragma: no cover - a client of an SDK not imported
            continue
        platform = next((entry.platform for entry in adapter.sdk_clients
                         if entry.platform is not None and _is_instance(client, entry)), None)
        return SdkOfClient(Provider(adapter.name), sdk_error, platform)
    return None


def _is_instance(client: object, entry: SdkClient) -> bool:
    cls = loaded_class(entry)
    return cls is not None and isinstance(client, cls)


def client_half(client: object) -> ModuleType | None:
    """The client half of the provider whose SDK built ``client``, when that SDK is one the
    choke point does not attach to by itself (not Stainless-generated: google-genai): the
    module ``_providers/<name>/guard.py``, found by the provider's name, whose
    ``is_client(client)`` says the client is its SDK's and ``attach(client, options)`` guards
    it. None for any other client."""
    for adapter in adapters():
        half: ModuleType | None = _client_half_of(adapter.name)
        if half is not None and half.is_client(client):
            return half
    return None


@functools.cache
def _client_half_of(provider: str) -> Any:
    name = f"spendguard._providers.{provider}.guard"
    return importlib.import_module(name) if importlib.util.find_spec(name) else None
