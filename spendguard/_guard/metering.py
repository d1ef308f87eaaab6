"""The pure core of the choke point: decide before sending, settle after. No I/O of its own.

The sync and async transports (:mod:`spendguard._guard.transport`) are thin shells over
:class:`Guard`: they call :meth:`Guard.begin` before forwarding a request, then either
:meth:`Attempt.settle_body` with a whole response body or feed a :class:`StreamMeter` as a
streamed body flows. Every path ends in exactly one settle or release of the reservation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

import httpx2

from spendguard._budget.budget import Budget
from spendguard._budget.events import listening
from spendguard._budget.learned_bounds import learned_input_bound
from spendguard._budget.ledger.base import CallInfo
from spendguard._budget.reservations import Reservation, remaining_for_call, reserve_call
from spendguard._budget.scopes import collect_budgets
from spendguard._budget.templates import end_user_of
from spendguard._core.errors import UnknownModelError
from spendguard._core.jsontext import loads
from spendguard._core.periods import read_clock
from spendguard._costing.calls import (
    Call,
    Endpoint,
    Provider,
    build_call,
    classify,
    parse_body,
    with_output_cap,
)
from spendguard._costing.cost import billable_tier, total_usd
from spendguard._costing.estimate import Estimate, estimate_call, worst_cost_usd
from spendguard._costing.eventstream import EVENT_STREAM_TYPE, EventStreamDecoder
from spendguard._costing.prices import ModelPrice, PriceTable, default_table
from spendguard._costing.routing import Route, route_request
from spendguard._costing.tokens import TokenCount
from spendguard._costing.usage import Usage
from spendguard._guard.facts import call_facts, response_facts
from spendguard._guard.policies import (
    AttemptLinks,
    Degraded,
    call_tags,
    check_runaways,
    degrade,
)
from spendguard._guard.reaches.httpx_private import raw_header_items
from spendguard._guard.reaches.stainless import RETRY_COUNT_HEADER
from spendguard._guard.settling import (
    base_rate_usage,
    check_readable,
    describe,
    log_once,
    overrun_note,
)
from spendguard._guard.sse import ContentDecoder, SSEDecoder
from spendguard._guard.stream_meter import Framing, StreamMeter
from spendguard._providers import stream_reader, usage_reader
from spendguard._providers.adapter import adapter_for

__all__ = ["Attempt", "Guard", "GuardOptions", "StreamMeter", "response_headers"]

log = logging.getLogger("spendguard")

REFUSED_TAG = "spendguard.refused"
"""The tag on the record of a call refused before sending for want of a price."""
_T = TypeVar("_T")

_MIN_CAPPED_OUTPUT = 1
_SIGV4 = "AWS4-HMAC-SHA256"

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
    platform: str | None = None
    """``"azure"`` for Azure OpenAI clients: requests name deployments (see routing)."""


@dataclass(slots=True)
class Attempt:
    """One HTTP attempt of a priced call, from reservation to settlement.

    After the request was handed to the provider nothing here raises: whatever the response,
    the attempt ends in exactly one ledger record (see :mod:`spendguard._guard.settling` for how an
    unreadable, implausible or cut-short response is charged).
    """

    guard: Guard
    call: Call
    estimate: Estimate
    reservation: Reservation
    started: float
    attempt: int
    request_id: str | None = None
    routed: bool = False
    """Priced through a platform / host route: the response's model name must not reprice it."""
    unguarded: bool = False
    """Sent without a price (opted in): priced from the response's model, $0 if unknown."""
    body_written: bool = False
    """The connection took the request's last byte: from then on the provider may bill it."""
    _done: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _finish_once(self) -> bool:
        with self._lock:
            if self._done:
                return False
            self._done = True
            return True

    @property
    def finished(self) -> bool:
        """Whether this attempt was already settled or released (each happens once)."""
        return self._done

    def latency_s(self) -> float:
        return time.perf_counter() - self.started

    def release(self, reason: str) -> None:
        """The provider did not bill this attempt (refused, error status, never connected)."""
        if self._finish_once():
            self._record(lambda: self.reservation.release(reason))

    def settle(self, usage: Usage, *, status: str = "ok", model: str | None = None,
               note: str | None = None) -> None:
        """Record what the attempt really cost, from usage (reported or estimated)."""
        if self._done:
            return
        try:
            check_readable(usage)
            model_price, actual_usd = self._price(usage, model)
            overrun = overrun_note(usage, actual_usd, self.estimate.worst_usd, model_price,
                                   self.call.choices)
        except Exception as exc:  # a label, counter or number we cannot price
            if self.unguarded:  # opted into pricing from the response, and that failed too
                self._settle_unpriced(usage, exc)
            else:
                self.settle_unreadable(exc, read=usage)
            return
        if overrun is not None:  # logged and told to on_warn by the reservation's settle
            status = "overrun" if status == "ok" else status
            note = overrun if note is None else f"{note}; {overrun}"
        if self._finish_once():
            # The model the provider answered with, for call events (telemetry).
            self.reservation.response_model = (
                model if model and (model.__class__ is str or isinstance(model, str))
                else self.call.model)
            # Priced here, counted by a Usage, a status word of the guard's own: settled
            # without checking them again.
            self._record(self.reservation.settle_checked, actual_usd=actual_usd,
                         tokens=usage.token_counts(), usage_estimated=usage.estimated,
                         table_version=model_price.table_version,
                         latency_s=time.perf_counter() - self.started,
                         request_id=self.request_id, status=status, note=note)

    def _settle_unpriced(self, usage: Usage, exc: BaseException) -> None:
        self._log_cause("unpriced", f"spendguard could not price an unguarded call "
                        f"({describe(exc)}); it is recorded at $0 with status 'unpriced'")
        if self._finish_once():
            self._record(lambda: self.reservation.settle(
                actual_usd=Decimal(0), tokens=usage.token_counts(),
                usage_estimated=usage.estimated, table_version=self.guard.table.version,
                latency_s=self.latency_s(), request_id=self.request_id, status="unpriced"))

    def _price(self, usage: Usage, model: str | None) -> tuple[ModelPrice, Decimal]:
        """The entry that prices the bill, and the bill in USD (``cost(...).total``)."""
        model_price = self.estimate.price  # the entry that priced the reservation
        if model and model != self.call.model and not self.routed and isinstance(model, str):
            # The snapshot that answered, when the table knows it (a membership test: a miss
            # would build an error with close-match suggestions on every call).
            table = self.guard.table
            if model in table:
                model_price = table.get(model, self.estimate.at)
        if model_price is None:
            model_price = self.guard.table.get(self.call.model, self.estimate.at)
        # A tier the usage reports is the one billed (total_usd reads it): the request's
        # only where it reports none.
        tier = None if usage.service_tier is not None or self.call.service_tier is None \
            else billable_tier(self.call.service_tier)
        return model_price, total_usd(model_price, usage, service_tier=tier)

    def settle_worst(self, status: str, note: str | None = None,
                     floor_usd: Decimal | None = None) -> None:
        """The attempt may have been billed but we cannot know how much: count the worst case
        (or ``floor_usd`` when that is more)."""
        if not self._finish_once():
            return
        charge = self.estimate.worst_usd
        if floor_usd is not None and floor_usd > charge:
            charge = floor_usd
        self._record(lambda: self.reservation.settle(
            actual_usd=charge,
            tokens={"input": int(self.estimate.input_tokens),
                    "output": self.estimate.output_tokens_worst},
            usage_estimated=True,
            table_version=self.estimate.table_version,
            latency_s=self.latency_s(),
            request_id=self.request_id,
            status=status,
            note=note,
        ))

    def settle_unreadable(self, exc: BaseException, *, read: Usage | None = None) -> None:
        """Usage that cannot be read or priced: the worst case, or what the usage that could be
        read costs at base rates when that is more; flagged ``usage_unreadable``."""
        if self._done:
            return
        reason = describe(exc)
        floor = None
        if read is not None:
            try:
                labels_dropped = base_rate_usage(read)
                check_readable(labels_dropped)
                floor = self._price(labels_dropped, None)[1]
            except Exception:
                floor = None  # the counts themselves are unusable: the worst case it is
        # One cause, one warning: the reason without its numbers (a count, an id) names it.
        self._log_cause(re.sub(r"\d+", "#", reason),
                        f"spendguard could not read usage from a {self.call.provider.value} "
                        f"{self.call.endpoint.value} response ({reason}); the call is recorded "
                        "at its worst-case cost, status usage_unreadable")
        self.settle_worst("usage_unreadable", note=f"usage unreadable: {reason}",
                          floor_usd=floor)

    def _log_cause(self, kind: str, message: str) -> None:
        log_once((self.call.provider.value, self.call.endpoint.value, kind), message)

    def _record(self, write: Callable[..., object], /, **arguments: Any) -> None:
        try:
            write(**arguments)
        except Exception:
            # The ledger could not take the record. Raising here would fail a call the provider
            # already answered (and make the SDK send it again); the reservation stays held
            # and is charged at its worst case when it expires (``spendguard ledger recover``).
            log.error("spendguard could not record a %s call in the ledger; its reservation "
                      "%s stays held until it expires and is charged at its worst case",
                      self.call.model, self.reservation.id, exc_info=True)

    def safely(self, action: Callable[..., _T], *args: Any, **kwargs: Any) -> _T | None:
        """Run a settling step after sending; any failure of spendguard's own is logged and
        the attempt charged conservatively instead of reaching the caller."""
        try:
            return action(*args, **kwargs)
        except Exception as exc:
            self.settle_unreadable(exc)
            return None

    def settle_body(self, status_code: int, found: Mapping[str, str], raw: bytes, *,
                    decoded: bool = False) -> Any:
        """Settle from a complete response body (content-encoded unless ``decoded``);
        ``found`` is what :func:`response_headers` read from the response. Returns the body
        decoded from JSON, for the SDK to take instead of decoding it again; None when it was
        not decoded (an error status, a body that is not JSON)."""
        self.request_id = _request_id(found)
        if status_code >= 400:
            self.release(f"http {status_code}")
            return None
        body = None
        adapter = adapter_for(self.call.provider)
        try:
            encoding = None if decoded else found.get("content-encoding")
            if encoding:
                decoder = ContentDecoder(encoding)
                raw = decoder.decode(raw) + decoder.flush()
            body = loads(raw)
            later = adapter.billed_later(self.call.endpoint, body)
            if later is not None:
                # Billed later, out of our sight; count the worst case now.
                self.settle_worst(later)
                return body
            if adapter.reports_no_usage(self.call.endpoint, body):
                # Billed as the input bounded before sending.
                self.settle(Usage(input_tokens=int(self.estimate.input_tokens), estimated=True))
                return body
            # The member itself names the endpoint: the reader takes it without parsing a name.
            usage = self.guard.read_usage(body, endpoint=self.call.endpoint)
        except Exception as exc:
            # The provider answered (and billed); the body is unreadable to us. Never lose the
            # call: count the worst case and say so, but let the caller have their response.
            self.settle_unreadable(exc)
            return body
        if listening() and isinstance(body, dict):  # for telemetry: the response's id
            self._note_response(body)
        # The adapter's bookkeeping (an explicit cache's reply noted), and the call's note.
        note = adapter.settled_reply(self.call.endpoint, body, usage)
        # The model that answered, told by class and membership (no call, every reply).
        self.settle(usage, model=body["model"] if type(body) is dict and "model" in body
                    else None, note=note)
        if note is not None:
            from spendguard._guard.cache_credit import credit_after_update  # noqa: PLC0415

            credit_after_update(self.guard, body, provider=self.call.provider.value)
        return body

    def _note_response(self, body: Mapping[str, Any]) -> None:
        try:
            self.reservation.response_id, self.reservation.finish_reasons = \
                response_facts(body)
        except Exception:  # a telemetry detail; the call is settled regardless
            log.debug("spendguard could not read a response's id", exc_info=True)

    def stream_meter(self, found: Mapping[str, str]) -> StreamMeter:
        """The meter of a streamed response (``found``: its :func:`response_headers`)."""
        self.request_id = _request_id(found)
        framing: Framing = SSEDecoder()
        if found.get("content-type", "").startswith(EVENT_STREAM_TYPE):
            framing = EventStreamDecoder()  # Bedrock: AWS event-stream frames, not SSE
        return StreamMeter(self, ContentDecoder(found.get("content-encoding")),
                           stream_reader(self.call.provider.value, self.call.endpoint.value),
                           framing)


