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
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from spendguard._core.errors import SpendguardError
from spendguard._costing.eventstream import EVENT_STREAM_TYPE
from spendguard._guard.metering import Attempt, Guard, StreamMeter, response_headers
from spendguard._guard.reaches.httpx_private import (
    decode_content,
    keep_read_body,
    wrap_transports,
)
from spendguard._guard.settling import describe
from spendguard._guard.sse import decodable

__all__ = ["HTTPX2", "AsyncGuardTransport", "ClientGuard", "GuardTransport", "Wire",
           "client_guard", "handle", "handle_async", "install", "mark_guarded",
           "set_traffic_guard", "tag_request"]

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


_GUARDED_MARKS: dict[str, tuple[str, str]] = {}
"""Origin (``http://127.0.0.1:8787``) -> the header marking requests a guard of this process
handled, for the gateway of ``spendguard run`` (it charges the rest, not these again)."""


def mark_guarded(origin: str, header: str, value: str) -> None:
    """Every request a guarded client of this process sends to ``origin`` carries
    ``header: value`` (its guard already charged it, or let it through on purpose)."""
    _GUARDED_MARKS[origin.rstrip("/")] = (header, value)


def _mark(request: Any) -> None:
    url = request.url
    mark = _GUARDED_MARKS.get(f"{url.scheme}://{url.netloc.decode('ascii')}")
    if mark is not None:
        request.headers[mark[0]] = mark[1]


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
    return "content-type" in found and found["content-type"].startswith(
        ("text/event-stream", EVENT_STREAM_TYPE))


@dataclass(frozen=True, slots=True)
class Wire:
    """The classes of one HTTP library (``httpx2``, or classic ``httpx``) that the guard builds
    responses and streams of: the library's own, so its client accepts them."""

    response: type[Any]
    byte_stream: type[Any]
    sync_stream: type[Any]
    async_stream: type[Any]
    metered: type[Any]
    async_metered: type[Any]
    write_tracked: type[Any]
    failed_body: type[Any]
    keeps_read_body: bool = False
    """The client times a response that arrives closed (httpx2 does, classic httpx does not):
    a body the guard read whole is handed on in the wrapped transport's own response."""


def _response(inner: Any, stream: Any, wire: Wire) -> Any:
    return wire.response(inner.status_code, headers=inner.headers, stream=stream,
                         extensions=inner.extensions)


def _content_to_keep(inner: Any, raw: bytes, found: Mapping[str, str], wire: Wire,
                     ) -> bytes | None:
    """The content of a body read whole from ``inner``, to settle from and hand on in
    ``inner`` itself; None where a new response must replay the raw bytes instead (a client
    that does not take a closed response, an encoding settling cannot read, a body the HTTP
    library cannot decode: the SDK then meets that failure itself, as without spendguard)."""
    if not wire.keeps_read_body:
        return None
    if "content-encoding" not in found:
        return raw
    if not decodable(found["content-encoding"]):
        return None  # settled from the raw bytes, as before: the same record
    try:
        # The HTTP library's own decoding, once: what the SDK would have read.
        return decode_content(inner, raw)
    except Exception:
        return None


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
        decoded: Any = response  # a _DecodedResponse now (its class was set above)
        decoded._spendguard_body = body
    return response


def _settled_whole(attempt: Attempt, response: Any, raw: bytes, found: Mapping[str, str],
                   wire: Wire) -> Any:
    """Settle a reply whose body was read whole (``raw``), and the response to hand on: the
    wrapped transport's own, given the decoded content, where the client takes it; else a new
    one replaying the raw bytes."""
    content = _content_to_keep(response, raw, found, wire)
    if content is None:
        body = attempt.safely(attempt.settle_body, response.status_code, found, raw)
        return _hand_on(_response(response, wire.byte_stream(raw), wire), body)
    # Read off the connection once: the wrapped transport's response, closed, hands it on.
    body = attempt.safely(attempt.settle_body, response.status_code, found, content,
                          decoded=True)
    keep_read_body(response, content)
    return _hand_on(response, body)


# Errors only raised while waiting for or reading a response: the whole request was written.
_AFTER_WRITING = frozenset({"ReadTimeout", "ReadError", "RemoteProtocolError"})


