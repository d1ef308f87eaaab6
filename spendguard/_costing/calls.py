"""One outgoing request, read for pricing: which provider, endpoint and model, and its output cap.

The transport hands every request to :func:`classify`. A request is either *priced* (it can
spend money: chat completions, Responses, embeddings, messages), *free* (reads, uploads, token
counts, cancels), or *unsupported* (it might spend, but the guard cannot price it; refused by
default so unpriced spend never slips through).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from spendguard._core.errors import ConfigError, UnsupportedEndpointError
from spendguard._core.jsontext import loads
from spendguard._costing.endpoints import Endpoint, Provider
from spendguard._providers.adapter import adapter_for

__all__ = ["Call", "Endpoint", "Provider", "body_model", "build_call", "cap_field", "classify",
           "int_field", "parse_body", "with_output_cap", "with_top_level_cap"]


@dataclass(frozen=True, slots=True)
class Call:
    """A priced request: what the estimator needs, read from the JSON body."""

    provider: Provider
    endpoint: Endpoint
    model: str
    body: dict[str, Any] = field(repr=False)
    output_cap: int | None
    """Tokens the request may generate per choice (None: the model's maximum)."""
    choices: int = 1
    stream: bool = False
    service_tier: str | None = None
    speed: str | None = None
    inference_geo: str | None = None
    cache_ttls: tuple[str, ...] = ()
    """TTLs the request may write to the cache (Anthropic cache_control, OpenAI options)."""

    @property
    def cap_field(self) -> str | None:
        """The top-level body field that caps output (None where the cap is nested or the
        endpoint has none); telemetry reads the request's cap from it."""
        return cap_field(self.endpoint, self.body)


def cap_field(endpoint: Endpoint, body: Mapping[str, Any]) -> str | None:
    """The top-level field of a body that caps its output: the first of the endpoint's
    ``cap_fields`` the body sets, else the preferred one (None: the endpoint has none)."""
    fields = endpoint.cap_fields
    return next((name for name in fields if name in body), fields[0] if fields else None)


def with_top_level_cap(endpoint: Endpoint, body: dict[str, Any],
                       tokens: int) -> dict[str, Any] | None:
    """``body`` with its top-level output cap set to ``tokens`` (None: no such field)."""
    name = cap_field(endpoint, body)
    return None if name is None else {**body, name: tokens}


def classify(provider: Provider, method: str, path: str, *,
             allow_unpriced: bool = False) -> Endpoint | None:
    """The endpoint a request goes to, FREE for ones that cannot spend.

    Returns None for an unpriced endpoint when ``allow_unpriced`` is set; raises
    ``UnsupportedEndpointError`` for it otherwise. The answer depends on its arguments alone,
    and a client sends the same few paths again and again: each is decided once (an LRU).
    """
    return _classified(provider, method, path, allow_unpriced)


@functools.lru_cache(maxsize=1024)
def _classified(provider: Provider, method: str, path: str,
                allow_unpriced: bool) -> Endpoint | None:
    if method.upper() in {"GET", "DELETE", "HEAD", "OPTIONS"}:
        return Endpoint.FREE
    endpoint = Endpoint.from_path(provider, path)
    if endpoint is not None:
        return endpoint
    if allow_unpriced:
        return None
    hint = ""
    # OpenAI and Anthropic submit to .../batches; Gemini to .../models/{model}:batchGenerateContent.
    if path.rstrip("/").endswith(("/batches", ":batchGenerateContent",
                                  ":asyncBatchEmbedContent")):
        hint = (" Batch jobs are priced by spendguard.batch(), which reserves the batch's worst "
                "case before submitting.")
    raise UnsupportedEndpointError(
        f"spendguard cannot price {method} {path}, so it refused to send it.{hint} "
        "To send requests the guard cannot price (their cost is then NOT counted), build the "
        "client with allow_unpriced=True.",
        method=method,
        path=path,
    )


def parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body; a clear error for anything else."""
    try:
        body = loads(raw or b"{}")
    except ValueError as exc:
        raise ConfigError(f"request body is not JSON ({exc}); spendguard cannot price it") \
            from exc
    if not isinstance(body, dict):
        raise ConfigError("request body must be a JSON object to be priced")
    return body


def int_field(body: dict[str, Any], name: str) -> int | None:
    """A body field that must be a whole number >= 0 when given (an output cap, ``n``)."""
    if name not in body:  # membership, then indexing: no call for the look-up
        return None
    value = body[name]
    if value is None or (value.__class__ is int and value >= 0):  # no isinstance calls
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name}: expected a non-negative integer, got {value!r}")
    return value


def body_model(endpoint: Endpoint, body: dict[str, Any]) -> str:
    """The body's ``model``: every priced body names one once routed."""
    model = None
    if "model" in body:  # membership, then indexing: no call for the look-up
        model = body["model"]
    if (model.__class__ is not str and not isinstance(model, str)) or not model:
        raise ConfigError(f"{endpoint.value} request has no 'model'; spendguard cannot price it")
    return model


def build_call(provider: Provider, endpoint: Endpoint, body: dict[str, Any]) -> Call:
    """Read a priced request body into a :class:`Call` (the provider's adapter reads it)."""
    # The endpoint's API says how its body reads; the call keeps the provider it was sent to.
    call = adapter_for(endpoint.provider or provider).build_call(endpoint, body)
    return call if call.provider == provider else replace(call, provider=Provider(provider))


def with_output_cap(call: Call, body: dict[str, Any], tokens: int) -> dict[str, Any] | None:
    """``body`` (the call's, or the one sent for it) rewritten so each choice generates at
    most ``tokens`` output tokens, as the adapter of the API the call speaks writes it; None
    when the endpoint has no cap to lower."""
    adapter = adapter_for(call.endpoint.provider or call.provider)
    return adapter.with_output_cap(call.endpoint, body, tokens)
