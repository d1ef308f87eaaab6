"""The choke point: httpx2 transports that wrap the SDK's own, sync and async twins.

Both SDKs accept an ``http_client``; wrapping its transport (and proxy mounts) lets spendguard
see every attempt — retries included — for every endpoint, without patching SDK methods. The
twins share everything in :mod:`spendguard._guard.metering`; each only moves bytes.

A budget belongs to the SDK client, not to the httpx client (several SDK clients may share
one): each guarded SDK client tags the requests it builds with its :class:`ClientGuard`
(in ``request.extensions``, which never leaves the process), and the transport on the shared
httpx client is a dispatcher that budgets each request by its tag. Untagged requests — from
a plain SDK client sharing the httpx client — pass through uncharged.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from spendguard._core.errors import SpendguardError
from spendguard._costing.eventstream import EVENT_STREAM_TYPE
from spendguard._guard.metering import Attempt, Guard, StreamMeter, response_headers
from spendguard._guard.settling import describe

__all__ = ["AsyncGuardTransport", "ClientGuard", "GuardTransport", "client_guard", "install",
           "tag_request"]

GUARD_EXTENSION = "spendguard.guard"
"""The ``request.extensions`` key carrying the :class:`ClientGuard` of the client that built it."""


@dataclass(frozen=True, slots=True)
class ClientGuard:
    """One SDK client's guard, and the SDK's base error its refusals are made instances of."""

    guard: Guard
    sdk_error: type[Exception] | None = None


def tag_request(request: httpx2.Request, tag: ClientGuard) -> None:
    """Mark a request as built by the client owning ``tag`` (called per attempt)."""
    request.extensions = {**request.extensions, GUARD_EXTENSION: tag}


def request_tag(request: httpx2.Request) -> ClientGuard | None:
    tag = request.extensions.get(GUARD_EXTENSION)
    return tag if isinstance(tag, ClientGuard) else None


def client_guard(client: object) -> Guard | None:
    """The guard of a guarded SDK client (``spendguard.OpenAI(...)`` or wrapped), else None."""
    tag = getattr(client, "_spendguard_tag", None)
    return tag.guard if isinstance(tag, ClientGuard) else None


# Errors raised before the request left: nothing reached the provider, nothing was billed.
_NOT_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout,
             httpx2.UnsupportedProtocol, httpx2.ProxyError)


def _is_event_stream(found: Mapping[str, str]) -> bool:
    # Bedrock streams AWS event-stream frames; everything else streams SSE.
    return found.get("content-type", "").startswith(("text/event-stream", EVENT_STREAM_TYPE))


def _response(inner: httpx2.Response, stream: httpx2.SyncByteStream | httpx2.AsyncByteStream,
              ) -> httpx2.Response:
    return httpx2.Response(inner.status_code, headers=inner.headers, stream=stream,
                           extensions=inner.extensions)


class _DecodedResponse(httpx2.Response):
    """A response whose JSON body the guard decoded to settle it: the first ``json()`` (the
    SDK's, to parse its reply) takes that object rather than decoding the same bytes again;
    every later call, or one with options, decodes afresh as httpx does."""

    _spendguard_body: Any = None

    def json(self, **kwargs: Any) -> Any:
        body, self._spendguard_body = self._spendguard_body, None
        return body if body is not None and not kwargs else super().json(**kwargs)


def _hand_on(response: httpx2.Response, body: Any) -> httpx2.Response:
    """``response``, whose whole body was read and settled, carrying the ``body`` settling
    decoded from it (None: nothing decoded). Only a plain ``httpx2.Response`` carries it: a
    subclass keeps its own ``json``."""
    if body is not None and response.__class__ is httpx2.Response:
        response.__class__ = _DecodedResponse
        assert isinstance(response, _DecodedResponse)
        response._spendguard_body = body
    return response


def _on_transport_error(attempt: Attempt, exc: BaseException) -> None:
    if isinstance(exc, _NOT_SENT):
        attempt.release(type(exc).__name__)
    else:
        # Sent, then lost (timeout, reset): the provider may have billed it.
        attempt.settle_worst("error", note=f"request failed after sending: {describe(exc)}")


def _metered(attempt: Attempt, response: httpx2.Response, found: Mapping[str, str], *,
             is_async: bool) -> httpx2.Response | None:
    """The response to hand back when it is a stream or was already read; None when its raw
    body is still to be read (and settled) by the caller of this function. ``found``: the
    response's :func:`response_headers`."""
    if _is_event_stream(found) and response.status_code < 400:
        meter = attempt.safely(attempt.stream_meter, found)
        if meter is None:
            return response  # settled conservatively; the stream passes untouched
        if is_async and isinstance(response.stream, httpx2.AsyncByteStream):
            return _response(response, _AsyncMeteredStream(response, meter))
        if not is_async and isinstance(response.stream, httpx2.SyncByteStream):
            return _response(response, _MeteredStream(response, meter))
    if response.is_stream_consumed:  # already read (e.g. a mock): its content is decoded
        # .content itself may raise (iterated, never read): read it inside the safety net.
        return _hand_on(response, attempt.safely(lambda: attempt.settle_body(
            response.status_code, found, response.content, decoded=True)))
    return None


class _FailedBody(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """What was read of a body before the connection failed, then that same failure.

    The attempt is settled already; the SDK still gets the response's status and headers and
    meets the failure while reading the body, exactly as without spendguard — so its own
    rules (``x-should-retry``, the error class it raises) decide what happens next.
    """

    def __init__(self, read: bytes, error: Exception) -> None:
        self._read = read
        self._error = error

    def __iter__(self) -> Iterator[bytes]:
        if self._read:
            yield self._read
        raise self._error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._read:
            yield self._read
        raise self._error


class _MeteredStream(httpx2.SyncByteStream):
    """Passes every chunk through unchanged while the meter reads usage from it."""

    def __init__(self, response: httpx2.Response, meter: StreamMeter) -> None:
        # Closing goes through the wrapped transport's response, so that it is marked closed
        # (and its connection released) exactly as without spendguard.
        self._response = response
        assert isinstance(response.stream, httpx2.SyncByteStream)
        self._inner = response.stream
        self._meter = meter
        self._iterated = False
        # A caller that drops the stream without closing it is still settled.
        self._finalizer = weakref.finalize(self, meter.finish)

    def __iter__(self) -> Iterator[bytes]:
        # Only the first pass is metered: after the terminal event ([DONE]) the SDKs iterate the
        # stream again to drain it, and a replayable stream (a mock, a buffered body) would
        # then be counted twice. A live stream has nothing billable left after that event.
        first, self._iterated = not self._iterated, True
        try:
            for chunk in self._inner:
                if first:
                    self._meter.feed(chunk)
                yield chunk
        except Exception as exc:
            self._meter.finish(error=exc)
            raise

    def close(self) -> None:
        try:
            self._response.close()
        finally:
            self._meter.finish()
            self._finalizer.detach()


class _AsyncMeteredStream(httpx2.AsyncByteStream):
    def __init__(self, response: httpx2.Response, meter: StreamMeter) -> None:
        self._response = response
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        self._inner = response.stream
        self._meter = meter
        self._iterated = False
        self._finalizer = weakref.finalize(self, meter.finish)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # Only the first pass is metered: after the terminal event ([DONE]) the SDKs iterate the
        # stream again to drain it, and a replayable stream (a mock, a buffered body) would
        # then be counted twice. A live stream has nothing billable left after that event.
        first, self._iterated = not self._iterated, True
        try:
            async for chunk in self._inner:
                if first:
                    self._meter.feed(chunk)
                yield chunk
        except Exception as exc:
            self._meter.finish(error=exc)
            raise

    async def aclose(self) -> None:
        try:
            await self._response.aclose()
        finally:
            self._meter.finish()
            self._finalizer.detach()


def _as_sdk_error(exc: SpendguardError, sdk_error: type[Exception] | None) -> SpendguardError:
    """Make a refusal also an instance of the SDK's base error, so the SDK neither wraps nor
    retries it (the anthropic SDK wraps and retries anything else raised in a transport)."""
    if sdk_error is None or isinstance(exc, sdk_error):
        return exc
    exc.__class__ = _sdk_subclass(type(exc), sdk_error)
    return exc


_SUBCLASSES: dict[tuple[type[Exception], type[Exception]], type[Any]] = {}


def _sdk_subclass(cls: type[SpendguardError], sdk_error: type[Exception]) -> type[Any]:
    key = (cls, sdk_error)
    if key not in _SUBCLASSES:
        _SUBCLASSES[key] = type(cls.__name__, (cls, sdk_error),
                                {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return _SUBCLASSES[key]


class GuardTransport(httpx2.BaseTransport):
    """A sync transport that budgets each request by the guard of the SDK client that built it."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        tag = request_tag(request)
        attempt = None
        try:
            # The endpoint is decided from method and path alone: the body of a free request
            # (a multi-GB upload) streams through unread.
            admitted = None if tag is None else tag.guard.admit(request)
            if tag is not None and admitted is not None:
                request, attempt = tag.guard.begin(request, request.read(), *admitted)
        except SpendguardError as exc:
            _as_sdk_error(exc, tag.sdk_error if tag is not None else None)
            raise
        if attempt is None:
            return self.inner.handle_request(request)
        # From here on the request may have reached the provider: nothing of spendguard's own
        # may raise, and every outcome ends in one record (Attempt.safely).
        try:
            response = self.inner.handle_request(request)
        except BaseException as exc:
            attempt.safely(_on_transport_error, attempt, exc)
            raise
        found = response_headers(response.headers)
        ready = _metered(attempt, response, found, is_async=False)
        if ready is not None:
            return ready
        chunks: list[bytes] = []
        try:
            chunks.extend(response.iter_raw())
        except Exception as exc:
            attempt.safely(_on_transport_error, attempt, exc)
            response.close()
            return _response(response, _FailedBody(b"".join(chunks), exc))
        except BaseException as exc:
            attempt.safely(_on_transport_error, attempt, exc)
            raise
        raw = b"".join(chunks)
        body = attempt.safely(attempt.settle_body, response.status_code, found, raw)
        return _hand_on(_response(response, httpx2.ByteStream(raw)), body)

    def close(self) -> None:
        self.inner.close()


class AsyncGuardTransport(httpx2.AsyncBaseTransport):
    """The async twin of :class:`GuardTransport`."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        tag = request_tag(request)
        attempt = None
        try:
            admitted = None if tag is None else tag.guard.admit(request)
            if tag is not None and admitted is not None:
                request, attempt = tag.guard.begin(request, await request.aread(), *admitted)
        except SpendguardError as exc:
            _as_sdk_error(exc, tag.sdk_error if tag is not None else None)
            raise
        if attempt is None:
            return await self.inner.handle_async_request(request)
        try:
            response = await self.inner.handle_async_request(request)
        except BaseException as exc:
            attempt.safely(_on_transport_error, attempt, exc)
            raise
        found = response_headers(response.headers)
        ready = _metered(attempt, response, found, is_async=True)
        if ready is not None:
            return ready
        chunks: list[bytes] = []
        try:
            async for chunk in response.aiter_raw():
                chunks.append(chunk)
        except Exception as exc:
            attempt.safely(_on_transport_error, attempt, exc)
            await response.aclose()
            return _response(response, _FailedBody(b"".join(chunks), exc))
        except BaseException as exc:
            attempt.safely(_on_transport_error, attempt, exc)
            raise
        raw = b"".join(chunks)
        body = attempt.safely(attempt.settle_body, response.status_code, found, raw)
        return _hand_on(_response(response, httpx2.ByteStream(raw)), body)

    async def aclose(self) -> None:
        await self.inner.aclose()


def install(http_client: httpx2.Client | httpx2.AsyncClient) -> None:
    """Put the dispatcher on the client's transport and every proxy mount (idempotent).

    The dispatcher holds no budget: several SDK clients, each with its own, may share it.
    """
    # httpx2 keeps the default transport and proxy mounts on these attributes; the design is
    # the same as httpx's, and wrapping them keeps the SDK's defaults (keep-alive, proxies).
    if isinstance(http_client, httpx2.AsyncClient):
        async_mounts = http_client._mounts
        if not isinstance(http_client._transport, AsyncGuardTransport):
            http_client._transport = AsyncGuardTransport(http_client._transport)
        for pattern, async_transport in list(async_mounts.items()):
            if async_transport is not None and not isinstance(async_transport,
                                                              AsyncGuardTransport):
                async_mounts[pattern] = AsyncGuardTransport(async_transport)
    else:
        mounts = http_client._mounts
        if not isinstance(http_client._transport, GuardTransport):
            http_client._transport = GuardTransport(http_client._transport)
        for pattern, transport in list(mounts.items()):
            if transport is not None and not isinstance(transport, GuardTransport):
                mounts[pattern] = GuardTransport(transport)
