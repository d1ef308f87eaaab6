"""Cache ordering for a whole plan, where more is known than for one request.

Across a plan it is known which blocks other requests send too (they go first in the first
user message), how many requests will read each stable prefix (pay-back), and roughly how far
apart those reads are (the TTL). Each request is then ordered as
:func:`spendguard.order_for_cache` would, with those facts filled in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from spendguard._caching.arrange import text_identity
from spendguard._caching.inline import common_edges
from spendguard._caching.layout import Path, Slot, identity, prefix_body, slots
from spendguard._caching.marks import mark, stable_ends
from spendguard._caching.order import CacheOrder
from spendguard._caching.rules import rules_for
from spendguard._caching.volatile import VolatileValue
from spendguard._costing.prices import ModelPrice
from spendguard._strategies.plan.estimates import Assumptions
from spendguard._strategies.plan.inputs import PlannedRequest
from spendguard._strategies.plan.prefixes import ChainIndex, CountTokens

__all__ = ["Ordered", "order_plan"]

_MAX_NOTES = 6
_DEFAULT_CAP = 1024


@dataclass(frozen=True, slots=True)
class Ordered:
    """A plan's requests ordered for the cache, and what was flagged on the way."""

    requests: tuple[PlannedRequest, ...]
    volatile: tuple[VolatileValue, ...]
    notes: tuple[str, ...]


def _first_user_blocks(request: PlannedRequest) -> list[Any]:
    field = request.endpoint.turns_field or "messages"
    for message in request.body.get(field) or []:
        if not isinstance(message, Mapping) or message.get("role") in ("system", "developer"):
            continue
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            return [{k: v for k, v in b.items() if k not in ("cache_control",
                                                             "prompt_cache_breakpoint")}
                    for b in content if isinstance(b, Mapping)]
        return []
    return []


def _first_user_texts(request: PlannedRequest) -> list[str]:
    """The texts of a request's first user message (a string, or its text blocks)."""
    field = request.endpoint.turns_field or "messages"
    for message in request.body.get(field) or []:
        if not isinstance(message, Mapping) or message.get("role") in ("system", "developer"):
            continue
        content = message.get("content")
        if message.get("role") != "user":
            return []
        if isinstance(content, str):
            return [content]
        return [str(b["text"]) for b in content or [] if isinstance(b, Mapping)
                and isinstance(b.get("text"), str)] if isinstance(content, list) else []
    return []


def _inline_shared(requests: Sequence[PlannedRequest]) -> list[str]:
    """Long runs every request's first user text starts or ends with (a pasted document)."""
    texts = [max(found, key=len) for r in requests if (found := _first_user_texts(r))]
    return common_edges(texts) if len(texts) == len(requests) else []


def _split_saving_note(requests: Sequence[PlannedRequest], texts: Sequence[str],
                       prices: Mapping[str, ModelPrice | None], count: CountTokens) -> str:
    """What sending the shared text first, as its own block, would save over the plan."""
    request = requests[0]
    price = prices.get(str(request.body.get("model")))
    doc = max(texts, key=len)
    field = request.endpoint.turns_field or "messages"
    body = {**request.body, field: [{"role": "user", "content": doc}]}
    body.pop("system", None)
    body.pop("tools", None)
    tokens = count(request, body)
    saving = ""
    if price is not None:
        read = price.base_rate("cache_read")
        write = min(price.cache_write_usd_per_million.values(),
                    default=price.input_usd_per_million)
        usd = (tokens * ((len(requests) - 1) * (price.input_usd_per_million - read)
                         - (write - price.input_usd_per_million))) / 1_000_000
        saving = f", saving about ${max(usd, 0):.4f}"
    return (f"{len(requests)} requests share a {len(doc):,}-character text (about {tokens:,} "
            f"tokens) after their own text in the first user message; sent first as its own "
            f"block (or with reorder_content=True) it would be read from the cache{saving}")


def _head_identities(request: PlannedRequest) -> set[Any]:
    """Tools and system text of a request, in every form the orderer looks them up by."""
    found: set[Any] = set()
    for slot in slots(request.provider, request.endpoint, request.body):
        if slot.path[0] not in ("tools", "system", "instructions") and slot.role not in (
                "system", "developer"):
            break
        found.add(identity(slot.value))
        value = slot.value if isinstance(slot.value, Mapping) else {}
        for key in ("text", "content", "instructions"):
            if isinstance(value.get(key), str):
                found.add(text_identity(value[key]))
    return found


def _shared_blocks(requests: Sequence[PlannedRequest]) -> frozenset[Any]:
    """What more than one request sends: its head (tools, system) and first-message blocks."""
    seen: Counter[Any] = Counter()
    for request in requests:
        seen.update({identity(block) for block in _first_user_blocks(request)}
                    | _head_identities(request))
    return frozenset(block for block, count in seen.items() if count > 1)


