"""Explicit context caches' storage, as charged: what a TTL update adds.

Google bills a cache's storage per million tokens per hour for the time it exists
(ai.google.dev/gemini-api/docs/pricing). spendguard charges it ahead, to the expiry the cache
was given:

- creating a cache charges its tokens (as input) and their storage from ``createTime`` to
  ``expireTime``;
- a TTL update (``PATCH cachedContents/{id}``) charges the storage from the expiry already
  charged to the new ``expireTime``;
- a cache that ends sooner (a shortened TTL, a delete) has the storage charged past its new
  end credited back (:mod:`spendguard._guard.cache_credit`).

A TTL update's request names neither the cache's model nor its size, so it is priced from
what this process saw of the cache: the cache's create (or last update) reply, noted here when
it was settled. An update of a cache this process has not seen is refused as unpriced (the
client's ``allow_unpriced=True`` sends it uncounted).
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from spendguard._core.errors import ProviderResponseError, UnsupportedEndpointError
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.usage import Usage
from spendguard._providers.gemini import endpoints

__all__ = ["CacheTerm", "added_storage", "cache_name", "created_storage", "note_cache",
           "release_storage", "reply_end", "settled_note", "term", "update_endpoint"]

PROVIDER = "gemini"
MAX_CACHES = 10_000
"""Caches remembered at most (the oldest noted is forgotten first)."""
_NAME = re.compile(r"(?:^|/)(?P<name>cachedContents/[^/:?]+)$")


@dataclass(frozen=True, slots=True)
class CacheTerm:
    """One explicit cache as charged: its model, its size, and the expiry its storage was
    charged to."""

    model: str
    tokens: int
    charged_until: datetime


_terms: OrderedDict[str, CacheTerm] = OrderedDict()
_lock = threading.Lock()


def cache_name(path: str) -> str | None:
    """``cachedContents/{id}`` from a cache's URL path (Developer API or Vertex AI form)."""
    match = _NAME.search(path.split("?", 1)[0].rstrip("/"))
    return None if match is None else match["name"]


def term(name: str) -> CacheTerm | None:
    """The cache ``name`` as charged, when this process saw it created or updated."""
    with _lock:
        return _terms.get(name)


def update_endpoint(path: str, *, allow_unpriced: bool) -> Endpoint | None:
    """The endpoint of a PATCH to ``path``: a TTL update of a cache this process saw, else
    refused (None with ``allow_unpriced``)."""
    name = cache_name(path)
    if name is not None and term(name) is not None:
        return endpoints.CACHE_UPDATE
    if allow_unpriced:
        return None
    what = name or path
    raise UnsupportedEndpointError(
        f"spendguard cannot price PATCH {path}: a TTL update is priced from the cache's size "
        f"and model, and this process did not see {what} created through a guarded client. "
        "Update a cache from the process that created it, or build the client with "
        "allow_unpriced=True to send the update uncounted.", method="PATCH", path=path)


def field(container: Any, camel: str) -> Any:
    """A field by its REST name or the SDK's snake_case one."""
    if not isinstance(container, Mapping):
        return None
    if camel in container:
        return container[camel]
    return container.get("".join(f"_{c.lower()}" if c.isupper() else c for c in camel))


def _time(data: Mapping[str, Any], name: str) -> datetime:
    value = field(data, name)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise ProviderResponseError(f"gemini: {name} is {value!r}, expected an RFC 3339 time",
                                    provider=PROVIDER, field=name) from exc


def _tokens(data: Mapping[str, Any]) -> int:
    meta = field(data, "usageMetadata")
    if not isinstance(meta, Mapping):
        raise ProviderResponseError("gemini: the cached content has no usageMetadata",
                                    provider=PROVIDER, field="usageMetadata")
    value = field(meta, "totalTokenCount")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProviderResponseError(
            f"gemini: usageMetadata.totalTokenCount is {value!r}, expected a whole number >= 0",
            provider=PROVIDER, field="usageMetadata.totalTokenCount")
    return value


def _seconds(later: datetime, earlier: datetime) -> int:
    return math.ceil((later - earlier).total_seconds())


def created_storage(data: Mapping[str, Any]) -> tuple[int, int]:
    """``(tokens, seconds)`` of a cache as created: its tokens (billed as input when written)
    stored for the TTL it was given (``expireTime - createTime``)."""
    seconds = _seconds(_time(data, "expireTime"), _time(data, "createTime"))
    return _tokens(data), max(seconds, 0)


def added_storage(data: Mapping[str, Any]) -> tuple[int, int]:
    """``(tokens, seconds)`` a TTL update's reply adds: from the expiry already charged to the
    new one (0 when shortened). A cache forgotten since its update was sent is charged from
    ``updateTime``: the most it can have added."""
    tokens = _tokens(data)
    expire = _time(data, "expireTime")
    known = term(cache_name(str(field(data, "name"))) or "")
    since = known.charged_until if known is not None else _time(data, "updateTime")
    return tokens, max(_seconds(expire, since), 0)


def note_cache(data: object, *, update: bool) -> None:
    """Remember a cache's create (or, ``update``, TTL update) reply as charged (never raises:
    a reply that cannot be read leaves the cache as it was)."""
    if not isinstance(data, Mapping):
        return
    try:
        name = str(field(data, "name") or "")
        model = str(field(data, "model") or "").rpartition("models/")[2]
        expire = _time(data, "expireTime")
        tokens = _tokens(data)
    except ProviderResponseError:
        return
    if not name.startswith("cachedContents/") and "/cachedContents/" not in name:
        return
    name = cache_name(name) or name
    with _lock:
        known = _terms.pop(name, None) if update else None
        model = model or (known.model if known is not None else "")
        if not model:
            return  # a cache of no known model cannot price its updates
        # A shortened TTL leaves the storage charged to the later expiry.
        until = expire if known is None else max(expire, known.charged_until)
        _terms[name] = CacheTerm(model, tokens, until)
        while len(_terms) > MAX_CACHES:
            _terms.popitem(last=False)


def settled_note(data: object, usage: Usage, *, update: bool) -> str | None:
    """Note a cache's create (or, ``update``, TTL update) reply as charged; the note of a TTL
    update that added no storage (its excess storage is then credited), else None."""
    note_cache(data, update=update)  # a later TTL update is priced from what this reply says
    if update and not any(usage.tool_requests.values()):
        return ("TTL not extended: no storage added (storage charged past the new expiry is "
                "credited by an adjustment)")
    return None


def reply_end(data: object) -> tuple[str, datetime] | None:
    """``(cachedContents/{id}, expireTime)`` of a cache's reply; None when unreadable."""
    if not isinstance(data, Mapping):
        return None
    name = cache_name(str(field(data, "name") or ""))
    try:
        return None if name is None else (name, _time(data, "expireTime"))
    except ProviderResponseError:
        return None


def release_storage(name: str, until: datetime, *, forget: bool) -> tuple[CacheTerm, int] | None:
    """The cache's term and the whole seconds of storage charged beyond ``until`` (0 when
    none), which are no longer charged from now on (``forget``: the cache is gone); None for
    a cache this process did not see."""
    with _lock:
        known = _terms.get(name)
        if known is None:
            return None
        seconds = max(math.floor((known.charged_until - until).total_seconds()), 0)
        if forget:
            del _terms[name]
        elif seconds:
            _terms[name] = CacheTerm(known.model, known.tokens, until)
        return known, seconds
