"""The pure core of the choke point: decide before sending, settle after. No I/O of its own.

The sync and async transports (:mod:`spendguard.transport`) are thin shells over
:class:`Guard`: they call :meth:`Guard.begin` before forwarding a request, then either
:meth:`Attempt.settle_body` with a whole response body or feed a :class:`StreamMeter` as a
streamed body flows. Every path ends in exactly one settle or release of the reservation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2

from spendguard.budget import Budget
from spendguard.calls import Call, Endpoint, Provider, build_call, classify, parse_body
from spendguard.costing import cost
from spendguard.errors import ProviderResponseError, SpendguardError
from spendguard.estimate import Estimate, estimate_call, worst_cost_usd
from spendguard.ledger.base import CallInfo
from spendguard.prices import PriceTable, default_table
from spendguard.providers import StreamReader, stream_reader
from spendguard.reservations import Reservation, remaining_for_call, reserve_call
from spendguard.sse import ContentDecoder, SSEDecoder
from spendguard.tokens import count_tokens
from spendguard.usage import Usage, usage_from

__all__ = ["Attempt", "Guard", "GuardOptions", "StreamMeter"]

log = logging.getLogger("spendguard")

_MIN_CAPPED_OUTPUT = 1

PRERESERVED_HEADER = "x-spendguard-prereserved"
"""A request carrying a live token from :func:`prereserved` passes the guard unpriced."""
_prereserved_tokens: set[str] = set()
_prereserved_lock = threading.Lock()


@contextmanager
def prereserved() -> Iterator[dict[str, str]]:
    """Headers that let requests sent inside the block through the guard unpriced.

    For spendguard.batch()'s own submissions (POST .../batches), whose worst case it reserved
    in the ledger itself. The token is random and lives only inside the block, in this
    process: a header made up elsewhere opens nothing (that request is priced, or refused).
    """
    token = secrets.token_hex(16)
    with _prereserved_lock:
        _prereserved_tokens.add(token)
    try:
        yield {PRERESERVED_HEADER: token}
    finally:
        with _prereserved_lock:
            _prereserved_tokens.discard(token)


@dataclass(frozen=True, slots=True)
class GuardOptions:
    """How a guarded client behaves; set on the client constructors."""

    cap_output: bool = False
    allow_unpriced: bool = False
    store_prompts: bool = False
    prices: PriceTable | None = None
    cache_order: Callable[[str, str, dict[str, Any]], dict[str, Any]] | None = None
    """Rewrites a priced request body (provider, endpoint, body) before it is estimated."""


@dataclass(slots=True)
class Attempt:
    """One HTTP attempt of a priced call, from reservation to settlement."""

    guard: Guard
    call: Call
    estimate: Estimate
    reservation: Reservation
    started: float
    attempt: int
    request_id: str | None = None
    _done: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _finish_once(self) -> bool:
        with self._lock:
            if self._done:
                return False
            self._done = True
            return True

    def latency_s(self) -> float:
        return time.perf_counter() - self.started

    def release(self, reason: str) -> None:
        """The provider did not bill this attempt (refused, error status, never connected)."""
        if self._finish_once():
            self.reservation.release(reason)

    def settle(self, usage: Usage, *, status: str = "ok", model: str | None = None) -> None:
        """Record what the attempt really cost, from usage (reported or estimated)."""
        if not self._finish_once():
            return
        priced_model = self.call.model
        table = self.guard.table
        if model and model != priced_model:
            try:
                table.get(model)
                priced_model = model
            except SpendguardError:
                pass  # the response names a snapshot we don't know; the request's model prices it
        tier = usage.service_tier or self.call.service_tier
        actual = cost(priced_model, usage, service_tier=_billable_tier(tier), table=table)
        self.reservation.settle(
            actual_usd=actual.total,
            tokens=usage.token_counts(),
            usage_estimated=usage.estimated,
            table_version=actual.table_version,
            latency_s=self.latency_s(),
            request_id=self.request_id,
            status=status,
        )

    def settle_worst(self, status: str) -> None:
        """The attempt may have been billed but we cannot know how much: count the worst case."""
        if not self._finish_once():
            return
        self.reservation.settle(
            actual_usd=self.estimate.worst_usd,
            tokens={"input": int(self.estimate.input_tokens),
                    "output": self.estimate.output_tokens_worst},
            usage_estimated=True,
            table_version=self.estimate.table_version,
            latency_s=self.latency_s(),
            request_id=self.request_id,
            status=status,
        )

    def settle_body(self, status_code: int, headers: httpx2.Headers, raw: bytes, *,
                    decoded: bool = False) -> None:
        """Settle from a complete response body (content-encoded unless ``decoded``)."""
        self.request_id = _request_id(headers)
        if status_code >= 400:
            self.release(f"http {status_code}")
            return
        decoder = ContentDecoder(None if decoded else headers.get("content-encoding"))
        try:
            body = json.loads(decoder.decode(raw) + decoder.flush())
            if (self.call.endpoint is Endpoint.RESPONSES and isinstance(body, dict)
                    and body.get("status") in ("queued", "in_progress")
                    and body.get("usage") is None):
                # background=True: billed later, out of our sight; count the worst case now.
                self.settle_worst("background")
                return
            usage = usage_from(self.call.provider.value, body, endpoint=self.call.endpoint.value)
        except (ValueError, SpendguardError) as exc:
            # The provider answered (and billed); the body is unreadable to us. Never lose the
            # call: count the worst case and say so, but let the caller have their response.
            warnings.warn(
                ProviderResponseError(
                    f"spendguard could not read usage from a {self.call.provider.value} "
                    f"{self.call.endpoint.value} response ({exc}); the call is recorded at its "
                    "worst-case cost",
                    provider=self.call.provider.value,
                ).args[0],
                RuntimeWarning,
                stacklevel=2,
            )
            self.settle_worst("usage_unreadable")
            return
        self.settle(usage, model=body.get("model") if isinstance(body, dict) else None)

    def stream_meter(self, headers: httpx2.Headers) -> StreamMeter:
        self.request_id = _request_id(headers)
        return StreamMeter(self, ContentDecoder(headers.get("content-encoding")),
                           stream_reader(self.call.provider.value, self.call.endpoint.value))


class StreamMeter:
    """Reads usage from a server-sent-event stream as it flows; settles once when it ends."""

    def __init__(self, attempt: Attempt, decoder: ContentDecoder, reader: StreamReader) -> None:
        self.attempt = attempt
        self._decoder = decoder
        self._sse = SSEDecoder()
        self._reader = reader

    def feed(self, chunk: bytes) -> None:
        try:
            for name, data in self._sse.feed(self._decoder.decode(chunk)):
                if data is not None:
                    self._reader.feed(name, data)
        except Exception:  # reading must never break the caller's stream
            log.debug("spendguard could not read a stream chunk", exc_info=True)

    def finish(self, *, error: BaseException | None = None) -> None:
        """The stream closed: completely, early (the caller stopped), or broken."""
        if self.attempt._done:
            return
        try:
            for name, data in self._sse.feed(self._decoder.flush()):
                if data is not None:
                    self._reader.feed(name, data)
            for name, data in self._sse.flush():
                if data is not None:
                    self._reader.feed(name, data)
        except Exception:
            log.debug("spendguard could not read the end of a stream", exc_info=True)
        usage = self._reader.usage()
        if usage is not None and self._reader.complete:
            self.attempt.settle(usage, model=self._reader.model)
            return
        if self._reader.complete:
            status = "ok"  # finished, but the request did not ask for usage in the stream
        else:
            status = "stream_broken" if error is not None else "stream_abandoned"
        self.attempt.settle(self._estimated_usage(), status=status, model=self._reader.model)

    def _estimated_usage(self) -> Usage:
        # No usage arrived (cut short, or the request did not ask for it): the input is what
        # was counted before sending; the output is counted from the text received.
        call = self.attempt.call
        output = 0
        text = self._reader.output_text()
        if text:
            output = int(count_tokens(call.model, text=text))
        output = max(output, self._reader.output_events)
        reported = self._reader.usage()
        if reported is not None:
            output = max(output, reported.output_tokens)
            return Usage(input_tokens=reported.input_tokens,
                         cache_read_tokens=reported.cache_read_tokens,
                         cache_write_tokens=dict(reported.cache_write_tokens),
                         output_tokens=output, speed=reported.speed,
                         inference_geo=reported.inference_geo,
                         service_tier=reported.service_tier, estimated=True)
        return Usage(input_tokens=int(self.attempt.estimate.input_tokens), output_tokens=output,
                     speed=call.speed, inference_geo=call.inference_geo, estimated=True)


def _billable_tier(tier: str | None) -> str | None:
    return None if tier in (None, "auto", "default", "standard") else tier


def _request_id(headers: httpx2.Headers) -> str | None:
    return headers.get("x-request-id") or headers.get("request-id")


def _attempt_number(request: httpx2.Request) -> int:
    try:
        return int(request.headers.get("x-stainless-retry-count", "0")) + 1
    except ValueError:
        return 1


class Guard:
    """Decides, for one client, whether each request may go and what it may cost."""

    def __init__(self, provider: Provider, budget: Budget | None,
                 options: GuardOptions | None = None) -> None:
        self.provider = provider
        self.budget = budget
        self.options = options or GuardOptions()

    @property
    def table(self) -> PriceTable:
        return self.options.prices or default_table()

    def is_priced(self, request: httpx2.Request) -> bool:
        """Whether the request needs a reservation, from its method and path alone (its body is
        not touched: an upload streams through unread). Raises for an endpoint the guard
        refuses; takes off a :func:`prereserved` token, which is never sent on."""
        token = request.headers.pop(PRERESERVED_HEADER, None)
        if token is not None and token in _prereserved_tokens:
            return False
        endpoint = classify(self.provider, request.method, request.url.path,
                            allow_unpriced=self.options.allow_unpriced)
        return endpoint is not None and endpoint is not Endpoint.FREE

    def begin(self, request: httpx2.Request, body: bytes) -> tuple[httpx2.Request,
                                                                   Attempt | None]:
        """Reserve the worst case of a priced request, or refuse it; free requests pass."""
        token = request.headers.get(PRERESERVED_HEADER)
        if token is not None:
            request = _without_header(request, PRERESERVED_HEADER)  # never sent on
            if token in _prereserved_tokens:
                return request, None
        endpoint = classify(self.provider, request.method, request.url.path,
                            allow_unpriced=self.options.allow_unpriced)
        if endpoint is None or endpoint is Endpoint.FREE:
            return request, None
        parsed = parse_body(body)
        if self.options.cache_order is not None:
            ordered = self.options.cache_order(self.provider.value, endpoint.value, parsed)
            if ordered != parsed:
                request, body = _with_body(request, ordered)
                parsed = ordered
        call = build_call(self.provider, endpoint, parsed)
        estimate = estimate_call(call, self.table)
        if self.options.cap_output and call.cap_field is not None:
            request, call, estimate = self._fit_output(request, call, estimate)
        info = CallInfo(
            provider=call.provider.value,
            model=call.model,
            endpoint=call.endpoint.value,
            attempt=_attempt_number(request),
            request_id=None,
            prompt_hash=hashlib.sha256(body).hexdigest(),
            prompt_text=body.decode("utf-8", "replace") if self.options.store_prompts else None,
            estimated_input_tokens=int(estimate.input_tokens),
            estimated_output_tokens=estimate.output_tokens_worst,
            input_exact=estimate.exact_input,
        )
        reservation = reserve_call(self.budget, estimate.worst_usd, call=info)
        return request, Attempt(self, call, estimate, reservation, time.perf_counter(),
                                info.attempt)

    def _fit_output(self, request: httpx2.Request, call: Call,
                    estimate: Estimate) -> tuple[httpx2.Request, Call, Estimate]:
        """Lower the output cap so the worst case fits what the budget has left."""
        remaining = remaining_for_call(self.budget)
        if remaining is None or estimate.worst_usd <= remaining:
            return request, call, estimate
        input_tokens = int(estimate.input_tokens)
        low, high = 0, estimate.output_tokens_worst // max(call.choices, 1)
        while low < high:  # the largest per-choice cap whose worst case fits
            mid = (low + high + 1) // 2
            if worst_cost_usd(call, input_tokens, mid * call.choices, self.table) <= remaining:
                low = mid
            else:
                high = mid - 1
        if low < _MIN_CAPPED_OUTPUT or call.cap_field is None:
            return request, call, estimate  # cannot fit: reserve as is, and be refused
        body = dict(call.body)
        body[call.cap_field] = low
        new_call = build_call(call.provider, call.endpoint, body)
        new_estimate = Estimate(
            estimate.model, estimate.input_tokens, low * call.choices,
            worst_cost_usd(new_call, input_tokens, low * call.choices, self.table),
            estimate.table_version,
        )
        new_request, _ = _with_body(request, body)
        log.info("spendguard capped %s output at %d tokens to fit the budget", call.model, low)
        return new_request, new_call, new_estimate


def _with_body(request: httpx2.Request, body: dict[str, Any]) -> tuple[httpx2.Request, bytes]:
    """The same request carrying a rewritten JSON body."""
    content = json.dumps(body, separators=(",", ":")).encode()
    headers = [(k, v) for k, v in request.headers.multi_items()
               if k.lower() != "content-length"]
    return httpx2.Request(request.method, request.url, headers=headers, content=content,
                          extensions=request.extensions), content


def _without_header(request: httpx2.Request, name: str) -> httpx2.Request:
    headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != name]
    return httpx2.Request(request.method, request.url, headers=headers, content=request.content,
                          extensions=request.extensions)


def is_refusal(exc: BaseException) -> bool:
    """True for errors the guard raises on purpose before sending."""
    return isinstance(exc, SpendguardError)