_RESPONSE_HEADERS = frozenset({b"x-request-id", b"request-id", b"content-encoding",
                               b"content-type"})
_REQUEST_HEADERS = frozenset({b"authorization", RETRY_COUNT_HEADER.encode(),
                              PRERESERVED_HEADER.encode(), b"accept-encoding"})


def read_headers(headers: httpx2.Headers, names: frozenset[bytes]) -> dict[str, str]:
    """The values ``headers.get`` gives for those of ``names`` (lower case) that are present.

    One pass over the raw headers instead of one ``get`` per name (each ``get`` of httpx
    decodes and scans every header again). A repeated or non-ASCII header is read through
    ``get`` itself, which joins repeats and picks the headers' encoding. The pass reads
    httpx2's own list of (name as sent, name in lower case, value): ``raw`` would build a
    copy of it, and the names would be lowered again.
    """
    found: dict[str, str] = {}
    for _, name, value in raw_header_items(headers):
        if name in names:
            text = name.decode("ascii")
            if text in found:
                return _read_by_get(headers, names)
            try:
                found[text] = value.decode("ascii")
            except UnicodeDecodeError:
                return _read_by_get(headers, names)
    return found


def _read_by_get(headers: httpx2.Headers, names: frozenset[bytes]) -> dict[str, str]:
    return {n.decode(): headers[n.decode()] for n in names if n.decode() in headers}


