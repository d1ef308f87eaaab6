"""Prefixes shared across a plan's requests, and the cache reads and writes to expect.

Each request's prompt is cut into slots (:mod:`spendguard._caching.layout`); each slot
position gets an id chained over everything before it, interned so that two requests share an
id exactly when they share that whole prefix (same provider, model and, for OpenAI,
``prompt_cache_key``: caches are scoped so). A shared prefix is counted once, however many
requests send it.

The walk then replays the run as :meth:`Plan.run` sends it: the first request of every shared
prefix goes first and the rest wait for it, so one request writes and the others read.
Anthropic caches only at ``cache_control`` breakpoints (looking back up to 20 slots), from the
model's minimum length; OpenAI caches any prefix of 1,024 tokens or more, in 128-token steps,
and bills the write only on models that price writes. Entries are assumed to live through the
run (every read refreshes them; cache ordering picks a TTL longer than the gap between reuses).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spendguard._caching.implicit import DEFAULT_MIN_TOKENS as IMPLICIT_MIN_TOKENS
from spendguard._caching.kind import caches_implicitly, marks_breakpoints
from spendguard._caching.layout import Slot, identity, prefix_body, slots
from spendguard._caching.marks import existing_breakpoints
from spendguard._caching.policy import min_cacheable_tokens
from spendguard._costing.prices import ModelPrice
from spendguard._providers import adapter_for
from spendguard._strategies.plan.inputs import PlannedRequest

__all__ = ["ChainIndex", "ExpectedCache", "expect_cache"]

LOOKBACK_SLOTS = 20
OPENAI_MIN_TOKENS = 1024
OPENAI_STEP_TOKENS = 128

CountTokens = Callable[[PlannedRequest, dict[str, Any]], int]


class ChainIndex:
    """Interns prompt prefixes: equal prefixes get equal small ints, each slot hashed once."""

    def __init__(self) -> None:
        self._segments: dict[Any, int] = {}
        self._links: dict[tuple[Any, int], int] = {}

    def chain(self, request: PlannedRequest, found: Sequence[Slot]) -> list[int]:
        """One id per slot position, each naming the whole prefix up to it."""
        scope = self._segments.setdefault(_scope(request), len(self._segments))
        ids, previous = [], -1 - scope
        for slot in found:
            segment = self._segments.setdefault(identity(slot.value), len(self._segments))
            previous = self._links.setdefault((previous, segment), len(self._links))
            ids.append(previous)
        return ids


def _by_prefix(provider: str) -> bool:
    """Whether the provider caches the longest prefix seen (routed by ``prompt_cache_key``)."""
    return adapter_for(provider).prompt_cache == "prefix"


def _scope(request: PlannedRequest) -> Any:
    key = request.body.get("prompt_cache_key") if _by_prefix(request.provider) else None
    return ("scope", request.provider, request.endpoint, str(request.body.get("model")), key)


@dataclass(frozen=True, slots=True)
class ExpectedCache:
    """One request's expected cache use, and which requests it should wait for."""

    read_tokens: int = 0
    write_tokens: Mapping[str, int] = field(default_factory=dict)
    after: tuple[int, ...] = ()
    """Indexes of the requests that write the shared prefixes this one reads."""
    group: int | None = None
    """Index of the request that writes this one's deepest shared prefix (its leader)."""


@dataclass(slots=True)
class _Walk:
    requests: Sequence[PlannedRequest]
    totals: Sequence[int]
    prices: Mapping[str, ModelPrice | None]
    count: CountTokens
    tokens: dict[int, int] = field(default_factory=dict)
    written: set[int] = field(default_factory=set)

    def prefix_tokens(self, index: int, found: Sequence[Slot], chain: Sequence[int],
                      position: int) -> int:
        cid = chain[position]
        if cid not in self.tokens:
            request = self.requests[index]
            self.tokens[cid] = self.count(request, prefix_body(request.body,
                                                               found[position].path))
        return min(self.tokens[cid], self.totals[index])

    def minimum(self, request: PlannedRequest) -> int:
        if _by_prefix(request.provider):
            return OPENAI_MIN_TOKENS
        price = self.prices.get(str(request.body.get("model")))
        if caches_implicitly(request.provider):
            return (price.min_cacheable_tokens if price is not None else None) \
                or IMPLICIT_MIN_TOKENS
        return min_cacheable_tokens(price)