def _on_transport_error(attempt: Attempt, exc: BaseException) -> None:
    """Settle an attempt whose sending or response failed: charged its worst case when the
    request may have left the machine whole, released when it cannot have."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, _NOT_SENT) or names & _NOT_SENT_NAMES:
        attempt.release(type(exc).__name__)
    elif attempt.body_written or names & _AFTER_WRITING:
        # Handed to the connection whole, then lost (a timeout, a reset, a call cancelled
        # while it waited, an event loop closed under it): the provider may have billed it.
        attempt.settle_worst("error", note=f"request failed after sending: {describe(exc)}")
    else:
        # Never handed over whole (cancelled before sending, an event loop already closed,
        # a write cut short): the provider cannot have received the request.
        attempt.release(f"not sent: {describe(exc)}")


_NOT_SENT_NAMES = frozenset(cls.__name__ for cls in _NOT_SENT)
"""The same errors of the classic ``httpx`` package, which frameworks still build clients of."""


class _WriteTracked(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A request body that tells its attempt once the connection took its last byte.

    The connection iterates the body to write it, and asks for the next chunk only after
    writing the one before: the end of the iteration is the moment the request left whole.
    A transport that never writes (a mock) leaves it unset; its errors are judged by type.
    """

    def __init__(self, inner: Any, attempt: Attempt) -> None:
        self._inner = inner
        self._attempt = attempt

    def __iter__(self) -> Iterator[bytes]:
        yield from self._inner
        self._attempt.body_written = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk
        self._attempt.body_written = True

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    async def aclose(self) -> None:
        aclose = getattr(self._inner, "aclose", None)
        if aclose is not None:
            await aclose()


def _track_writing(request: Any, attempt: Attempt, wire: Wire) -> None:
    request.stream = wire.write_tracked(request.stream, attempt)


def _metered(attempt: Attempt, response: Any, found: Mapping[str, str], wire: Wire, *,
             is_async: bool) -> Any:
    """The response to hand back when it is a stream or was already read; None when its raw
    body is still to be read (and settled) by the caller of this function. ``found``: the
    response's :func:`response_headers`."""
    if _is_event_stream(found) and response.status_code < 400:
        meter = attempt.safely(attempt.stream_meter, found)
        if meter is None:
            return response  # settled conservatively; the stream passes untouched
        if is_async and isinstance(response.stream, wire.async_stream):
            return _response(response, wire.async_metered(response, meter), wire)
        if not is_async and isinstance(response.stream, wire.sync_stream):
            return _response(response, wire.metered(response, meter), wire)
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


def _feed_pending(meter: StreamMeter, pending: list[bytes]) -> None:
    """Let the meter read the chunk the caller was last handed, once (a close from another
    thread may take it first)."""
    try:
        chunk = pending.pop()
    except IndexError:
        return
    meter.feed(chunk)


def _finish_metering(meter: StreamMeter, pending: list[bytes]) -> None:
    """Settle a stream that ended (closed, or dropped and collected): the chunk the caller
    stopped at is read first (a collected stream's generator may not have resumed yet)."""
    _feed_pending(meter, pending)
    meter.finish()


class _Metering:
    """What the sync and async metered streams share: the wrapped response, its meter, and
    the settling of a stream that ends (closed, or dropped and collected)."""

    def __init__(self, response: Any, meter: StreamMeter) -> None:
        # Closing goes through the wrapped transport's response, so that it is marked closed
        # (and its connection released) exactly as without spendguard.
        self._response = response
        self._inner = response.stream
        self._meter = meter
        self._iterated = False
        # The chunk handed to the caller and not yet read by the meter (at most one).
        self._pending: list[bytes] = []
        # A caller that drops the stream without closing it is still settled.
        self._finalizer = weakref.finalize(self, _finish_metering, meter, self._pending)

    def _finish(self) -> None:
        _finish_metering(self._meter, self._pending)
        self._finalizer.detach()


class _MeteredStream(_Metering, httpx2.SyncByteStream):
    """Passes every chunk through unchanged while the meter reads usage from it."""

    def __iter__(self) -> Iterator[bytes]:
        # Only the first pass is metered: after the terminal event ([DONE]) the SDKs iterate the
        # stream again to drain it, and a replayable stream (a mock, a buffered body) would
        # then be counted twice. A live stream has nothing billable left after that event.
        first, self._iterated = not self._iterated, True
        try:
            for chunk in self._inner:
                if not first:
                    yield chunk
                    continue
                # The caller has each chunk before the meter reads it (the first token is not
                # kept waiting); one the caller stops at is read when the stream is closed
                # or dropped.
                self._pending.append(chunk)
                try:
                    yield chunk
                finally:
                    _feed_pending(self._meter, self._pending)
        except Exception as exc:
            self._meter.finish(error=exc)
            raise

    def close(self) -> None:
        try:
            self._response.close()
        finally:
            self._finish()