def response_headers(headers: httpx2.Headers) -> dict[str, str]:
    """What settling reads from a response's headers (request id, encoding, content type),
    in one pass: read once per response, handed to :meth:`Attempt.settle_body` or
    :meth:`Attempt.stream_meter`."""
    return read_headers(headers, _RESPONSE_HEADERS)


def _request_id(found: Mapping[str, str]) -> str | None:
    # ``found.get("x-request-id") or found.get("request-id")``, by membership and indexing:
    # no call on the path of every response.
    if "x-request-id" in found and found["x-request-id"]:  # noqa: RUF019 - .get is a call
        return found["x-request-id"]
    if "request-id" in found:
        return found["request-id"]
    return None


def _attempt_number(retry_count: str) -> int:
    try:
        return int(retry_count) + 1
    except ValueError:
        return 1


class Guard:
    """Decides, for one client, whether each request may go and what it may cost."""

    def __init__(self, provider: Provider, budget: Budget | None,
                 options: GuardOptions | None = None) -> None:
        self.provider = provider
        self.budget = budget
        self.options = options or GuardOptions()
        self.links = AttemptLinks()
        self.read_usage = usage_reader(provider.value)  # what usage_from calls, found once

    @property
    def table(self) -> PriceTable:
        return self.options.prices or default_table()

    def after_free(self, request: httpx2.Request, response: httpx2.Response) -> None:
        """A free request's answer where it changes what was charged: an explicit cache ended
        before the expiry its storage was charged to (a Gemini ``caches.delete``), credited.
        Never raises."""
        if not 200 <= response.status_code < 300:
            return
        adapter = adapter_for(self.provider)
        name = adapter.ended_cache(request.method, request.url.path)
        if name is not None:
            from spendguard._guard.cache_credit import credit_unused_storage  # noqa: PLC0415

            credit_unused_storage(self, name, None, forget=True, provider=adapter.name)

    def admit(self, request: httpx2.Request) -> tuple[Endpoint, dict[str, str]] | None:
        """The endpoint of a request that needs a reservation, from its method and path alone
        (its body is not touched: an upload streams through unread), with what
        :meth:`begin` reads from its headers; None for a request that passes unpriced. Raises
        for an endpoint the guard refuses; takes off a :func:`prereserved` token, which is
        never sent on."""
        found = read_headers(request.headers, _REQUEST_HEADERS)  # one pass over the headers
        if PRERESERVED_HEADER in found \
                and request.headers.pop(PRERESERVED_HEADER) in _prereserved_tokens:
            return None
        path = request.url.path  # a property that decodes the path: read once
        endpoint = classify(self.provider, request.method, path,
                            allow_unpriced=self.options.allow_unpriced)
        if endpoint is not None and endpoint is not Endpoint.FREE:  # what this process saw
            endpoint = adapter_for(self.provider).priced_endpoint(
                endpoint, path, allow_unpriced=self.options.allow_unpriced)
        return None if endpoint is None or endpoint is Endpoint.FREE else (endpoint, found)

    def begin(self, request: httpx2.Request, body: bytes, endpoint: Endpoint,
              found: Mapping[str, str]) -> tuple[httpx2.Request, Attempt]:
        """Reserve the worst case of a request to a priced ``endpoint``, or refuse it
        (``endpoint`` and ``found`` are what :meth:`admit` gave).

        Its phases, named as in the per-call profile (``benchmarks/profile_call.py``):
        :meth:`_parse`, :meth:`_estimate` (count and price), policies (:meth:`_apply_policies`,
        then the runaway check on the body as sent), :meth:`_describe` (the call record) and
        reserve (:func:`reserve_call`).
        """
        # once per call: the default table is looked up under a lock
        table = self.options.prices or default_table()
        # Once per call: every policy below and the reservation read the same budgets.
        budgets = collect_budgets(self.budget)
        # A SigV4-signed request (Bedrock with AWS credentials) signs its body: rewriting it
        # would make the provider reject the call, so it is priced as sent.
        rewritable = "authorization" not in found \
            or not found["authorization"].startswith(_SIGV4)
        request, body, parsed, route, call = self._parse(request, body, endpoint, rewritable,
                                                         table)
        unguarded = route is not None and route.unguarded
        estimate = self._estimate(call, body if route is None else None, table, unguarded)
        request, body, parsed, call, estimate, degraded, bound_tags = self._apply_policies(
            request, body, parsed, call, estimate, route is None and rewritable,
            rewritable and not unguarded, budgets, table)
        attempt_number = 1  # the SDKs number a first attempt "0": no call to read that
        if RETRY_COUNT_HEADER in found and found[RETRY_COUNT_HEADER] != "0":
            attempt_number = _attempt_number(found[RETRY_COUNT_HEADER])
        prompt_hash = hashlib.sha256(body).hexdigest()
        check_runaways(self.budget, call, attempt=attempt_number, body_hash=prompt_hash,
                       worst_usd=estimate.worst_usd, budgets=budgets, at=estimate.at)
        info, tags = self._describe(request, body, parsed, call, estimate, route,
                                    attempt_number, prompt_hash, degraded, bound_tags, table,
                                    unguarded, budgets)
        reservation = reserve_call(self.budget, estimate.worst_usd, call=info, extra_tags=tags,
                                   budgets=budgets)
        return request, Attempt(self, call, estimate, reservation, time.perf_counter(),
                                attempt_number, routed=route is not None and not unguarded,
                                unguarded=unguarded)

    def _parse(self, request: httpx2.Request, body: bytes, endpoint: Endpoint,
               rewritable: bool, table: PriceTable,
               ) -> tuple[httpx2.Request, bytes, dict[str, Any], Route | None, Call]:
        """Phase "parse": the JSON body (cache-ordered when asked), its route, the call."""
        parsed = parse_body(body)
        if self.options.cache_order is not None and rewritable:
            ordered = self.options.cache_order(self.provider.value, endpoint, parsed)
            if ordered != parsed:
                request, body = _with_body(request, ordered)
                parsed = ordered
        try:
            route = route_request(self.provider, self.options.platform, request.url, parsed,
                                  table)
        except UnknownModelError as exc:
            self._record_refused(exc.name, endpoint, exc)
            raise
        call = build_call(self.provider, endpoint,
                          parsed if route is None else route.priced_body(parsed))
        return request, body, parsed, route, call

    def _estimate(self, call: Call, raw: bytes | None, table: PriceTable,
                  unguarded: bool) -> Estimate:
        """Phases "count" and "price": the call's worst case (``raw``: the bytes its body was
        parsed from, when it was)."""
        if unguarded:
            return Estimate(call.model, TokenCount(0, exact=False, method="unguarded"), 0,
                            Decimal(0), table.version)
        # The rates in force at the call's time, on the budget's clock when it has one.
        try:
            return estimate_call(call, table, raw=raw, at=None if self.budget is None
                                 else read_clock(self.budget.clock))  # Budget.now()'s read
        except UnknownModelError as exc:
            self._record_refused(call.model, call.endpoint, exc)
            raise

    def _apply_policies(self, request: httpx2.Request, body: bytes, parsed: dict[str, Any],
                        call: Call, estimate: Estimate, may_degrade: bool, may_cap: bool,
                        budgets: tuple[Budget, ...], table: PriceTable,
                        ) -> tuple[httpx2.Request, bytes, dict[str, Any], Call, Estimate,
                                   Degraded | None, Mapping[str, str]]:
        """Phase "policies": a cheaper model (degrade), a learned input bound, an output cap
        that fits the budget; the record's tags they add."""
        # Degrading rewrites the model in the body sent: only where the body names the model
        # it is priced as (not a platform route, nor a signed body).
        degraded = (degrade(self.budget, call, estimate, table, budgets=budgets)
                    if may_degrade else None)
        if degraded is not None:
            call, estimate = degraded.call, degraded.estimate
            parsed = call.body
            request, body = _with_body(request, call.body)
        # An exact count has no bound to tighten (every OpenAI call): nothing to ask.
        estimate, bound_tags = (learned_input_bound(self.budget, call, estimate, table,
                                                    budgets=budgets)
                                if not estimate.input_tokens.exact else (estimate, {}))
        if self.options.cap_output and may_cap and estimate.output_tokens_worst > 0:
            request, call, estimate = self._fit_output(request, call, estimate, parsed,
                                                       budgets)
        return request, body, parsed, call, estimate, degraded, bound_tags

    def _describe(self, request: httpx2.Request, body: bytes, parsed: dict[str, Any],
                  call: Call, estimate: Estimate, route: Route | None, attempt_number: int,
                  prompt_hash: str, degraded: Degraded | None, bound_tags: Mapping[str, str],
                  table: PriceTable, unguarded: bool, budgets: tuple[Budget, ...],
                  ) -> tuple[CallInfo, dict[str, str]]:
        """Phase "describe": the call's record (``CallInfo``) and the tags spendguard adds."""
        templated = False
        for budget in budgets:
            if budget.templates:
                templated = True
                break
        # A StrEnum's str() is its value, as .value is; a route may bill another provider
        # (Gemini's OpenAI-compatible endpoint speaks OpenAI and is billed by Google).
        provider = route.provider if route is not None and route.provider else str(call.provider)
        info = CallInfo(
            provider=provider,
            model=call.model,
            endpoint=str(call.endpoint),
            attempt=attempt_number,
            request_id=None,
            prompt_hash=prompt_hash,
            prompt_text=body.decode("utf-8", "replace") if self.options.store_prompts else None,
            estimated_input_tokens=int(estimate.input_tokens),
            estimated_output_tokens=estimate.output_tokens_worst,
            input_exact=estimate.input_tokens.exact,
            # for per-user budgets (templates): the body is read by the API it speaks, not
            # who bills it; no budget with templates reads it, and then it is not looked for
            end_user=end_user_of(call.provider, call.body) if templated else None,
            facts=(call_facts(provider, self.options.platform, request.url, parsed, call, route)
                   if listening() else None),  # for telemetry, only while someone listens
        )
        tags = call_tags(self.links.call_id(prompt_hash, attempt_number), degraded)
        if bound_tags:
            tags.update(bound_tags)
        entry = None if unguarded else estimate.price or table.get(call.model)
        deployment = None if entry is None else entry.self_hosted
        if deployment is not None:
            # A self-hosted call's record carries the deployment's hourly cost beside its
            # allocated per-token cost, for `spendguard breakeven --from-ledger`.
            tags["deployment_usd_per_hour"] = str(deployment.usd_per_gpu_hour
                                                  * deployment.gpu_count)
        return info, tags

    def _record_refused(self, model: str, endpoint: Endpoint, exc: UnknownModelError) -> None:
        """Leave a trace of a call refused for want of a price, for ``spendguard prices
        status``: a $0 reservation released at once (not billed, not counted), status
        ``released``, note ``refused: no price for ...``. Never masks the refusal itself."""
        if exc.kind not in ("model", "platform model", "host model"):
            return
        info = CallInfo(provider=self.provider.value, model=model, endpoint=str(endpoint),
                        estimated_input_tokens=0, estimated_output_tokens=0)
        try:
            reservation = reserve_call(self.budget, Decimal(0), call=info,
                                       extra_tags={REFUSED_TAG: "unknown_model"})
            reservation.release(f"refused: no price for {exc.name!r}")
        except Exception:  # the ledger is down, or a limit on calls: the refusal stands
            log.debug("spendguard could not record the refusal of %s", model, exc_info=True)

    def _fit_output(self, request: httpx2.Request, call: Call, estimate: Estimate,
                    wire_body: dict[str, Any], budgets: tuple[Budget, ...],
                    ) -> tuple[httpx2.Request, Call, Estimate]:
        """Lower the output cap so the worst case fits what the budget has left."""
        remaining = remaining_for_call(self.budget, budgets=budgets)
        if remaining is None or estimate.worst_usd <= remaining:
            return request, call, estimate
        input_tokens = int(estimate.input_tokens)
        low, high = 0, estimate.output_tokens_worst // max(call.choices, 1)
        while low < high:  # the largest per-choice cap whose worst case fits
            mid = (low + high + 1) // 2
            if worst_cost_usd(call, input_tokens, mid * call.choices, self.table,
                              at=estimate.at) <= remaining:
                low = mid
            else:
                high = mid - 1
        if low < _MIN_CAPPED_OUTPUT:
            return request, call, estimate  # cannot fit: reserve as is, and be refused
        # The adapter writes the cap (a top-level field, or Gemini's generationConfig) into
        # what is sent and into the body the call is priced from (its route's).
        body = with_output_cap(call, wire_body, low)
        priced = with_output_cap(call, call.body, low)
        if body is None or priced is None:
            return request, call, estimate  # no cap to lower: reserve as is
        new_call = build_call(call.provider, call.endpoint, priced)
        per_choice = new_call.output_cap
        if per_choice is None or per_choice > low:  # the rewrite must bound the worst case
            return request, call, estimate
        output = per_choice * new_call.choices
        new_estimate = Estimate(
            estimate.model, estimate.input_tokens, output,
            worst_cost_usd(new_call, input_tokens, output, self.table, at=estimate.at),
            estimate.table_version, estimate.price, estimate.at,
        )
        new_request, _ = _with_body(request, body)
        log.info("spendguard capped %s output at %d tokens to fit the budget", call.model,
                 per_choice)
        return new_request, new_call, new_estimate


def _with_body(request: httpx2.Request, body: dict[str, Any]) -> tuple[httpx2.Request, bytes]:
    """The same request carrying a rewritten JSON body."""
    content = json.dumps(body, separators=(",", ":")).encode()
    headers = [(k, v) for k, v in request.headers.multi_items()
               if k.lower() != "content-length"]
    # The request's own class: an httpx2 request, or a classic httpx one (same design).
    rebuilt: httpx2.Request = type(request)(request.method, request.url, headers=headers,
                                            content=content, extensions=request.extensions)
    return rebuilt, content
