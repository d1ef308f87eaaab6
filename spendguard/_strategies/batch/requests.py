"""Requests for a batch: read like the ordinary call's arguments, priced at batch rates.

:func:`plan_requests` turns what the caller passed (``create()`` keyword arguments, as a dict
or a :class:`BatchRequest`) into :class:`PlannedRequest` records: a JSON body, an endpoint path,
a custom id that maps the result back, and the worst case at batch prices that is reserved
before anything is submitted. Pure: it reads no clock, network or ledger.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Call, Endpoint, Provider, build_call
from spendguard._costing.cost import worst_case_usd
from spendguard._costing.estimate import max_output_tokens
from spendguard._costing.prices import PriceTable
from spendguard._costing.tokens import count_request_tokens

__all__ = ["BatchRequest", "PlannedRequest", "batch_endpoint", "batch_worst_usd",
           "plan_requests"]

CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Anthropic's rule for custom ids; applied to both providers so ids travel."""
# SDK keyword arguments that are not part of the request body.
_DROPPED = frozenset({"timeout"})
_REFUSED = frozenset({"extra_headers", "extra_query"})


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One request for :func:`spendguard.batch`: the ``create()`` arguments, an optional
    endpoint (the provider's chat endpoint by default) and an optional ``custom_id``."""

    body: Mapping[str, Any]
    endpoint: str | None = None
    custom_id: str | None = None


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """A request ready to reserve and submit (money in USD, at batch prices)."""

    index: int
    custom_id: str
    path: str
    model: str
    body: dict[str, Any] = field(repr=False)
    worst_usd: Decimal
    input_tokens: int
    input_exact: bool
    output_tokens_worst: int
    endpoint: Endpoint
    size_bytes: int = 0
    inputs: int = 1
    """Embedding inputs it carries (OpenAI caps them per batch)."""
    group: tuple[str, ...] = ()
    """Requests that may share one batch: same endpoint (and, for OpenAI and Gemini, model)."""


def batch_endpoint(provider: Provider, endpoint: str | None) -> Endpoint:
    """The endpoint named as ``"chat"``, ``"/v1/responses"``... (the provider's chat endpoint
    when None), refused unless the provider's batch API runs it."""
    runs = tuple(member for member in Endpoint.of(provider) if member.batchable)
    chosen = runs[0] if endpoint is None else Endpoint.named(endpoint)
    if chosen not in runs:
        names = ", ".join(str(member.batch_url) for member in runs)
        raise ConfigError(f"endpoint: {provider.value} batches run {names}; got {endpoint!r}")
    return chosen


def _plain(value: Any, where: str) -> Any:
    """JSON-ready data from what an SDK call accepts (pydantic models, tuples, sentinels)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v, f"{where}.{k}") for k, v in value.items()
                if not _omitted(v)}
    if isinstance(value, list | tuple):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump(mode="json", exclude_unset=True, by_alias=True), where)
    raise ConfigError(f"{where}: {type(value).__name__} cannot be sent in a batch; pass plain "
                      f"JSON values (dicts, lists, strings, numbers)")


def _omitted(value: Any) -> bool:
    # The SDKs' NOT_GIVEN / omit sentinels mean "leave the field out".
    return type(value).__name__ in ("NotGiven", "Omit")


def request_body(params: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The JSON body the ordinary call would send for these ``create()`` arguments."""
    refused = sorted(_REFUSED & set(params))
    if refused:
        raise ConfigError(f"{where}: {', '.join(refused)} cannot be set per request in a "
                          f"batch; set them on the client instead")
    extra = params.get("extra_body") or {}
    body = {k: v for k, v in params.items() if k not in _DROPPED and k != "extra_body"}
    plain = _plain({**body, **extra}, where)
    if plain.get("stream"):
        raise ConfigError(f"{where}: stream=True cannot be deferred; batch results arrive "
                          f"whole. Drop stream=True")
    plain.pop("stream", None)
    plain.pop("stream_options", None)
    return dict(plain)


def batch_worst_usd(call: Call, input_tokens: int, output_tokens: int,
                    table: PriceTable) -> Decimal:
    """The worst case of these tokens at batch prices (input uncached or written to a cache,
    whichever costs more)."""
    return worst_case_usd(table.get(call.model), input_tokens, output_tokens,
                          cache_ttls=call.cache_ttls, batch=True)


def _embedding_inputs(body: Mapping[str, Any]) -> int:
    value = body.get("input")
    return len(value) if isinstance(value, list) and value and not isinstance(
        value[0], int) else 1


def plan_requests(provider: Provider, requests: Iterable[Mapping[str, Any] | BatchRequest], *,
                  endpoint: str | None, table: PriceTable,
                  line_bytes: Callable[[str, str, Mapping[str, Any]], int],
                  body_of: Callable[[Mapping[str, Any], str], dict[str, Any]] = request_body,
                  per_model: bool = False) -> list[PlannedRequest]:
    """Every request read, identified and priced at its worst case; nothing is sent.

    ``body_of`` turns ``create()`` arguments into the body sent (the provider's batch
    adapter's); ``per_model``: a batch runs one model, so requests are grouped by it.
    """
    planned: list[PlannedRequest] = []
    seen: set[str] = set()
    for index, raw in enumerate(requests):
        where = f"requests[{index}]"
        item = raw if isinstance(raw, BatchRequest) else BatchRequest(raw)
        if not isinstance(item.body, Mapping):
            raise ConfigError(f"{where}: expected the create() arguments as a dict or a "
                              f"spendguard.BatchRequest, got {type(item.body).__name__}")
        kind = batch_endpoint(provider, item.endpoint or endpoint)
        path = str(kind.batch_url)
        body = body_of(item.body, where)
        call = build_call(provider, kind, body)
        custom_id = item.custom_id or _custom_id(index, path, body)
        if not CUSTOM_ID.fullmatch(custom_id):
            raise ConfigError(f"{where}.custom_id: {custom_id!r} must be 1-64 letters, digits, "
                              f"'_' or '-'")
        if custom_id in seen:
            raise ConfigError(f"{where}.custom_id: {custom_id!r} is used twice; each request "
                              f"of a batch needs its own")
        seen.add(custom_id)
        input_tokens = count_request_tokens(provider.value, kind, body)
        output = max_output_tokens(call, table.get(call.model), int(input_tokens))
        planned.append(PlannedRequest(
            index, custom_id, path, call.model, body,
            batch_worst_usd(call, int(input_tokens), output, table), int(input_tokens),
            input_tokens.exact, output, kind, line_bytes(custom_id, path, body),
            _embedding_inputs(body) if kind.embeds else 1,
            (path, call.model) if per_model else (path,)))
    if not planned:
        raise ConfigError("requests: give at least one request to batch")
    return planned


def _custom_id(index: int, path: str, body: Mapping[str, Any]) -> str:
    # Position first (unique even for identical requests), then a digest that lets a reader
    # match a result line with its request.
    digest = hashlib.sha256(json.dumps([path, body], sort_keys=True).encode()).hexdigest()
    return f"r{index}-{digest[:16]}"
