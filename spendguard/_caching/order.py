"""Order requests for the providers' prompt caches, and measure what caching saved.

Every provider bills a repeated prompt *prefix* at a fraction of the input price. A prefix is
only repeated if it is byte-for-byte the same, so :func:`order_for_cache` puts stable content
first (tools in a deterministic order and serialisation, static system text, shared documents)
and volatile content last, flags values that break a prefix (timestamps, uuids, ids), and marks
the cache where the API wants it: Anthropic ``cache_control`` breakpoints (at most 4, none under
the model's minimum, TTL from the gap between reuses, none when the write premium will not pay
back), OpenAI ``prompt_cache_key`` per shared prefix and explicit breakpoints on models that
have them; Gemini caches a common prefix implicitly, so only its order and notes apply
(``rules.py`` holds each provider's rules). Turns of a conversation are never reordered.

The same ordering is the ``cache_order=`` option of the guarded clients and of
:func:`spendguard.plan`; :func:`cache_stats` reads the hit rate and savings from the ledger.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from spendguard._budget.ledger import Ledger, open_ledger
from spendguard._caching.kind import model_price_or_none, request_kind
from spendguard._caching.layout import Path, describe, identity, prefix_body
from spendguard._caching.marks import Marked, limit_markers, mark
from spendguard._caching.rules import rules_for
from spendguard._caching.stats import CacheStats, from_records
from spendguard._caching.volatile import VolatileValue
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import PriceTable
from spendguard._costing.tokens import count_request_tokens

__all__ = ["CacheOrder", "CacheStats", "OrderedRequest", "VolatileValue", "cache_stats",
           "order_for_cache"]

log = logging.getLogger("spendguard")

PrefixTokens = Callable[[Path], int]


@dataclass(frozen=True, slots=True)
class OrderedRequest:
    """A request body ordered for the cache, and what was found and decided on the way."""

    body: dict[str, Any] = field(repr=False)
    provider: str
    endpoint: Endpoint
    volatile: tuple[VolatileValue, ...] = ()
    """Values that differ per request, found in the stable part (see ``moved``)."""
    breakpoints: tuple[str, ...] = ()
    """Where cache markers sit now: ``system[0]``, ``messages[0].content[1]``..."""
    prompt_cache_key: str | None = None
    ttl: str | None = None
    """The TTL of the markers added (``5m``, ``1h``, ``30m``, ``12h``), if any were."""
    notes: tuple[str, ...] = ()
    """Why a breakpoint or cache write was left out."""
    moves: tuple[str, ...] = ()
    """Content moved out of the order the caller gave (opt-in: ``reorder_content``,
    ``volatile_to_last_message``); empty by default."""

    def report(self) -> str:
        """What was done, for people: markers, key, flagged values, skipped breakpoints."""
        lines = [f"{self.provider} {self.endpoint}: breakpoints "
                 f"{', '.join(self.breakpoints) or 'none'}"
                 + (f" (ttl {self.ttl})" if self.ttl else "")]
        if self.prompt_cache_key:
            lines.append(f"prompt_cache_key {self.prompt_cache_key}")
        lines += [f"volatile: {value}" for value in self.volatile]
        lines += [f"moved: {move}" for move in self.moves]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def _shared_identities(shared: Iterable[Any]) -> frozenset[Any]:
    found: set[Any] = set()
    for item in shared:
        if isinstance(item, str):  # a text: as a block of either provider's spelling
            found.add(identity({"type": "text", "text": item}))
            found.add(identity({"type": "input_text", "text": item}))
        else:
            found.add(identity({k: v for k, v in item.items() if k not in (
                "cache_control", "prompt_cache_breakpoint")}) if isinstance(item, Mapping)
                else identity(item))
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class CacheOrder:
    """How requests are ordered for the cache: the ``cache_order=`` option.

    - ``move_volatile``: move system paragraphs holding timestamps, uuids or ids after the
      stable ones (False: only flag them);
    - ``volatile_to_last_message``: move them to the end of the last user message instead,
      so that nothing after the system prompt loses its cache (the model then reads them as
      part of the user's message);
    - ``reorder_content``: move documents, long texts and shared blocks before the rest of
      the first user message (off: it changes the relative order of what the user wrote;
      each move is reported in ``OrderedRequest.moves``);
    - ``breakpoints``: add cache markers (False: only reorder);
    - ``prompt_cache_key``: set OpenAI's ``prompt_cache_key`` per shared prefix;
    - ``reuses``: how many later requests read a prefix (None: unknown, at least one assumed);
    - ``reuse_gap_s``: seconds between reuses, for the TTL (None: the provider's default);
    - ``table``: the prices that decide pay-back and minimum lengths (default: spendguard's).

    An instance is callable as ``(provider, endpoint, body) -> body``: the guarded clients call
    it on every request before estimating it.
    """

    move_volatile: bool = True
    volatile_to_last_message: bool = False
    reorder_content: bool = False
    breakpoints: bool = True
    prompt_cache_key: bool = True
    reuses: int | None = None
    reuse_gap_s: float | None = None
    table: PriceTable | None = None

    def order(self, body: Mapping[str, Any], *, provider: str | None = None,
              endpoint: str | None = None, shared: Collection[Any] = frozenset(),
              reuses: int | None = None, reuse_gap_s: float | None = None,
              prefix_tokens: PrefixTokens | None = None,
              shared_texts: Collection[str] = ()) -> OrderedRequest:
        """Order one body; ``shared`` holds identities of blocks other requests also send,
        ``shared_texts`` the texts among them (looked for inside larger texts too)."""
        provider, endpoint = request_kind(body, provider=provider, endpoint=endpoint,
                                          table=self.table)
        rules = rules_for(provider)
        arranged = rules.arrange(provider, endpoint, body, shared=shared,
                                 move_volatile=self.move_volatile,
                                 to_last_message=self.volatile_to_last_message,
                                 reorder_content=self.reorder_content,
                                 shared_texts=shared_texts)
        result = arranged.body
        if endpoint.embeds:
            return OrderedRequest(result, provider, endpoint, arranged.volatile)
        if not rules.markers:  # an implicit prefix cache: the order is all that helps
            notes = () if rules.implicit_notes is None else rules.implicit_notes(
                result, model_price_or_none(body.get("model"), self.table),
                _body_counter(provider, endpoint))
            return OrderedRequest(result, provider, endpoint, arranged.volatile,
                                  notes=arranged.notes + notes, moves=arranged.moves)
        counter = prefix_tokens or _prefix_counter(provider, endpoint, result)
        if not self.breakpoints:
            capped, notes = limit_markers(provider, endpoint, result, counter, shared)
            return OrderedRequest(capped, provider, endpoint, arranged.volatile,
                                  notes=arranged.notes + notes, moves=arranged.moves)
        marked: Marked = mark(
            provider, endpoint, result, model_price=model_price_or_none(body.get("model"),
                                                                        self.table),
            prefix_tokens=counter, shared=shared,
            reuses=self.reuses if reuses is None else reuses,
            reuse_gap_s=self.reuse_gap_s if reuse_gap_s is None else reuse_gap_s,
            cache_key=self.prompt_cache_key)
        return OrderedRequest(marked.body, provider, endpoint, arranged.volatile,
                              tuple(describe(p) for p in marked.breakpoints),
                              marked.prompt_cache_key, marked.ttl,
                              arranged.notes + marked.notes, arranged.moves)

    def __call__(self, provider: str, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.order(body, provider=provider, endpoint=endpoint).body
        except Exception:  # ordering is an optimisation: it must never stop a request
            log.debug("spendguard could not order a request for the cache", exc_info=True)
            return body


def _body_counter(provider: str, endpoint: Endpoint) -> Callable[[Mapping[str, Any]], int]:
    def count(body: Mapping[str, Any]) -> int:
        return count_request_tokens(provider, endpoint, body).expected
    return count


def _prefix_counter(provider: str, endpoint: Endpoint,
                    body: Mapping[str, Any]) -> PrefixTokens:
    def count(at: Path) -> int:
        return count_request_tokens(provider, endpoint, prefix_body(body, at)).expected
    return count


def order_for_cache(body: Mapping[str, Any], *, provider: str | None = None,
                    endpoint: str | None = None, shared: Iterable[Any] = (),
                    reuses: int | None = None, reuse_gap_s: float | None = None,
                    move_volatile: bool = True, volatile_to_last_message: bool = False,
                    reorder_content: bool = False,
                    breakpoints: bool = True, prompt_cache_key: bool = True,
                    table: PriceTable | None = None) -> OrderedRequest:
    """Order a request body (OpenAI, Anthropic or Gemini shape) for the prompt cache.

    ``provider`` and ``endpoint`` (``"messages"``, ``"chat.completions"``, ``"responses"``)
    are read from the model and the body's shape when not given. ``shared`` lists blocks (or
    texts) other requests send too (with ``reorder_content``, moved before the rest of the
    first user message);
    ``reuses`` and ``reuse_gap_s`` say how often and how far apart the prefix will be read
    again, which picks the TTL and whether a write pays back. The other options are
    :class:`CacheOrder`'s. The body is not modified; the result's ``.body`` is the ordered
    copy.
    """
    options = CacheOrder(move_volatile=move_volatile,
                         volatile_to_last_message=volatile_to_last_message,
                         reorder_content=reorder_content, breakpoints=breakpoints,
                         prompt_cache_key=prompt_cache_key, table=table)
    shared = list(shared)
    return options.order(body, provider=provider, endpoint=endpoint,
                         shared=_shared_identities(shared), reuses=reuses,
                         reuse_gap_s=reuse_gap_s,
                         shared_texts=[item for item in shared if isinstance(item, str)])


def as_cache_order(option: bool | CacheOrder | None) -> CacheOrder | None:
    """The ``cache_order=`` option as a :class:`CacheOrder` (None when off)."""
    if option is None or option is False:
        return None
    if option is True:
        return CacheOrder()
    if isinstance(option, CacheOrder):
        return option
    from spendguard._core.errors import ConfigError  # noqa: PLC0415 - only on a wrong argument

    raise ConfigError(f"cache_order: expected True, False or a spendguard.CacheOrder, got "
                      f"{type(option).__name__}")


def cache_stats(ledger: Ledger | str | os.PathLike[str] | None = None, *,
                tag: str | None = None, since: datetime | None = None,
                until: datetime | None = None, model: str | None = None,
                scope: str | None = None, table: PriceTable | None = None) -> CacheStats:
    """Hit rate and savings of the calls in a ledger, measured from their settled usage.

    Filters as ``Ledger.records()``; ``tag="plan.id=<id>"`` selects one plan's calls and also
    reads the plan's estimate (a $0 marker its run wrote) into ``expected_usd``.
    """
    store = ledger if isinstance(ledger, Ledger) else open_ledger(ledger)
    return from_records(store.records(since=since, until=until, scope=scope, tag=tag,
                                      model=model), table=table)
