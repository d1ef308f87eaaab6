"""Cache markers on an arranged request: Anthropic breakpoints, OpenAI keys and breakpoints.

The *stable prefix* of a request is every slot from the start up to the first one that is
neither a tool, nor stable system text, nor a stable block at the start of the first user
message (see :mod:`spendguard._caching.arrange`). It can end at two useful places: after
tools and system (shared by every request of a kind) and after the shared documents. Those are
the breakpoint candidates; one under the model's minimum cacheable length is skipped (the API
would silently not cache it, and the slot is better kept). A per-request tail is never marked.

Anthropic rejects a request with more than 4 ``cache_control`` markers (HTTP 400). When the
caller's own markers exceed that, the ones worth most are kept: a marker is worth the stable
prefix it caches (tokens up to it); one inside the per-request part (after a volatile value or
past the shared documents) is worth nothing — it pays the write premium for an entry no later
request reads — and goes first. The rest are dropped, with a warning on the ``spendguard``
logger and a note.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spendguard._caching.arrange import is_shared, is_stable_block, shared_text
from spendguard._caching.kind import marks_breakpoints
from spendguard._caching.layout import Path, Slot, describe, identity, slots
from spendguard._caching.policy import choose_ttl, min_cacheable_tokens, pays_back
from spendguard._caching.volatile import has_volatile
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import ModelPrice

__all__ = ["MAX_BREAKPOINTS", "Marked", "cap_markers", "existing_breakpoints", "limit_markers",
           "mark", "stable_ends"]

MAX_BREAKPOINTS = 4
"""Anthropic's limit on ``cache_control`` markers per request (the API answers 400 above it)."""
log = logging.getLogger("spendguard")
_SYSTEM_ROLES = frozenset({"system", "developer"})

PrefixTokens = Callable[[Path], int]


@dataclass(frozen=True, slots=True)
class Marked:
    """A body with its cache markers, and what was decided."""

    body: dict[str, Any]
    breakpoints: tuple[Path, ...]
    """Slots that carry a marker now (the caller's and the added ones)."""
    prompt_cache_key: str | None
    ttl: str | None
    notes: tuple[str, ...]


def _text_of(value: Any) -> str:
    if isinstance(value, Mapping):
        return " ".join(_text_of(v) for k, v in value.items() if k != "data")
    if isinstance(value, list | tuple):
        return " ".join(_text_of(v) for v in value)
    return value if isinstance(value, str) else ""


def stable_ends(provider: str, endpoint: Endpoint, body: Mapping[str, Any],
                shared: Collection[Any] = (), *, found: Sequence[Slot] | None = None
                ) -> tuple[int | None, int | None, Path | None]:
    """Where the stable prefix ends: the slot index after tools + system, the one after the
    shared documents at the start of the first user message (None where there is none), and
    the path of a volatile head slot that cut it short (None if none did). ``found``: the
    body's slots, when the caller has them already."""
    found = slots(provider, endpoint, body) if found is None else found
    head: int | None = None
    for index, slot in enumerate(found):
        head_slot = slot.path[0] in ("tools", "system", "instructions") or (
            slot.role in _SYSTEM_ROLES)
        if not head_slot:
            return head, _documents_end(found, index, shared), None
        if not _shared_slot(slot, shared) and has_volatile(_text_of(slot.value)):
            return head, None, slot.path
        head = index
    return head, None, None


def _shared_slot(slot: Slot, shared: Collection[Any]) -> bool:
    if not shared:
        return False
    if identity(slot.value) in shared:
        return True
    content = slot.value.get("content") if isinstance(slot.value, Mapping) else None
    text = slot.value.get("text", slot.value.get("instructions")) \
        if isinstance(slot.value, Mapping) else None
    return (isinstance(content, str) and shared_text(content, shared)) or (
        isinstance(text, str) and shared_text(text, shared))


def _documents_end(found: Sequence[Slot], start: int, shared: Collection[Any]) -> int | None:
    first = found[start]
    if first.role != "user" or len(first.path) < 3 or first.path[2] is None:
        return None
    end = None
    for index in range(start, len(found)):
        slot = found[index]
        if slot.path[:2] != first.path[:2]:
            break
        block = slot.value["block"] if slot.path[2] == 0 else slot.value
        if not is_stable_block(block, shared) or (
                not is_shared(block, shared) and has_volatile(_text_of(block))):
            break
        end = index
    return end


def existing_breakpoints(body: Mapping[str, Any], found: list[Slot]) -> list[tuple[int, str]]:
    """``(slot index, TTL)`` of the Anthropic cache markers a body carries, in prompt order."""
    marks = []
    for index, slot in enumerate(found):
        block = _at(body, slot.path)
        control = block.get("cache_control") if isinstance(block, Mapping) else None
        if isinstance(control, Mapping):
            marks.append((index, str(control.get("ttl") or "5m")))
    if isinstance(body.get("cache_control"), Mapping) and found:
        marks.append((len(found) - 1, str(body["cache_control"].get("ttl") or "5m")))
    return marks


