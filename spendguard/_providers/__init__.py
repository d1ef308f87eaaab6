"""Provider adapters: one package per provider behind :class:`~.adapter.ProviderAdapter`.

Each package (``openai``, ``anthropic``, ``gemini``) owns its provider's paths, request
reading, input count, routes and usage readers, and exports its ``ADAPTER``. This package
re-exports the registry (:func:`adapter_for`, :func:`adapters`, defined beside the interface
in :mod:`.adapter`) and holds what the usage readers share: turning SDK objects into plain
dicts and reading token counts strictly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from spendguard._core.errors import ConfigError, ProviderResponseError
from spendguard._costing.endpoints import Endpoint
from spendguard._providers.adapter import (
    StreamReader,
    adapter_for,
    adapters,
    otel_provider_name,
    providers,
)

if TYPE_CHECKING:  # pragma: no cover
    from spendguard._costing.usage import Usage

__all__ = ["StreamReader", "adapter_for", "adapters", "endpoint_kind", "otel_provider_name",
           "providers", "read_count", "read_table", "split_inclusive_input", "stream_reader",
           "to_plain", "usage_reader"]

UsageReader = Callable[..., "Usage"]


def usage_reader(provider: str) -> UsageReader:
    """``read_usage(payload, *, endpoint=None) -> Usage`` of one provider's adapter."""
    return adapter_for(provider).read_usage


def stream_reader(provider: str, endpoint: str) -> StreamReader:
    """A fresh reader for one stream of a provider's endpoint."""
    return adapter_for(provider).stream_reader(endpoint)


def endpoint_kind(endpoint: str | None) -> Endpoint | None:
    """The endpoint named loosely ("chat", "Responses", a URL path...); None stays None."""
    if endpoint is None or (isinstance(endpoint, Endpoint) and endpoint is not Endpoint.FREE):
        return endpoint
    kind = Endpoint.loosely_named(endpoint)
    if kind is not None:
        return kind
    raise ConfigError(f"endpoint: {endpoint!r} is not a priced endpoint; use chat, responses, "
                      "embeddings or messages (or their URL paths)")


def to_plain(payload: object, *, provider: str) -> dict[str, Any]:
    """A JSON-shaped dict from a dict or an SDK (pydantic) object, without mutating it.

    A plain dict comes back as itself (the readers only read it: no copy of every response);
    other mappings and SDK objects as a new dict.
    """
    if type(payload) is dict:
        return payload
    if isinstance(payload, Mapping):
        return dict(payload)
    for method, kwargs in (("to_dict", {}), ("model_dump", {"by_alias": True})):
        dump = getattr(payload, method, None)
        if callable(dump):
            try:
                plain = dump(**kwargs)
            except Exception as exc:  # an SDK object that cannot dump itself
                raise ProviderResponseError(
                    f"{provider}: cannot read {type(payload).__name__} ({exc})",
                    provider=provider, field="payload") from exc
            if isinstance(plain, Mapping):
                return dict(plain)
    raise ProviderResponseError(
        f"{provider}: expected a response dict or SDK object, got {type(payload).__name__}",
        provider=provider, field="payload")


def read_table(container: Mapping[str, Any] | None, key: str, *, provider: str,
               path: str) -> Mapping[str, Any] | None:
    """A nested object of a usage payload, or None when absent."""
    value = None if container is None else container.get(key)
    if value is None or value.__class__ is dict or isinstance(value, Mapping):
        return value  # a plain dict told by its class: an ABC check costs more
    raise ProviderResponseError(
        f"{provider}: usage field {path}.{key} is {value!r}, expected an object",
        provider=provider, field=f"{path}.{key}")


def read_count(container: Mapping[str, Any] | None, key: str, *, provider: str, path: str,
               required: bool = False) -> int:
    """A token count: a whole number >= 0; absent is 0 unless ``required``."""
    value = None if container is None else container.get(key)
    if value.__class__ is int and value >= 0:
        return value  # the usual case, read for every call: no field name spelled out
    field = f"{path}.{key}"
    if value is None:
        if required:
            raise ProviderResponseError(f"{provider}: usage field {field} is missing",
                                        provider=provider, field=field)
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProviderResponseError(
            f"{provider}: usage field {field} is {value!r}, expected a whole number >= 0",
            provider=provider, field=field)
    return value


def split_inclusive_input(total: int, cached: int, writes: Mapping[str, int], *, provider: str,
                          path: str) -> tuple[int, dict[str, int]]:
    """Uncached input from an input total that *includes* cache reads (and cache writes).

    OpenAI documents ``cached_tokens`` as part of the total, and prices cache writes on the
    write rate *instead of* the input rate, so we read ``cache_write_tokens`` as part of the
    total too. If the numbers say otherwise (writes + reads exceed the total), the writes were
    reported outside it: only the reads are subtracted, rather than ever billing negative input.
    """
    if cached > total:
        raise ProviderResponseError(
            f"{provider}: usage field {path}.cached_tokens ({cached}) exceeds the input total "
            f"({total})", provider=provider, field=f"{path}.cached_tokens")
    written = sum(writes.values())
    uncached = total - cached - written if cached + written <= total else total - cached
    return uncached, dict(writes)