def _cacheable(walk: _Walk, index: int, found: Sequence[Slot], chain: Sequence[int],
               shares: Counter[int]) -> list[int]:
    """Positions whose prefix is shared with another request and long enough to cache."""
    request = walk.requests[index]
    if marks_breakpoints(request.provider):
        positions = [p for p, _ in existing_breakpoints(request.body, list(found))]
    else:
        positions = list(range(len(chain)))
    minimum = walk.minimum(request)
    return [p for p in positions if shares[chain[p]] > 1
            and walk.prefix_tokens(index, found, chain, p) >= minimum]


def _anthropic(walk: _Walk, index: int, found: Sequence[Slot],
               chain: Sequence[int]) -> tuple[int, dict[str, int]]:
    points = existing_breakpoints(walk.requests[index].body, list(found))
    read_at = -1
    for point, _ in points:
        for position in range(point, max(point - LOOKBACK_SLOTS, -1), -1):
            if position > read_at and chain[position] in walk.written:
                read_at = position
                break
    read = walk.prefix_tokens(index, found, chain, read_at) if read_at >= 0 else 0
    writes: dict[str, int] = {}
    covered, minimum = read, walk.minimum(walk.requests[index])
    for point, ttl in points:
        if point <= read_at:
            continue
        tokens = walk.prefix_tokens(index, found, chain, point)
        if tokens < minimum or tokens <= covered:
            continue  # too short to cache: the provider silently skips it
        writes[ttl] = writes.get(ttl, 0) + tokens - covered
        covered = tokens
        walk.written.add(chain[point])
    return read, writes


def _openai(walk: _Walk, index: int, found: Sequence[Slot],
            chain: Sequence[int]) -> tuple[int, dict[str, int]]:
    request, total = walk.requests[index], walk.totals[index]
    read = 0
    if total >= OPENAI_MIN_TOKENS:
        for position in range(len(chain) - 1, -1, -1):
            if chain[position] in walk.written:
                tokens = walk.prefix_tokens(index, found, chain, position)
                if tokens >= OPENAI_MIN_TOKENS:
                    read = tokens // OPENAI_STEP_TOKENS * OPENAI_STEP_TOKENS
                break
    walk.written.update(chain)
    price = walk.prices.get(str(request.body.get("model")))
    writes: dict[str, int] = {}
    if price is not None and price.cache_write_usd_per_million and total >= OPENAI_MIN_TOKENS:
        options = request.body.get("prompt_cache_options")
        ttl = str(options.get("ttl") or "30m") if isinstance(options, Mapping) else "30m"
        if total > read:
            writes[ttl] = total - read
    return read, writes


def _implicit(walk: _Walk, index: int, found: Sequence[Slot],
              chain: Sequence[int]) -> tuple[int, dict[str, int]]:
    """Gemini's implicit cache: the longest prefix an earlier request sent is read, when it
    is at least the model's minimum; nothing is billed for writing it."""
    read = 0
    minimum = walk.minimum(walk.requests[index])
    for position in range(len(chain) - 1, -1, -1):
        if chain[position] in walk.written:
            tokens = walk.prefix_tokens(index, found, chain, position)
            read = tokens if tokens >= minimum else 0
            break
    walk.written.update(chain)
    return read, {}


def expect_cache(requests: Sequence[PlannedRequest], totals: Sequence[int], *,
                 prices: Mapping[str, ModelPrice | None], count: CountTokens,
                 index: ChainIndex | None = None) -> list[ExpectedCache]:
    """Expected reads and writes per request (``totals``: each one's expected input tokens)."""
    chains = index or ChainIndex()
    layouts = [slots(r.provider, r.endpoint, r.body) for r in requests]
    ids = [chains.chain(r, found) for r, found in zip(requests, layouts, strict=True)]
    shares: Counter[int] = Counter(cid for chain in ids for cid in set(chain))
    walk = _Walk(requests, totals, prices, count)
    leaders: dict[int, int] = {}
    expected = []
    for i, (found, chain) in enumerate(zip(layouts, ids, strict=True)):
        shared = _cacheable(walk, i, found, chain, shares)
        for position in shared:
            leaders.setdefault(chain[position], i)
        after = tuple(sorted({leaders[chain[p]] for p in shared} - {i}))
        group = leaders[chain[shared[-1]]] if shared else None
        if marks_breakpoints(requests[i].provider):
            read, writes = _anthropic(walk, i, found, chain)
        elif caches_implicitly(requests[i].provider):
            read, writes = _implicit(walk, i, found, chain)
        else:
            read, writes = _openai(walk, i, found, chain)
        expected.append(ExpectedCache(read, writes, after, group))
    return expected
