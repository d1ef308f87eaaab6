"""The gateway's ASGI app: each request routed, priced and reserved by the choke point, then
relayed to a configured upstream, its response passed back as it arrives.

The outbound side is an ``httpx2.AsyncClient`` carrying spendguard's own dispatcher
(:func:`spendguard._guard.transport.install`): each forwarded request is tagged with the guard
of the budget it is charged to, so the same code that guards a Python SDK client decides, sends,
meters and settles it. A streamed body is relayed chunk by chunk; a client that goes away closes
the upstream stream, which settles the call as abandoned (one record).
"""

from __future__ import annotations

import contextvars
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, nullcontext
from typing import Any

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from spendguard._adoption.running import RunTally
from spendguard._budget.budget import Budget
from spendguard._budget.events import CallEvent, subscribe, unsubscribe
from spendguard._budget.scopes import enter, leave, tags
from spendguard._core.errors import ConfigError, SpendguardError
from spendguard._costing.calls import Provider
from spendguard._gateway.config import GUARDED_HEADER, SCOPE_HEADER, GatewayConfig
from spendguard._gateway.keys import KeyStore, VirtualKey
from spendguard._gateway.refusals import error_response, refusal_response
from spendguard._gateway.upstreams import Router, Upstream
from spendguard._guard.metering import Guard, GuardOptions
from spendguard._guard.transport import ClientGuard, install, tag_request
from spendguard._providers.adapter import default_wire_adapter

__all__ = ["Gateway"]

_serving: contextvars.ContextVar[Gateway | None] = contextvars.ContextVar(
    "spendguard_gateway", default=None)

# Never forwarded: hop-by-hop headers, the gateway's own, and those httpx2 sets itself.
_REQUEST_DROPPED = frozenset({
    b"host", b"content-length", b"transfer-encoding", b"connection", b"keep-alive",
    b"proxy-connection", b"proxy-authorization", b"te", b"trailer", b"upgrade",
    b"accept-encoding"})
_RESPONSE_DROPPED = frozenset({b"transfer-encoding", b"connection", b"keep-alive"})
_AUTH_HEADERS = (b"authorization", b"x-api-key", b"api-key", b"x-goog-api-key")
_DECODABLE = ("gzip", "deflate")  # what the stream meter reads (spendguard._guard.sse)
_MAX_CACHED = 4096