def _at(body: Mapping[str, Any], path: Path) -> Any:
    value: Any = body.get(path[0])
    for key in path[1:]:
        if key is None:
            return value
        if isinstance(value, Mapping):
            value = value.get("content")
        value = value[key] if isinstance(value, list) and key < len(value) else None
    return value


def _put(body: dict[str, Any], path: Path, key: str, marker: Mapping[str, Any]) -> bool:
    """Set ``key: marker`` on the block at ``path``, turning a string into one text block."""
    field = path[0]
    if field == "tools":
        tools = list(body[field])
        tools[path[1]] = {**tools[path[1]], key: dict(marker)}
        body[field] = tools
        return True
    if field == "system":
        system = body["system"]
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
        index = 0 if path[1] is None else path[1]
        blocks[index] = {**blocks[index], key: dict(marker)}
        body["system"] = blocks
        return True
    if field not in ("messages", "input") or path[1] is None:
        return False  # Responses instructions and string input cannot carry a marker
    messages = list(body[field])
    message = dict(messages[path[1]])
    content: Any = message.get("content")
    text_type = "input_text" if field == "input" else "text"
    blocks = [{"type": text_type, "text": content}] if isinstance(content, str) else list(content)
    position = 0 if path[2] is None else path[2]
    block = blocks[position]
    if key == "prompt_cache_breakpoint" and block.get("type") not in ("text", "input_text"):
        return False  # OpenAI takes breakpoints on text parts only
    blocks[position] = {**block, key: dict(marker)}
    message["content"] = blocks
    messages[path[1]] = message
    body[field] = messages
    return True


def _candidates(ends: tuple[int | None, int | None], found: list[Slot],
                prefix_tokens: PrefixTokens, minimum: int, notes: list[str]) -> list[int]:
    chosen, skipped = [], []
    for end in ends:
        if end is None or end in chosen:
            continue
        tokens = prefix_tokens(found[end].path)
        if tokens < minimum:
            skipped.append(f"no breakpoint after {describe(found[end].path)}: the prefix is "
                           f"about {tokens} tokens, under the model's {minimum}-token minimum")
            continue
        chosen.append(end)
    if not chosen:  # a short head before a long document needs no explaining
        notes += skipped
    return chosen


@functools.lru_cache(maxsize=1024)
def _cache_key(prefix: tuple[Any, ...]) -> str:
    # A plan asks for the same few prefixes' keys thousands of times: digest each once.
    return "sg-" + hashlib.sha256(repr(prefix).encode()).hexdigest()[:16]


def mark(provider: str, endpoint: Endpoint, body: Mapping[str, Any], *,
         model_price: ModelPrice | None, prefix_tokens: PrefixTokens,
         shared: Collection[Any] = (), reuses: int | None = None,
         reuse_gap_s: float | None = None, cache_key: bool = True,
         found: Sequence[Slot] | None = None) -> Marked:
    """Add cache markers to an arranged body; ``reuses`` and ``reuse_gap_s`` are how many
    later requests read the prefix and how far apart (None: unknown, one reuse assumed).
    ``found``: the body's slots, when the caller has them already."""
    out = dict(body)
    notes: list[str] = []
    found = list(slots(provider, endpoint, out) if found is None else found)
    head, documents, blocked = stable_ends(provider, endpoint, out, shared, found=found)
    if marks_breakpoints(provider):  # before anything else: an over-marked request is rejected
        cap_markers(out, found, prefix_tokens, documents if documents is not None else head,
                    notes)
    ttl = choose_ttl(provider, endpoint, reuse_gap_s)
    if ttl is None:
        notes.append(f"not cached: reuses {reuse_gap_s:.0f} s apart outlive every TTL")
        return Marked(out, (), None, None, tuple(notes))
    if model_price is not None and not pays_back(model_price, ttl, reuses):
        notes.append(f"not cached: {reuses or 0} expected reuse(s) do not pay back a {ttl} "
                     f"cache write")
        return Marked(out, (), None, None, tuple(notes))
    if blocked is not None:
        notes.append(f"the cacheable prefix stops at {describe(blocked)}: it holds a value that "
                     "changes per request, so nothing after it is read from the cache "
                     "(volatile_to_last_message=True moves it to the end of the last user "
                     "message; or leave it out)")
    minimum = min_cacheable_tokens(model_price)
    chosen = _candidates((head, documents), found, prefix_tokens, minimum, notes)
    if marks_breakpoints(provider):
        return _anthropic(out, found, chosen, ttl, notes)
    return _openai(out, found, chosen, ttl, model_price, cache_key, notes)


