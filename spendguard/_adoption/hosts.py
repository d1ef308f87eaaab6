"""Which provider a request is addressed to, from its URL alone: what ``install()`` guards.

Under :func:`spendguard.install`, requests no guarded SDK client built (a framework's own
HTTP code, a client built before ``install()``) are guarded by where they go:

- ``api.openai.com`` (OpenAI) and ``api.anthropic.com`` (Anthropic);
- Azure OpenAI resources (``*.openai.azure.com``, ``*.cognitiveservices.azure.com``,
  ``*.services.ai.azure.com``): OpenAI requests naming deployments;
- Amazon Bedrock runtime (``bedrock-runtime[-fips].<region>.amazonaws.com``) and Vertex AI's
  Anthropic publisher (``[<region>-]aiplatform.googleapis.com/.../publishers/anthropic/...``):
  Anthropic requests whose model is in the path;
- an OpenAI-compatible host of the price table (``[hosts.*]`` with its ``base_url``);
- every base URL the user declares (``install(base_urls={...})``), and the SDKs' own
  ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` when set.

Everything else passes untouched. Pure: the environment is read by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint, Provider
from spendguard._costing.prices import PriceTable
from spendguard._costing.routing import AZURE

__all__ = ["Destination", "ProviderHosts", "declared_base_urls"]

_EXACT = {"api.openai.com": Provider.OPENAI, "api.anthropic.com": Provider.ANTHROPIC}
_AZURE_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com",
                   ".services.ai.azure.com")
_BEDROCK = re.compile(r"bedrock-runtime(-fips)?\.[a-z0-9-]+\.amazonaws\.com")
_VERTEX = re.compile(r"([a-z0-9-]+-)?aiplatform\.googleapis\.com")
_PROVIDER_NAMES = {"openai": (Provider.OPENAI, None), "anthropic": (Provider.ANTHROPIC, None),
                   "azure": (Provider.OPENAI, AZURE)}
_ENV_BASE_URLS = (("OPENAI_BASE_URL", "openai"), ("ANTHROPIC_BASE_URL", "anthropic"))


@dataclass(frozen=True, slots=True)
class Destination:
    """The API a request speaks, and the platform (``"azure"``) when it names deployments."""

    provider: Provider
    platform: str | None = None


@dataclass(frozen=True, slots=True)
class ProviderHosts:
    """The URLs whose requests ``install()`` guards: the known hosts plus declared base URLs."""

    declared: tuple[tuple[str, Destination], ...] = ()
    """(base URL without a trailing slash, destination), longest first."""

    @classmethod
    def declare(cls, base_urls: Mapping[str, str] | None) -> ProviderHosts:
        """``base_urls`` maps a base URL to ``"openai"``, ``"anthropic"`` or ``"azure"``."""
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
            if name not in _PROVIDER_NAMES:
                raise ConfigError(f"base_urls[{url!r}]: {name!r} is not one of "
                                  f"{', '.join(sorted(_PROVIDER_NAMES))}")
            provider, platform = _PROVIDER_NAMES[name]
            declared.append((url.rstrip("/"), Destination(provider, platform)))
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
        exact = _EXACT.get(host)
        if exact is not None:
            return Destination(exact)
        if host.endswith(_AZURE_SUFFIXES):
            return Destination(Provider.OPENAI, AZURE)
        if _BEDROCK.fullmatch(host):
            return Destination(Provider.ANTHROPIC)
        if _VERTEX.fullmatch(host):
            # Vertex serves many publishers; spendguard prices Anthropic's only.
            return Destination(Provider.ANTHROPIC) if "/publishers/anthropic/" in path else None
        if table.host_for(url) is not None:
            return Destination(Provider.OPENAI)  # an OpenAI-compatible host it has prices for
        return None


def declared_base_urls(environ: Mapping[str, str],
                       base_urls: Mapping[str, str]) -> dict[str, str]:
    """``base_urls`` plus the SDKs' base-URL variables set in ``environ`` (the SDKs, and the
    frameworks that read them, send there); an explicit entry wins."""
    found = {environ[name]: provider for name, provider in _ENV_BASE_URLS
             if environ.get(name, "").startswith(("http://", "https://"))}
    found.update(base_urls)
    return found
