"""Attaching the guard to a ``google.genai`` client (the client half of the Gemini adapter).

google-genai is not a Stainless SDK: it has no per-request hook to tag requests with, and no
``copy()``. Its ``BaseApiClient`` builds every request on its own httpx2 clients
(``_httpx_client`` / ``_async_httpx_client``, or ones given through
``types.HttpOptions(httpx_client=..., httpx_async_client=...)``), so the guard:

- puts the dispatcher (:func:`spendguard._guard.transport.install`) on those httpx2 clients,
  and turns off the SDK's one-pool-per-event-loop async mode, whose inner pools would not
  carry it;
- stands a thin tagging proxy in for each of them on that one ``BaseApiClient`` (its
  ``build_request`` and ``request`` tag the request with this client's guard; everything else
  is the real client's), so another SDK client sharing the httpx2 client keeps its own budget;
- refuses the two set-ups that would send around httpx2: Vertex AI with an mTLS client
  certificate (google-auth's own session), and async calls over aiohttp (pointed back to the
  httpx2 client instead).

Every reach into google-genai's private attributes is named in
:mod:`spendguard._guard.reaches.genai` and tested against the installed version.
"""

from __future__ import annotations

import sys
from typing import Any

import httpx2

from spendguard._core.errors import ConfigError
from spendguard._guard.metering import Guard
from spendguard._guard.options import ClientOptions
from spendguard._guard.reaches import genai as reach
from spendguard._guard.transport import ClientGuard, install, tag_request
from spendguard._providers.gemini import endpoints

__all__ = ["attach", "guard_genai_client", "is_client", "is_genai_client"]

_SEND_ONLY = ("auth", "follow_redirects")


class _Tagging:
    """The parts both proxies share: the real client, and this SDK client's tag."""

    def __init__(self, inner: Any, tag: ClientGuard) -> None:
        self._spendguard_inner = inner
        self._spendguard_tag = tag

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spendguard_inner, name)

    def build_request(self, *args: Any, **kwargs: Any) -> httpx2.Request:
        request: httpx2.Request = self._spendguard_inner.build_request(*args, **kwargs)
        tag_request(request, self._spendguard_tag)
        return request


class _TaggingClient(_Tagging):
    """Stands in for a ``BaseApiClient``'s sync httpx2 client."""

    def request(self, method: str, url: Any, **kwargs: Any) -> httpx2.Response:
        send = {name: kwargs.pop(name) for name in _SEND_ONLY if name in kwargs}
        response: httpx2.Response = self._spendguard_inner.send(
            self.build_request(method, url, **kwargs), **send)
        return response


class _AsyncTaggingClient(_Tagging):
    """Stands in for a ``BaseApiClient``'s async httpx2 client."""

    async def request(self, method: str, url: Any, **kwargs: Any) -> httpx2.Response:
        send = {name: kwargs.pop(name) for name in _SEND_ONLY if name in kwargs}
        response: httpx2.Response = await self._spendguard_inner.send(
            self.build_request(method, url, **kwargs), **send)
        return response


def is_genai_client(client: object) -> bool:
    """Whether ``client`` is a ``google.genai`` ``Client`` or ``AsyncClient`` (its ``.aio``),
    ``spendguard.Gemini`` included; never imports the SDK."""
    module = sys.modules.get("google.genai.client")
    return module is not None and isinstance(client, (module.Client, module.AsyncClient))


def _real(http_client: Any) -> Any:
    return http_client._spendguard_inner if isinstance(http_client, _Tagging) else http_client


def guard_genai_client(client: Any, options: ClientOptions) -> None:
    """Give a ``genai.Client`` (or its ``.aio``) its own guard over its httpx2 clients.

    The client's ``.aio``, ``.chats`` and every other module share its API client, so they are
    guarded with it; wrapping again replaces the guard.
    """
    api = reach.api_client(client)
    if reach.uses_google_auth_session(api):
        raise ConfigError(
            "spendguard cannot guard a Vertex AI client that uses an mTLS client certificate: "
            "google-auth then sends requests through its own session, not httpx2. Use an API "
            "key or default credentials without a client certificate.")
    tag = ClientGuard(Guard(endpoints.PROVIDER, options.budget, options.guard_options()), None)
    sync_client = _real(reach.sync_http_client(api))
    if not isinstance(sync_client, httpx2.Client):
        raise ConfigError(
            f"http_options.httpx_client: spendguard guards httpx2 clients; got "
            f"{type(sync_client).__module__}.{type(sync_client).__name__}. Pass an "
            "httpx2.Client (or set GOOGLE_GENAI_HTTP_CLIENT=httpx2).")
    install(sync_client)
    reach.set_sync_http_client(api, _TaggingClient(sync_client, tag))
    async_client = _real(reach.async_http_client(api))
    if async_client is not None:
        if not isinstance(async_client, httpx2.AsyncClient):
            raise ConfigError(
                f"http_options.httpx_async_client: spendguard guards httpx2 clients; got "
                f"{type(async_client).__module__}.{type(async_client).__name__}")
        reach.serve_every_loop_from_own_pool(async_client)
        install(async_client)
        tagging = _AsyncTaggingClient(async_client, tag)
        reach.set_async_http_client(api, tagging)
        if reach.uses_aiohttp(api):  # aiohttp would bypass httpx2: send through the guarded one
            reach.send_async_through(api, tagging)
    client._spendguard_tag = tag
    client._spendguard_options = options.as_dict()
    aio = reach.async_twin(client)
    if aio is not None:  # the client's .aio shares its API client: it finds the guard too
        aio._spendguard_tag = tag


# The names the choke point asks a provider's client half for (found as
# ``_providers/<name>/guard.py`` by ``_guard.sdk_clients.client_half``).
is_client = is_genai_client
attach = guard_genai_client