def _cap(body: Mapping[str, Any]) -> int:
    for name in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        value = body.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return _DEFAULT_CAP


def _gaps_s(requests: Sequence[PlannedRequest], groups: Sequence[int | None],
            sizes: Counter[int], concurrency: int, assumptions: Assumptions) -> list[float]:
    """Seconds between reads of each request's prefix: the run's length over its readers."""
    latency = sum(assumptions.first_token_s + _cap(r.body) / assumptions.output_tok_s
                  for r in requests) / len(requests)
    run_s = latency * len(requests) / concurrency
    return [run_s / sizes[g] if g is not None else run_s for g in groups]


def _dedupe_volatile(found: list[VolatileValue]) -> tuple[VolatileValue, ...]:
    kept: dict[tuple[str, str, bool], VolatileValue] = {}
    for value in found:
        kept.setdefault((value.where, value.kind, value.moved), value)
    return tuple(kept.values())


def order_plan(requests: Sequence[PlannedRequest], options: CacheOrder, *,
               prices: Mapping[str, ModelPrice | None], count: CountTokens,
               concurrency: int, assumptions: Assumptions) -> Ordered:
    """Order every request of a plan for the cache (see the module docstring)."""
    inline = _inline_shared(requests)
    shared = _shared_blocks(requests) | frozenset(
        identity({"type": kind, "text": text}) for text in inline
        for kind in ("text", "input_text"))
    results = [rules_for(r.provider).arrange(
        r.provider, r.endpoint, r.body, shared=shared, move_volatile=options.move_volatile,
        to_last_message=options.volatile_to_last_message,
        reorder_content=options.reorder_content, shared_texts=inline) for r in requests]
    arranged = [replace(r, body=result.body) for r, result in zip(requests, results, strict=True)]
    volatile = [value for result in results for value in result.volatile]
    moved = sum(1 for result in results if result.moves)
    # A move changes the order of what the caller wrote: the plan says so, never silently.
    moved_notes = [f"content reordered in {moved} of {len(results)} request(s) (opt-in: "
                   f"{'; '.join(next(r.moves for r in results if r.moves))})"] if moved else []
    if any("follows this request's own text" in n for r in results for n in r.notes):
        moved_notes.append(_split_saving_note(requests, inline, prices, count))
    split = sum(1 for r in results if any("split the shared text" in n for n in r.notes))
    if split:
        moved_notes.append(f"a shared text was split into a block of its own in {split} "
                           f"request(s) (order unchanged)")
    # No markers where the provider caches a common prefix by itself (Gemini).
    if not options.breakpoints or not all(rules_for(r.provider).markers for r in requests):
        return Ordered(tuple(arranged), _dedupe_volatile(volatile), tuple(moved_notes))
    index = ChainIndex()
    groups: list[int | None] = []
    chains: list[dict[Path, int]] = []
    layouts: list[list[Slot]] = []
    for request in arranged:
        found = slots(request.provider, request.endpoint, request.body)
        layouts.append(found)
        chain = index.chain(request, found)
        chains.append({slot.path: cid for slot, cid in zip(found, chain, strict=True)})
        head, documents, _ = stable_ends(request.provider, request.endpoint, request.body,
                                         shared, found=found)
        deepest = documents if documents is not None else head
        groups.append(chain[deepest] if deepest is not None else None)
    sizes = Counter(g for g in groups if g is not None)
    gaps = _gaps_s(arranged, groups, sizes, concurrency, assumptions)
    memo: dict[int, int] = {}
    ordered, notes = [], list(moved_notes)
    for request, group, chain_at, gap, found in zip(arranged, groups, chains, gaps, layouts,
                                                    strict=True):
        def prefix_tokens(path: Path, request: PlannedRequest = request,
                          chain_at: dict[Path, int] = chain_at) -> int:
            cid = chain_at[path]
            if cid not in memo:
                memo[cid] = count(request, prefix_body(request.body, path))
            return memo[cid]
        reuses = sizes[group] - 1 if group is not None else 0
        marked = mark(request.provider, request.endpoint, request.body,
                      model_price=prices.get(str(request.body.get("model"))),
                      prefix_tokens=prefix_tokens, shared=shared, reuses=reuses,
                      reuse_gap_s=gap, cache_key=options.prompt_cache_key, found=found)
        ordered.append(replace(request, body=marked.body))
        notes += [n for n in marked.notes if n not in notes]
    return Ordered(tuple(ordered), _dedupe_volatile(volatile), tuple(notes[:_MAX_NOTES]))