def cap_markers(body: dict[str, Any], found: list[Slot], prefix_tokens: PrefixTokens,
                stable_end: int | None, notes: list[str]) -> list[str]:
    """Drop the caller's Anthropic markers beyond :data:`MAX_BREAKPOINTS`, least worth first.

    Changes ``body`` in place (its blocks are copies made by the arranging step or here);
    returns where markers were dropped.
    """
    existing = existing_breakpoints(body, found)
    if len(existing) <= MAX_BREAKPOINTS:
        return []
    top_level = isinstance(body.get("cache_control"), Mapping)

    def worth(position: int) -> int:
        index = existing[position][0]
        automatic = top_level and position == len(existing) - 1
        if automatic or stable_end is None or index > stable_end:
            return 0  # caches a per-request prefix: nothing later reads it
        return prefix_tokens(found[index].path)

    ranked = sorted(range(len(existing)), key=lambda p: (-worth(p), p))
    dropped = []
    for position in sorted(ranked[MAX_BREAKPOINTS:], reverse=True):
        index = existing[position][0]
        if top_level and position == len(existing) - 1:
            body.pop("cache_control")
            dropped.append("the request's automatic cache_control")
        else:
            _unmark(body, found[index].path)
            dropped.append(describe(found[index].path))
    dropped.reverse()
    message = (f"{len(existing)} cache_control markers, Anthropic takes at most "
               f"{MAX_BREAKPOINTS}: dropped the one(s) worth least ({', '.join(dropped)})")
    notes.append(message)
    log.warning("spendguard: %s", message)
    return dropped


def limit_markers(provider: str, endpoint: Endpoint, body: Mapping[str, Any],
                  prefix_tokens: PrefixTokens, shared: Collection[Any] = ()
                  ) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``body`` with at most :data:`MAX_BREAKPOINTS` Anthropic markers, and the notes; for
    ordering without adding breakpoints (``breakpoints=False``)."""
    out = dict(body)
    notes: list[str] = []
    if marks_breakpoints(provider):
        found = slots(provider, endpoint, out)
        head, documents, _ = stable_ends(provider, endpoint, out, shared, found=found)
        cap_markers(out, found, prefix_tokens, documents if documents is not None else head,
                    notes)
    return out, tuple(notes)


def _unmark(body: dict[str, Any], path: Path) -> None:
    """Remove the ``cache_control`` marker of the block at ``path`` (copying what it changes)."""
    field = path[0]
    if field in ("tools", "system"):
        blocks = list(body[field])
        index = 0 if path[1] is None else path[1]
        blocks[index] = {k: v for k, v in blocks[index].items() if k != "cache_control"}
        body[field] = blocks
        return
    messages = list(body[field])
    message = dict(messages[path[1]]) if path[1] is not None else {}
    content = list(message.get("content") or [])
    position = 0 if path[2] is None else path[2]
    content[position] = {k: v for k, v in content[position].items() if k != "cache_control"}
    message["content"] = content
    messages[path[1] if path[1] is not None else 0] = message
    body[field] = messages


def _anthropic(body: dict[str, Any], found: list[Slot], chosen: list[int], ttl: str,
               notes: list[str]) -> Marked:
    existing = existing_breakpoints(body, found)
    marked = {index for index, _ in existing}
    points = list(existing)
    for index in chosen:
        if index in marked:
            continue
        if len(points) >= MAX_BREAKPOINTS:
            notes.append(f"no breakpoint after {describe(found[index].path)}: the request "
                         f"already has {MAX_BREAKPOINTS}")
            continue
        here = ttl
        # 1-hour entries must come before 5-minute ones in the prompt.
        if here == "1h" and any(t == "5m" and i < index for i, t in points):
            here = "5m"
        if here == "5m" and any(t == "1h" and i > index for i, t in points):
            continue
        marker = {"type": "ephemeral"} if here == "5m" else {"type": "ephemeral", "ttl": here}
        if _put(body, found[index].path, "cache_control", marker):
            points.append((index, here))
    paths = tuple(found[i].path for i, _ in sorted(points) if i < len(found))
    return Marked(body, paths, None, ttl if len(points) > len(existing) else None,
                  tuple(notes))


def _openai(body: dict[str, Any], found: list[Slot], chosen: list[int], ttl: str,
            model_price: ModelPrice | None, cache_key: bool, notes: list[str]) -> Marked:
    if not chosen:
        return Marked(body, (), body.get("prompt_cache_key"), None, tuple(notes))
    deepest = max(chosen)
    key = body.get("prompt_cache_key")
    if cache_key and not key:
        key = body["prompt_cache_key"] = _cache_key(tuple(identity(s.value)
                                                          for s in found[:deepest + 1]))
    points: list[Path] = []
    # Explicit breakpoints and TTLs exist from gpt-5.6 on: the models that bill cache writes.
    if model_price is not None and model_price.cache_write_usd_per_million:
        existing = sum(1 for s in found if isinstance(_at(body, s.path), Mapping)
                       and _at(body, s.path).get("prompt_cache_breakpoint"))
        for index in chosen:
            if existing + len(points) >= MAX_BREAKPOINTS:
                break
            if _put(body, found[index].path, "prompt_cache_breakpoint", {"mode": "explicit"}):
                points.append(found[index].path)
        if ttl != "30m" and "prompt_cache_options" not in body:
            body["prompt_cache_options"] = {"ttl": ttl}
    return Marked(body, tuple(points), key, ttl, tuple(notes))
