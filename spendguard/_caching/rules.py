"""Each provider's prompt-cache rules, looked up by provider name.

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
from spendguard._caching.gemini import arrange_gemini, prefix_notes
from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import ModelPrice

__all__ = ["PROVIDERS", "CacheRules", "rules_for"]


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
    implicit_notes: Callable[[Mapping[str, Any], ModelPrice | None], tuple[str, ...]] | None = \
        None
    """For an implicit cache: why the prefix may not be cached."""


_RULES = {
    "openai": CacheRules(arrange, markers=True),
    "anthropic": CacheRules(arrange, markers=True),
    "gemini": CacheRules(arrange_gemini, markers=False,
                         implicit_notes=prefix_notes),
}
PROVIDERS = tuple(_RULES)


def rules_for(provider: str) -> CacheRules:
    """The cache rules of ``provider``; a clear error for one without any."""
    rules = _RULES.get(provider)
    if rules is None:
        raise ConfigError(f"provider: expected one of {', '.join(repr(p) for p in PROVIDERS)}, "
                          f"got {provider!r}")
    return rules
