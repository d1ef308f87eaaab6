"""The choke point for clients of the classic ``httpx`` package, twins of the ``httpx2`` ones.

The SDKs still accept an ``httpx.Client`` as ``http_client`` (LiteLLM and DSPy hand them one),
and frameworks send provider requests of their own through ``httpx`` (LiteLLM's Anthropic
route). The two libraries share one design, so the transports here are the same code as
:mod:`spendguard._guard.transport` run with classic ``httpx``'s response and stream classes:
the client then accepts what the guard hands back. Imported only when such a client is met.
"""

from __future__ import annotations

from typing import Any

import httpx

from spendguard._guard.reaches.httpx_private import wrap_transports
from spendguard._guard.transport import (
    Wire,
    _AsyncMeteredStream,
    _FailedBody,
    _MeteredStream,
    _WriteTracked,
    handle,
    handle_async,
)

__all__ = ["LEGACY", "LegacyAsyncGuardTransport", "LegacyGuardTransport", "install"]


class _LegacyMeteredStream(_MeteredStream, httpx.SyncByteStream):
    """A metered response stream that classic ``httpx`` recognises as its own."""


class _LegacyAsyncMeteredStream(_AsyncMeteredStream, httpx.AsyncByteStream):
    """The async twin of :class:`_LegacyMeteredStream`."""


class _LegacyWriteTracked(_WriteTracked, httpx.SyncByteStream, httpx.AsyncByteStream):
    """A request body telling its attempt when it was written, for classic ``httpx``."""


class _LegacyFailedBody(_FailedBody, httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body cut short mid-read, replayed with its failure, for classic ``httpx``."""


LEGACY = Wire(httpx.Response, httpx.ByteStream, httpx.SyncByteStream, httpx.AsyncByteStream,
              _LegacyMeteredStream, _LegacyAsyncMeteredStream, _LegacyWriteTracked,
              _LegacyFailedBody)


class LegacyGuardTransport(httpx.BaseTransport):
    """:class:`spendguard._guard.transport.GuardTransport` for a classic ``httpx.Client``."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response: httpx.Response = handle(self.inner, request, LEGACY)
        return response

    def close(self) -> None:
        self.inner.close()


class LegacyAsyncGuardTransport(httpx.AsyncBaseTransport):
    """The async twin of :class:`LegacyGuardTransport`."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response: httpx.Response = await handle_async(self.inner, request, LEGACY)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def install(http_client: Any) -> None:
    """Put the dispatcher on a classic ``httpx`` client (idempotent)."""
    if isinstance(http_client, httpx.AsyncClient):
        wrap_transports(http_client, LegacyAsyncGuardTransport)
    elif isinstance(http_client, httpx.Client):
        wrap_transports(http_client, LegacyGuardTransport)
    else:
        raise TypeError(f"not an httpx or httpx2 client: {type(http_client).__name__}")
