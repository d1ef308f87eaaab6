"""Where the gateway forwards a request: configured provider upstreams, chosen by path and headers.

Only configured upstreams are ever reached: the URL forwarded to is an upstream's base URL plus
the request's path, never a host taken from the request (no open proxy).

- ``/v1/...`` and ``/v1beta/...`` are the default route, as the official clients send them:
  each provider's adapter claims its paths (``gateway_path``: Gemini's ``/v1beta/...`` and
  ``/v1/models/<model>:<method>``, Anthropic's ``/v1/messages`` and ``/v1/complete``), then the
  headers only its client sends (``gateway_headers``: ``anthropic-version``, ``x-api-key``);
  the rest of ``/v1/...`` goes to the default wire (OpenAI), without the ``/v1`` its base URL
  holds. A client's base URL is ``http://HOST:PORT/v1`` (OpenAI) or ``http://HOST:PORT``
  (Anthropic, Gemini).
- ``/<name>/...`` reaches the upstream named ``name``, its remaining path appended to that
  upstream's base URL: a client's base URL is then ``http://HOST:PORT/<name>``.

Each provider has a default upstream (its adapter's ``api_base_url``, keyed by ``key_env``).
An upstream's base URL is what the official SDK takes as ``base_url`` (for Azure:
``azure_endpoint``); ``KIND+URL`` marks the API a host speaks, a kind being a provider's name or
one of its adapter's ``platforms``: ``anthropic+URL`` an Anthropic-protocol host, ``azure+URL``
an Azure OpenAI resource (its requests name deployments), ``gemini+URL`` a Gemini API host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Provider
from spendguard._providers.adapter import (
    ProviderAdapter,
    adapter_for,
    adapter_kinds,
    adapters,
    default_wire_adapter,
)

__all__ = ["DEFAULT_UPSTREAMS", "Router", "Upstream", "parse_upstream"]

_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_RESERVED = frozenset({"v1", "v1beta", "healthz", "spendguard"})


@dataclass(frozen=True, slots=True)
class Upstream:
    """One provider endpoint the gateway forwards to."""

    name: str
    provider: Provider
    base_url: str
    """The SDK's ``base_url`` for it, without a trailing slash."""
    platform: str | None = None
    """``"azure"`` for an Azure OpenAI resource (requests name deployments)."""
    key_env: str | None = None
    """The environment variable holding the real provider key (used with virtual keys)."""

    @property
    def auth_header(self) -> str:
        """The header the official client sends its key in."""
        return adapter_for(self.provider).key_header(self.platform)


DEFAULT_UPSTREAMS = tuple(
    Upstream(adapter.name, Provider(adapter.name), adapter.api_base_url,
             key_env=adapter.key_env(None))
    for adapter in adapters())
"""Each provider's own API, named as the provider."""


def parse_upstream(text: str) -> Upstream:
    """``NAME=URL`` or ``NAME=KIND+URL``, a kind being a provider's name or a platform's
    (``anthropic+URL``, ``azure+URL``, ``gemini+URL``): the ``--upstream`` option. Without a
    kind, a name that is one marks the API; any other speaks the default wire."""
    name, sep, url = text.partition("=")
    name = name.strip().lower()
    if not sep or not _NAME.fullmatch(name) or name in _RESERVED:
        raise ConfigError(
            f"upstream: {text!r} is not NAME=URL; write e.g. groq=https://api.groq.com/openai/v1 "
            "(NAME: lower-case letters, digits, - or _; not v1, healthz or spendguard)")
    kinds = adapter_kinds()
    kind, plus, rest = url.partition("+")
    if plus and kind in kinds:
        url = rest
    else:
        kind = name
    adapter, platform = kinds.get(kind, (default_wire_adapter(), None))
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
        raise ConfigError(f"upstream {name}: {url!r} is not an http(s) base URL; write e.g. "
                          f"{name}=https://api.example.com/v1")
    named = kinds.get(name)
    key_env = (f"SPENDGUARD_{name.upper().replace('-', '_')}_API_KEY" if named is None
               else named[0].key_env(named[1]))
    return Upstream(name, Provider(adapter.name), url.strip().rstrip("/"), platform, key_env)


class Router:
    """Picks the upstream of a request and the URL it is forwarded to."""

    def __init__(self, upstreams: Iterable[Upstream]) -> None:
        self.upstreams: dict[str, Upstream] = {u.name: u for u in DEFAULT_UPSTREAMS}
        for upstream in upstreams:
            self.upstreams[upstream.name] = upstream
        self._default_wire = default_wire_adapter()
        # Asked before the default wire, which takes what none of them claims.
        self._claimants: tuple[ProviderAdapter, ...] = tuple(
            adapter for adapter in adapters() if not adapter.default_wire)

    def route(self, path: str, headers: Mapping[str, str]) -> tuple[Upstream, str] | None:
        """The upstream and the forwarded URL's path part, or None for no upstream."""
        for adapter in self._claimants:
            forwarded = adapter.gateway_path(path)
            if forwarded is not None:
                upstream = self.upstreams[adapter.name]
                return upstream, upstream.base_url + forwarded
        forwarded = self._default_wire.gateway_path(path)
        if forwarded is not None:
            for adapter in self._claimants:
                if any(header in headers for header in adapter.gateway_headers):
                    upstream = self.upstreams[adapter.name]
                    return upstream, upstream.base_url + path
            upstream = self.upstreams[self._default_wire.name]
            return upstream, upstream.base_url + forwarded
        name, _, rest = path[1:].partition("/")
        named = self.upstreams.get(name)
        if named is None or ".." in rest.split("/"):
            return None
        return named, f"{named.base_url}/{rest}"
