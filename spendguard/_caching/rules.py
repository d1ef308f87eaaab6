"""Each provider's prompt-cache rules, looked up by the cache style its adapter declares.

What :class:`~spendguard._caching.order.CacheOrder` does per provider lives here as data, so
the ordering itself has no provider branches: how a body is arranged (stable content first),
whether the API takes cache markers (Anthropic ``cache_control``, OpenAI
``prompt_cache_key`` and breakpoints) or caches a common prefix implicitly (Gemini), and what
is noted when nothing can be marked.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from spendguard._caching.arrange import Arranged, arrange
from spendguard._caching.implicit import arrange_implicit, prefix_notes
from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import ModelPrice
from spendguard._providers.adapter import adapter_for, adapters

__all__ = ["CacheRules", "rules_for"]


class Arrange(Protocol):
    def __call__(self, provider: str, endpoint: Endpoint, body: Mapping[str, Any], *,
                 shared: Collection[Any] = (), move_volatile: bool = True,
                 to_last_message: bool = False, reorder_content: bool = False,
                 shared_texts: Collection[str] = ()) -> Arranged: ...


@dataclass(frozen=True, slots=True)
class CacheRules:
    """One provider's prompt cache, as the ordering needs it."""

    arrange: Arrange
    markers: bool
    """The API takes cache markers (breakpoints, a cache key); False: it caches a common
    prefix by itself, and only the order can help."""
    implicit_notes: Callable[[Mapping[str, Any], ModelPrice | None,
                              Callable[[Mapping[str, Any]], int]], tuple[str, ...]] | None = None
    """For an implicit cache: why the prefix may not be cached (given a body's token
    counter)."""


_RULES = {
    "breakpoints": CacheRules(arrange, markers=True),  # cache_control markers
    "prefix": CacheRules(arrange, markers=True),  # a cache key and breakpoints
    "implicit": CacheRules(arrange_implicit, markers=False, implicit_notes=prefix_notes),
}
"""The rules per ``ProviderAdapter.prompt_cache`` style."""


def _providers() -> tuple[str, ...]:
    return tuple(adapter.name for adapter in adapters() if adapter.prompt_cache in _RULES)


def rules_for(provider: str) -> CacheRules:
    """The cache rules of ``provider``; a clear error for one without any."""
    known = _providers()
    if provider not in known:
        raise ConfigError(f"provider: expected one of {', '.join(map(repr, known))}, "
                          f"got {provider!r}")
    return _RULES[adapter_for(provider).prompt_cache]
