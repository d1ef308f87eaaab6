"""The emulator as an ``httpx2`` transport: hand it to any client as ``transport=``.

One class is both a sync and an async transport (like ``httpx2.MockTransport``), so the same
object serves ``httpx2.Client`` and ``httpx2.AsyncClient``. Streams are sent frame by frame; an
injected cut raises ``httpx2.RemoteProtocolError`` mid-body, as a dropped connection does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import httpx2

from spendguard.testing.wire import WireRequest, WireResponse, normalise_path

if TYPE_CHECKING:  # pragma: no cover
    from spendguard.testing.emulator import Emulator

__all__ = ["EmulatorTransport"]


def _wire_request(request: httpx2.Request, body: bytes) -> WireRequest:
    url = request.url
    origin = f"{url.scheme}://{url.netloc.decode('ascii')}"
    return WireRequest(request.method, normalise_path(url.path),
                       {key: value for key, value in url.params.multi_items()},
                       {key.lower(): value for key, value in request.headers.multi_items()},
                       body, origin)


class _FrameStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """SSE frames, paced by the emulator's sleep, cut short when a fault says so."""

    def __init__(self, emulator: Emulator, response: WireResponse,
                 request: httpx2.Request) -> None:
        self._emulator = emulator
        self._frames = response.events or []
        self._cut = response.break_after_events
        self._request = request

    def _broken(self) -> httpx2.RemoteProtocolError:
        return httpx2.RemoteProtocolError(
            "peer closed connection without sending complete message body "
            "(spendguard emulator: break_next_stream)", request=self._request)

    def __iter__(self) -> Iterator[bytes]:
        interval = self._emulator.config.stream_interval_s
        for index, frame in enumerate(self._frames):
            if index == self._cut:
                raise self._broken()
            if index and interval:
                self._emulator.sleep(interval)
            yield frame

    async def __aiter__(self) -> AsyncIterator[bytes]:
        interval = self._emulator.config.stream_interval_s
        for index, frame in enumerate(self._frames):
            if index == self._cut:
                raise self._broken()
            if index and interval:
                await self._emulator.async_sleep(interval)
            yield frame


class EmulatorTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """Answers every request from an :class:`~spendguard.testing.Emulator`; any host works."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator

    def _response(self, request: httpx2.Request, response: WireResponse) -> httpx2.Response:
        if response.timeout:
            raise httpx2.ReadTimeout("timed out (spendguard emulator: timeout_next)",
                                     request=request)
        if response.events is None:
            return httpx2.Response(response.status, headers=response.headers,
                                   content=response.body)
        return httpx2.Response(response.status, headers=response.headers,
                               stream=_FrameStream(self.emulator, response, request))

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.emulator.handle(_wire_request(request, request.read()))
        if self.emulator.config.latency_s:
            self.emulator.sleep(self.emulator.config.latency_s)
        return self._response(request, response)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.emulator.handle(_wire_request(request, await request.aread()))
        if self.emulator.config.latency_s:
            await self.emulator.async_sleep(self.emulator.config.latency_s)
        return self._response(request, response)
