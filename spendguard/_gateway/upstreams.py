"""Where the gateway forwards a request: configured provider upstreams, chosen by path and headers.

Only configured upstreams are ever reached: the URL forwarded to is an upstream's base URL plus
the request's path, never a host taken from the request (no open proxy).

- ``/v1/...`` is the default route, as the official clients send it: Anthropic for
  ``/v1/messages`` and ``/v1/complete`` or a request carrying ``anthropic-version`` or
  ``x-api-key``; OpenAI otherwise. A client's base URL is ``http://HOST:PORT/v1`` (OpenAI) or
  ``http://HOST:PORT`` (Anthropic).
- ``/v1beta/...`` and ``/v1/models/<model>:<method>`` go to Gemini (the google-genai client's
  paths, e.g. ``/v1beta/models/gemini-2.5-flash:generateContent``): its base URL is
  ``http://HOST:PORT``.
- ``/<name>/...`` reaches the upstream named ``name``, its remaining path appended to that
  upstream's base URL: a client's base URL is then ``http://HOST:PORT/<name>``.

An upstream's base URL is what the official SDK takes as ``base_url`` (for Azure:
``azure_endpoint``); ``anthropic+URL`` marks an Anthropic-protocol host and ``azure+URL`` an
Azure OpenAI resource (its requests name deployments), ``gemini+URL`` a Gemini API host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Provider
from spendguard._costing.routing import AZURE

__all__ = ["DEFAULT_UPSTREAMS", "Router", "Upstream", "parse_upstream"]

_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
# google-genai on its stable version: /v1/models/<model>:generateContent (OpenAI's /v1/models
# paths never carry a ":method").
_GEMINI_METHOD = re.compile(r"/v1/(models|tunedModels)/[^/]+:[A-Za-z]+$")
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
        if self.provider is Provider.ANTHROPIC:
            return "x-api-key"
        if self.provider is Provider.GEMINI:
            return "x-goog-api-key"
        return "api-key" if self.platform == AZURE else "authorization"


DEFAULT_UPSTREAMS = (
    Upstream("openai", Provider.OPENAI, "https://api.openai.com/v1", key_env="OPENAI_API_KEY"),
    Upstream("anthropic", Provider.ANTHROPIC, "https://api.anthropic.com",
             key_env="ANTHROPIC_API_KEY"),
    Upstream("gemini", Provider.GEMINI, "https://generativelanguage.googleapis.com",
             key_env="GEMINI_API_KEY"),
)


def parse_upstream(text: str) -> Upstream:
    """``NAME=URL``, ``NAME=anthropic+URL``, ``NAME=azure+URL`` or ``NAME=gemini+URL`` (the
    ``--upstream`` option)."""
    name, sep, url = text.partition("=")
    name = name.strip().lower()
    if not sep or not _NAME.fullmatch(name) or name in _RESERVED:
        raise ConfigError(
            f"upstream: {text!r} is not NAME=URL; write e.g. groq=https://api.groq.com/openai/v1 "
            "(NAME: lower-case letters, digits, - or _; not v1, healthz or spendguard)")
    provider, platform = Provider.OPENAI, None
    kind, plus, rest = url.partition("+")
    if plus and kind in ("anthropic", "azure", "openai", "gemini"):
        url = rest
        provider = {"anthropic": Provider.ANTHROPIC,
                    "gemini": Provider.GEMINI}.get(kind, Provider.OPENAI)
        platform = AZURE if kind == "azure" else None
    elif name == "anthropic":
        provider = Provider.ANTHROPIC
    elif name == "gemini":
        provider = Provider.GEMINI
    elif name == "azure":
        platform = AZURE
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
        raise ConfigError(f"upstream {name}: {url!r} is not an http(s) base URL; write e.g. "
                          f"{name}=https://api.example.com/v1")
    key_env = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
               "azure": "AZURE_OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}.get(
        name, f"SPENDGUARD_{name.upper().replace('-', '_')}_API_KEY")
    return Upstream(name, provider, url.strip().rstrip("/"), platform, key_env)


class Router:
    """Picks the upstream of a request and the URL it is forwarded to."""

    def __init__(self, upstreams: Iterable[Upstream]) -> None:
        self.upstreams: dict[str, Upstream] = {u.name: u for u in DEFAULT_UPSTREAMS}
        for upstream in upstreams:
            self.upstreams[upstream.name] = upstream

    def route(self, path: str, headers: Mapping[str, str]) -> tuple[Upstream, str] | None:
        """The upstream and the forwarded URL's path part, or None for no upstream."""
        if path.startswith("/v1beta/") or _GEMINI_METHOD.match(path):
            upstream = self.upstreams["gemini"]
            return upstream, upstream.base_url + path
        if path.startswith("/v1/") or path == "/v1":
            anthropic = (path.startswith(("/v1/messages", "/v1/complete"))
                         or "anthropic-version" in headers or "x-api-key" in headers)
            if anthropic:
                upstream = self.upstreams["anthropic"]
                return upstream, upstream.base_url + path
            upstream = self.upstreams["openai"]
            return upstream, upstream.base_url + path[3:]
        name, _, rest = path[1:].partition("/")
        named = self.upstreams.get(name)
        if named is None or ".." in rest.split("/"):
            return None
        return named, f"{named.base_url}/{rest}"