class _Denied(Exception):
    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class Gateway:
    """One gateway: its config, budgets, the outbound client and the ASGI ``app``."""

    def __init__(self, config: GatewayConfig, *,
                 transport: httpx2.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self.router = Router(config.upstreams)
        self.budget = self._new_budget(config.limit_usd, config.scope, config.period)
        self.keys = KeyStore(config.keys_file) if config.keys_file else None
        self.tally = RunTally()
        self._transport = transport
        self._client: httpx2.AsyncClient | None = None
        self._budgets: dict[tuple[str, str], Budget | None] = {}
        self._guards: dict[tuple[str, int], ClientGuard] = {}
        self._timeout = httpx2.Timeout(config.upstream_timeout_s,
                                       connect=config.connect_timeout_s).as_dict()
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
        self.app = Starlette(routes=[
            Route("/healthz", self.healthz, methods=["GET"]),
            Route("/spendguard/v1/summary", self.summary, methods=["GET"]),
            Route("/{path:path}", self.proxy, methods=methods),
        ], lifespan=self._lifespan)

    # -- lifecycle ------------------------------------------------------------------------

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        limits = httpx2.Limits(max_connections=1024, max_keepalive_connections=256)
        self._client = httpx2.AsyncClient(transport=self._transport, limits=limits,
                                          follow_redirects=False)
        install(self._client)
        subscribe(self._count)
        try:
            yield
        finally:
            unsubscribe(self._count)
            await self._client.aclose()

    def _count(self, event: CallEvent) -> None:
        if _serving.get() is self:  # events of this gateway's calls only
            self.tally(event)

    # -- budgets --------------------------------------------------------------------------

    def _new_budget(self, limit_usd: str | None, scope: str,
                    period: str | None) -> Budget | None:
        if limit_usd is None:
            return None
        budget = Budget(limit_usd, scope=scope, period=period, ledger=self.config.ledger,
                        enforce=not self.config.observe)
        if self.config.per_user_usd is not None:
            budget.per("user", limit_usd=self.config.per_user_usd)
        return budget

    def _budget_for(self, key: VirtualKey | None, scope: str | None) -> Budget | None:
        """The budget a request is charged to: the key's or the gateway's, or a scope nested
        under it (``x-spendguard-scope``)."""
        cache_key = (key.id if key is not None else "", scope or "")
        if cache_key in self._budgets:
            return self._budgets[cache_key]
        if len(self._budgets) > _MAX_CACHED:
            self._budgets.clear()
            self._guards.clear()
        base = self.budget
        if key is not None:
            base = self._new_budget(key.limit_usd, key.scope, key.period)
        budget = base
        if scope:
            if base is None:
                raise ConfigError(f"{SCOPE_HEADER}: this gateway has no budget to nest scope "
                                  f"{scope!r} under; start it with --budget USD")
            budget = base.child(scope, limit_usd=self.config.scope_limit_usd or base.limit_usd)
        self._budgets[cache_key] = budget
        return budget

    def _guard(self, upstream: Upstream, budget: Budget | None) -> ClientGuard:
        cache_key = (upstream.name, id(budget))
        tag = self._guards.get(cache_key)
        if tag is None:
            options = GuardOptions(platform=upstream.platform,
                                   allow_unpriced=self.config.allow_unpriced)
            guard = Guard(upstream.provider, budget, options)
            tag = self._guards[cache_key] = ClientGuard(guard)
        return tag

    # -- who pays -------------------------------------------------------------------------

    def _authorize(self, upstream: Upstream, headers: list[tuple[bytes, bytes]],
                   ) -> tuple[list[tuple[bytes, bytes]], VirtualKey | None]:
        """The headers to forward, and the virtual key presented (with virtual keys on, the
        real provider key replaces it; without, the caller's key passes through untouched)."""
        if self.keys is None:
            return headers, None
        presented = None
        for header, raw in headers:
            if header in _AUTH_HEADERS:
                text = raw.decode("latin-1").strip()
                presented = text[7:].strip() if text.lower().startswith("bearer ") else text
                if presented:
                    break
        key = self.keys.find(presented) if presented else None
        if key is None:
            raise _Denied(401, "spendguard gateway: this gateway takes virtual keys only; send "
                               "the key `spendguard gateway keys create` gave you as your API "
                               "key", "invalid_virtual_key")
        real = self.config.provider_keys.get(upstream.key_env or "")
        if not real:
            raise _Denied(502, f"spendguard gateway: no provider key for upstream "
                               f"{upstream.name!r}; set {upstream.key_env} in the gateway's "
                               "environment", "no_provider_key")
        value = f"Bearer {real}" if upstream.auth_header == "authorization" else real
        kept = [(n, v) for n, v in headers if n not in _AUTH_HEADERS]
        return [*kept, (upstream.auth_header.encode(), value.encode("latin-1"))], key

    # -- routes ---------------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "upstreams": sorted(self.router.upstreams)})

    async def summary(self, request: Request) -> Response:
        """This process's calls since it started, and the gateway budget's period so far."""
        data: dict[str, Any] = {"gateway": self.tally.as_dict()}
        budget = self.budget
        if budget is not None:
            def read() -> dict[str, Any]:
                totals = budget.totals()
                return {"scope": budget.scope, "period": budget.period,
                        "limit_usd": str(budget.limit_usd), "spent_usd": str(totals.spent_usd),
                        "reserved_usd": str(totals.reserved_usd),
                        "remaining_usd": str(budget.remaining), "calls": totals.calls}
            try:
                data["budget"] = await anyio.to_thread.run_sync(read)
            except SpendguardError as exc:
                data["budget"] = {"scope": budget.scope, "error": str(exc)}
        return JSONResponse(data)

    async def proxy(self, request: Request) -> Response:
        path = request.url.path
        routed = self.router.route(path, request.headers)
        if routed is None:
            # Answered in the shape of the wire spoken where no provider is named.
            return error_response(
                Provider(default_wire_adapter().name), 404,
                f"spendguard gateway: no upstream serves {path}; use /v1/"
                "... (OpenAI, Anthropic) or /<upstream>/... for one of "
                f"{', '.join(sorted(self.router.upstreams))}", code="no_upstream")
        upstream, url = routed
        if request.url.query:
            url = f"{url}?{request.url.query}"
        provider = upstream.provider
        raw = list(request.headers.raw)
        guarded = self._guarded_by_run(raw)
        try:
            headers, key = self._authorize(upstream, raw)
            budget = self._budget_for(key, request.headers.get(SCOPE_HEADER))
        except _Denied as denied:
            return error_response(provider, denied.status, str(denied), code=denied.code)
        except ConfigError as exc:
            return error_response(provider, 400, f"spendguard gateway: {exc}", code="bad_scope")
        body = await self._read_body(request, provider)
        if isinstance(body, Response):
            return body
        out = httpx2.Request(request.method, url, headers=_forwarded(headers), content=body,
                             extensions={"timeout": self._timeout})
        if not guarded:
            tag_request(out, self._guard(upstream, budget))
        assert self._client is not None  # set by the lifespan
        entered = self.budget if key is not None and self.budget is not None else None
        token = _serving.set(self)
        if entered is not None:
            enter(entered)  # a virtual key's calls count toward the gateway's budget too
        try:
            with tags(virtual_key=key.id) if key is not None else nullcontext():
                response = await self._client.send(out, stream=True)
        except SpendguardError as exc:
            return refusal_response(provider, exc)
        except httpx2.TimeoutException as exc:
            return error_response(provider, 504, f"spendguard gateway: upstream "
                                  f"{upstream.name!r} timed out ({type(exc).__name__})",
                                  code="upstream_timeout", retry=True)
        except httpx2.HTTPError as exc:
            return error_response(provider, 502, f"spendguard gateway: upstream "
                                  f"{upstream.name!r} failed ({type(exc).__name__}: {exc})",
                                  code="upstream_error", retry=True)
        finally:
            if entered is not None:
                leave(entered)
            _serving.reset(token)
        return _Relay(self, response)  # type: ignore[return-value]

    def _guarded_by_run(self, headers: list[tuple[bytes, bytes]]) -> bool:
        secret = self.config.guarded_token
        if secret is None:
            return False
        name, expected = GUARDED_HEADER.encode(), secret.encode("latin-1")
        return any(n == name and secrets.compare_digest(v, expected) for n, v in headers)

    async def _read_body(self, request: Request, provider: Provider) -> bytes | Response:
        limit = self.config.max_body_bytes
        too_large = error_response(provider, 413, f"spendguard gateway: request body above "
                                   f"this gateway's limit of {limit} bytes (--max-body-bytes)",
                                   code="request_too_large")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return too_large
        chunks: list[bytes] = []
        size = 0
        try:
            with anyio.move_on_after(self.config.body_timeout_s) as waited:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        return too_large
                    chunks.append(chunk)
        except ClientDisconnect:
            return Response(status_code=499)  # nobody is listening; nothing was sent
        if waited.cancelled_caught:
            return error_response(provider, 408, "spendguard gateway: the request body took "
                                  f"longer than {self.config.body_timeout_s:g} s to arrive",
                                  code="request_timeout", retry=True)
        return b"".join(chunks)


def _forwarded(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The request headers sent upstream: hop-by-hop and spendguard's own left out, and the
    accepted encodings narrowed to those the stream meter can read."""
    out = [(name, value) for name, value in headers
           if name not in _REQUEST_DROPPED and not name.startswith(b"x-spendguard-")]
    accepted = [coding.strip().split(";")[0] for name, value in headers
                if name == b"accept-encoding" for coding in value.decode("latin-1").split(",")]
    usable = [coding for coding in accepted if coding in _DECODABLE]
    out.append((b"accept-encoding", ", ".join(usable).encode() if usable else b"identity"))
    return out


class _UpstreamCut(RuntimeError):
    """The upstream broke mid-body: the client's connection is dropped so it sees a cut body."""


class _Relay:
    """An ASGI response relaying the upstream's status, headers and body as they arrive."""

    def __init__(self, gateway: Gateway, response: httpx2.Response) -> None:
        self.gateway = gateway
        self.response = response

    def _headers(self) -> list[tuple[bytes, bytes]]:
        dropped = _RESPONSE_DROPPED
        if self.response.is_stream_consumed:  # read already (a test transport): decoded
            dropped = dropped | {b"content-encoding", b"content-length"}
        return [(name.lower(), value) for name, value in self.response.headers.raw
                if name.lower() not in dropped]

    async def _body(self) -> AsyncIterator[bytes]:
        if self.response.is_stream_consumed:
            yield self.response.content
            return
        async for chunk in self.response.aiter_raw():
            yield chunk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = self.response
        token = _serving.set(self.gateway)
        cut: BaseException | None = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_watch_disconnect, receive, group.cancel_scope)
                await send({"type": "http.response.start", "status": response.status_code,
                            "headers": self._headers()})
                try:
                    async for chunk in self._body():
                        await send({"type": "http.response.body", "body": chunk,
                                    "more_body": True})
                except httpx2.HTTPError as exc:
                    cut = exc
                else:
                    await send({"type": "http.response.body", "body": b"",
                                "more_body": False})
                group.cancel_scope.cancel()
        finally:
            # Closing settles the call (a stream left early is charged as abandoned); shielded,
            # so a cancelled relay (client gone, shutdown) still gets there.
            with anyio.CancelScope(shield=True):
                await response.aclose()
            _serving.reset(token)
        if cut is not None:
            raise _UpstreamCut(f"upstream body cut short: {type(cut).__name__}") from cut


async def _watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


def provider_keys_from(environ: Mapping[str, str], upstreams: list[Upstream]) -> dict[str, str]:
    """The real provider keys a gateway with virtual keys sends, read from ``environ``."""
    return {u.key_env: environ[u.key_env] for u in upstreams
            if u.key_env and environ.get(u.key_env)}