class _AsyncMeteredStream(_Metering, httpx2.AsyncByteStream):
    """The async twin of :class:`_MeteredStream`."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # Only the first pass is metered: after the terminal event ([DONE]) the SDKs iterate the
        # stream again to drain it, and a replayable stream (a mock, a buffered body) would
        # then be counted twice. A live stream has nothing billable left after that event.
        first, self._iterated = not self._iterated, True
        try:
            async for chunk in self._inner:
                if not first:
                    yield chunk
                    continue
                self._pending.append(chunk)
                try:
                    yield chunk
                finally:
                    _feed_pending(self._meter, self._pending)
        except Exception as exc:
            self._meter.finish(error=exc)
            raise

    async def aclose(self) -> None:
        try:
            await self._response.aclose()
        finally:
            self._finish()


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


HTTPX2 = Wire(httpx2.Response, httpx2.ByteStream, httpx2.SyncByteStream, httpx2.AsyncByteStream,
              _MeteredStream, _AsyncMeteredStream, _WriteTracked, _FailedBody,
              keeps_read_body=True)

SEEN_EXTENSION = "spendguard.seen"
"""Set on a request once a dispatcher took charge of it: a dispatcher below it (a client
layered on another's transport) lets it through, so no request is guarded twice."""

TrafficGuard = Callable[[Any], ClientGuard | None]
_traffic_guards: list[TrafficGuard] = []


def set_traffic_guard(guard: TrafficGuard | None) -> None:
    """The guard of requests no guarded SDK client tagged (``spendguard.install()``'s: by the
    host they are addressed to), or None for none: such requests pass untouched."""
    _traffic_guards[:] = [] if guard is None else [guard]


def _take_charge(request: Any) -> ClientGuard | None:
    """The guard this dispatcher budgets ``request`` by, or None to let it through."""
    extensions = request.extensions  # read by membership and class: no call per request
    if SEEN_EXTENSION in extensions and extensions[SEEN_EXTENSION]:  # noqa: RUF019
        return None
    tag = None
    if GUARD_EXTENSION in extensions:
        tag = extensions[GUARD_EXTENSION]
    if tag.__class__ is not ClientGuard and not isinstance(tag, ClientGuard):
        tag = _traffic_guards[0](request) if _traffic_guards else None
        if tag is None:
            return None
    request.extensions = {**extensions, SEEN_EXTENSION: True}
    return tag


_READABLE_ACCEPTS = frozenset({"gzip, deflate", "gzip", "deflate", "identity"})
"""Accept-Encoding values every reply to which settling reads (httpx2's own default first)."""


def _accept_readable(request: Any, found: Mapping[str, str]) -> None:
    """Ask a priced request's reply only in encodings settling reads (identity, gzip,
    deflate). With brotli or zstandard installed, the HTTP library also asks for ``br`` and
    ``zstd``; a reply in one would be unreadable to the guard, and its call charged its worst
    case. ``found``: the request headers :meth:`Guard.admit` read."""
    if "accept-encoding" not in found or found["accept-encoding"] in _READABLE_ACCEPTS:
        return
    usable = [coding.strip() for coding in found["accept-encoding"].split(",")
              if coding.strip() and decodable(coding.split(";")[0].strip())]
    request.headers["accept-encoding"] = ", ".join(usable) or "identity"


def handle(inner: Any, request: Any, wire: Wire) -> Any:
    """Budget, forward and settle one request through the sync transport ``inner``."""
    tag = _take_charge(request)
    attempt = None
    try:
        # The endpoint is decided from method and path alone: the body of a free request
        # (a multi-GB upload) streams through unread.
        admitted = None if tag is None else tag.guard.admit(request)
        if tag is not None and admitted is not None:
            request, attempt = tag.guard.begin(request, request.read(), *admitted)
            _accept_readable(request, admitted[1])
    except SpendguardError as exc:
        _as_sdk_error(exc, tag.sdk_error if tag is not None else None)
        raise
    if tag is not None and _GUARDED_MARKS:
        _mark(request)
    if attempt is None:
        response = inner.handle_request(request)
        if tag is not None and request.method == "DELETE":  # may end a cache: the adapter says
            tag.guard.after_free(request, response)
        return response
    _track_writing(request, attempt, wire)
    # From here on the request may have reached the provider: nothing of spendguard's own
    # may raise, and every outcome ends in one record (Attempt.safely).
    try:
        response = inner.handle_request(request)
    except BaseException as exc:
        attempt.safely(_on_transport_error, attempt, exc)
        raise
    found = response_headers(response.headers)
    ready = _metered(attempt, response, found, wire, is_async=False)
    if ready is not None:
        return ready
    chunks: list[bytes] = []
    try:
        chunks.extend(response.iter_raw())
    except Exception as exc:
        attempt.safely(_on_transport_error, attempt, exc)
        response.close()
        return _response(response, wire.failed_body(b"".join(chunks), exc), wire)
    except BaseException as exc:
        attempt.safely(_on_transport_error, attempt, exc)
        raise
    return _settled_whole(attempt, response, b"".join(chunks), found, wire)


async def handle_async(inner: Any, request: Any, wire: Wire) -> Any:
    """The async twin of :func:`handle`."""
    tag = _take_charge(request)
    attempt = None
    try:
        admitted = None if tag is None else tag.guard.admit(request)
        if tag is not None and admitted is not None:
            request, attempt = tag.guard.begin(request, await request.aread(), *admitted)
            _accept_readable(request, admitted[1])
    except SpendguardError as exc:
        _as_sdk_error(exc, tag.sdk_error if tag is not None else None)
        raise
    if tag is not None and _GUARDED_MARKS:
        _mark(request)
    if attempt is None:
        response = await inner.handle_async_request(request)
        if tag is not None and request.method == "DELETE":  # may end a cache: the adapter says
            tag.guard.after_free(request, response)
        return response
    _track_writing(request, attempt, wire)
    try:
        response = await inner.handle_async_request(request)
    except BaseException as exc:
        attempt.safely(_on_transport_error, attempt, exc)
        raise
    found = response_headers(response.headers)
    ready = _metered(attempt, response, found, wire, is_async=True)
    if ready is not None:
        return ready
    chunks: list[bytes] = []
    try:
        async for chunk in response.aiter_raw():
            chunks.append(chunk)
    except Exception as exc:
        attempt.safely(_on_transport_error, attempt, exc)
        await response.aclose()
        return _response(response, wire.failed_body(b"".join(chunks), exc), wire)
    except BaseException as exc:
        attempt.safely(_on_transport_error, attempt, exc)
        raise
    return _settled_whole(attempt, response, b"".join(chunks), found, wire)


class GuardTransport(httpx2.BaseTransport):
    """A sync transport that budgets each request by the guard of the SDK client that built
    it (or, under ``spendguard.install()``, by the provider it is addressed to)."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response: httpx2.Response = handle(self.inner, request, HTTPX2)
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncGuardTransport(httpx2.AsyncBaseTransport):
    """The async twin of :class:`GuardTransport`."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response: httpx2.Response = await handle_async(self.inner, request, HTTPX2)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def install(http_client: Any) -> None:
    """Put the dispatcher on the client's transport and every proxy mount (idempotent).

    ``http_client``: an ``httpx2`` client, or a classic ``httpx`` one (frameworks such as
    LiteLLM still hand those to the SDKs). The dispatcher holds no budget: several SDK
    clients, each with its own, may share it.
    """
    # Asked before every request (the client may have been replaced): the usual classes are
    # told by identity, with no call. An httpx2 Client is never an AsyncClient.
    kind = http_client.__class__
    if kind is httpx2.Client:
        wrap_transports(http_client, GuardTransport)
    elif kind is httpx2.AsyncClient or isinstance(http_client, httpx2.AsyncClient):
        wrap_transports(http_client, AsyncGuardTransport)
    elif isinstance(http_client, httpx2.Client):
        wrap_transports(http_client, GuardTransport)
    else:
        from spendguard._guard import legacy  # noqa: PLC0415 - classic httpx, only when used

        legacy.install(http_client)


