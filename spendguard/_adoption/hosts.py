"""Which provider a request is addressed to, from its URL alone: what ``install()`` guards.

Under :func:`spendguard.install`, requests no guarded SDK client built (a framework's own
HTTP code, a client built before ``install()``) are guarded by where they go, for each provider
whose adapter has ``traffic_guard`` set:

- the hosts its adapter recognises (``traffic_kind``): ``api.openai.com`` and Azure OpenAI
  resources (OpenAI requests naming deployments), ``api.anthropic.com``, Amazon Bedrock
  runtime and Vertex AI's Anthropic publisher (Anthropic requests whose model is in the path);
- a compatible host of the price table (``[hosts.*]`` with its ``base_url``), which speaks the
  default wire (OpenAI's);
- every base URL the user declares (``install(base_urls={...})``, marked with a kind: a
  provider's name or a platform's), and the SDKs' own base-URL variables
  (``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``: the adapters' ``base_url_env``) when set.

Everything else passes untouched. Pure: the environment is read by the caller.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint, Provider
from spendguard._costing.prices import PriceTable
from spendguard._providers.adapter import (
    ProviderAdapter,
    adapter_kinds,
    adapters,
    default_wire_adapter,
)

__all__ = ["Destination", "ProviderHosts", "declared_base_urls"]


@dataclass(frozen=True, slots=True)
class Destination:
    """The API a request speaks, and the platform (``"azure"``) when it names deployments."""

    provider: Provider
    platform: str | None = None


@functools.cache  # read for every untagged request
def _guarded() -> tuple[tuple[ProviderAdapter, ...], dict[str, Destination]]:
    """The adapters whose traffic install() guards, and the destination each of their kinds
    names."""
    guarded = tuple(adapter for adapter in adapters() if adapter.traffic_guard)
    kinds = {kind: Destination(Provider(adapter.name), platform)
             for kind, (adapter, platform) in adapter_kinds().items() if adapter in guarded}
    return guarded, kinds


@dataclass(frozen=True, slots=True)
class ProviderHosts:
    """The URLs whose requests ``install()`` guards: the known hosts plus declared base URLs."""

    declared: tuple[tuple[str, Destination], ...] = ()
    """(base URL without a trailing slash, destination), longest first."""

    @classmethod
    def declare(cls, base_urls: Mapping[str, str] | None) -> ProviderHosts:
        """``base_urls`` maps a base URL to a kind of a guarded provider: ``"openai"``,
        ``"anthropic"`` or ``"azure"``."""
        if base_urls is None:
            return cls()
        if not isinstance(base_urls, Mapping):
            raise ConfigError('base_urls: expected a mapping of base URL to provider, e.g. '
                              'base_urls={"http://localhost:8000/v1": "openai"}')
        declared = []
        for url, name in base_urls.items():
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ConfigError(f"base_urls: {url!r} is not an http(s) URL; give the base "
                                  "URL the client is built with, e.g. http://localhost:8000/v1")
            kinds = _guarded()[1]
            if name not in kinds:
                raise ConfigError(f"base_urls[{url!r}]: {name!r} is not one of "
                                  f"{', '.join(sorted(kinds))}")
            declared.append((url.rstrip("/"), kinds[name]))
        declared.sort(key=lambda item: -len(item[0]))
        return cls(tuple(declared))

    def destination(self, url: str, host: str, path: str,
                    table: PriceTable) -> Destination | None:
        """Where a request to ``url`` (``host`` in lower case, ``path``) goes; None: not a
        provider spendguard knows, so the request passes untouched."""
        declared = [destination for base_url, destination in self.declared
                    if url == base_url or url.startswith(base_url + "/")]
        if len(declared) > 1:
            # Nested base URLs (one server answering both APIs, e.g. ``…`` for Anthropic and
            # ``…/v1`` for OpenAI): the API whose endpoint the path names.
            spoken = [d for d in declared if Endpoint.from_path(d.provider, path) is not None]
            declared = spoken or declared
        if declared:
            return declared[0]
        guarded, kinds = _guarded()
        for adapter in guarded:
            kind = adapter.traffic_kind(host, path)
            if kind is not None:
                return kinds[kind] if kind else None  # "": its host, an API it does not price
        if table.host_for(url) is not None:
            # A compatible host it has prices for: it speaks the default wire.
            return Destination(Provider(default_wire_adapter().name))
        return None


def declared_base_urls(environ: Mapping[str, str],
                       base_urls: Mapping[str, str]) -> dict[str, str]:
    """``base_urls`` plus the SDKs' base-URL variables set in ``environ`` (the SDKs, and the
    frameworks that read them, send there); an explicit entry wins."""
    found = {environ[adapter.base_url_env]: adapter.name for adapter in _guarded()[0]
             if environ.get(adapter.base_url_env, "").startswith(("http://", "https://"))}
    found.update(base_urls)
    return found
