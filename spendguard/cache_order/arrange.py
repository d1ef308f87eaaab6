"""Reorder a request so its stable content comes first, without changing what it says.

What moves, and why it keeps the meaning:

- tools: sorted by name, keys sorted at every level (a set or a dict built in another order
  would otherwise give different bytes, and a tool change invalidates every cache entry);
- system text: paragraphs holding a volatile value (timestamp, uuid, id) go after the stable
  ones, in a block of their own where the API allows it; nothing is reworded;
- the first user message: documents, images, files, long texts and blocks shared across
  requests go before the rest of that message (long content before the question, as both
  providers advise).

Conversation turns are never reordered and never merged. The input body is not modified.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from spendguard.cache_order.layout import identity
from spendguard.cache_order.volatile import (
    VolatileValue,
    find_volatile,
    has_volatile,
    split_paragraphs,
)

__all__ = ["Arranged", "arrange", "is_shared", "is_stable_block", "shared_text", "text_identity"]

_DOCUMENT_TYPES = frozenset({"document", "image", "image_url", "input_image", "input_file",
                             "file", "search_result"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
LONG_TEXT_CHARS = 4000
"""A text block this long (about 1,000 tokens, the shortest prefix worth caching) is taken
for a document: it goes before the question like one."""


@dataclass(frozen=True, slots=True)
class Arranged:
    """A reordered body and the volatile values found in its stable part."""

    body: dict[str, Any]
    volatile: tuple[VolatileValue, ...]


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _sorted_keys(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, Mapping):
        return ""
    function = tool.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        return str(function["name"])
    return str(tool.get("name") or tool.get("type") or "")


def shared_text(text: str, shared: Collection[Any]) -> bool:
    """Whether other requests send this very text too (then it cannot break a prefix)."""
    return bool(shared) and text_identity(text) in shared


@functools.lru_cache(maxsize=4096)
def text_identity(text: str) -> Any:
    """The identity of ``{"type": "text", "text": text}``, computed once per text."""
    return identity({"type": "text", "text": text})


_MARKERS = frozenset({"cache_control", "prompt_cache_breakpoint"})


def _bare(block: Mapping[str, Any]) -> Mapping[str, Any]:
    if _MARKERS.isdisjoint(block):
        return block
    return {k: v for k, v in block.items() if k not in _MARKERS}


def is_shared(block: Any, shared: Collection[Any]) -> bool:
    """Whether other requests send this very block too."""
    return bool(shared) and isinstance(block, Mapping) and identity(_bare(block)) in shared


def _tools(tools: list[Any], found: list[VolatileValue], shared: Collection[Any]) -> list[Any]:
    # A marker on the last tool caches all tools: it stays on whichever tool ends up last.
    marker = next((t["cache_control"] for t in reversed(tools)
                   if isinstance(t, Mapping) and t.get("cache_control")), None)
    bare = [_sorted_keys({k: v for k, v in t.items() if k != "cache_control"})
            if isinstance(t, Mapping) else t for t in tools]
    ordered = sorted(bare, key=lambda t: (_tool_name(t), json.dumps(t, sort_keys=True,
                                                                   default=str)))
    for index, tool in enumerate(ordered):
        if not is_shared(tool, shared):
            found += find_volatile(json.dumps(tool, default=str), f"tools[{index}]")
    if marker is not None and ordered and isinstance(ordered[-1], Mapping):
        ordered[-1] = {**ordered[-1], "cache_control": marker}
    return ordered


def _text_parts(blocks: list[Any], where: str, found: list[VolatileValue], text_type: str,
                move: bool, shared: Collection[Any]) -> list[Any]:
    """Split each text block into stable and volatile paragraphs; volatile ones go last."""
    stable: list[Any] = []
    moved: list[Any] = []
    values: list[VolatileValue] = []
    for index, block in enumerate(blocks):
        text = block.get("text") if isinstance(block, Mapping) else None
        here = find_volatile(text, f"{where}[{index}]") if isinstance(text, str) and not \
            is_shared(block, shared) else []
        if not here or not move:
            stable.append(block)
            values += here
            continue
        values += here
        keep, volatile = split_paragraphs(str(text))
        if keep:
            stable.append({**block, "text": keep})
            moved.append({"type": block.get("type", text_type), "text": volatile})
        else:
            moved.append(block)
    # Moving helps only when stable content is left to go first.
    found += [_moved(v, move and bool(stable) and bool(moved)) for v in values]
    return stable + moved


def _moved(value: VolatileValue, moved: bool) -> VolatileValue:
    return VolatileValue(value.where, value.kind, value.value, moved)


def _system_text(text: str, where: str, found: list[VolatileValue], move: bool,
                 as_blocks: bool, shared: Collection[Any]) -> Any:
    values = [] if shared_text(text, shared) else find_volatile(text, where)
    keep, volatile = split_paragraphs(text) if values and move else (text, "")
    found += [_moved(v, bool(keep) and bool(volatile)) for v in values]
    if not keep or not volatile:
        return text
    if as_blocks:
        return [{"type": "text", "text": keep}, {"type": "text", "text": volatile}]
    return f"{keep}\n\n{volatile}"


def is_stable_block(block: Any, shared: Collection[Any]) -> bool:
    """Whether a content block belongs before the question: a document, an image, a file, a
    long text (a document pasted as text), a block the caller marked for caching, or one
    shared with other requests."""
    if not isinstance(block, Mapping):
        return False
    if block.get("type") in _DOCUMENT_TYPES or block.get("cache_control"):
        return True
    if is_shared(block, shared):
        return True
    text = block.get("text")
    return isinstance(text, str) and len(text) >= LONG_TEXT_CHARS and not has_volatile(text)


def _first_user_message(messages: list[Any], field: str, shared: Collection[Any],
                        found: list[VolatileValue]) -> list[Any]:
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") in _SYSTEM_ROLES:
            continue
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            return messages
        first = [b for b in content if is_stable_block(b, shared)]
        rest = [b for b in content if not is_stable_block(b, shared)]
        for position, block in enumerate(first):
            text = block.get("text") if isinstance(block, Mapping) else None
            if isinstance(text, str) and not is_shared(block, shared):
                found += find_volatile(text, f"{field}[{index}].content[{position}]")
        if first and rest:
            return [*messages[:index], {**message, "content": first + rest},
                    *messages[index + 1:]]
        return messages
    return messages


def _openai_system(messages: list[Any], found: list[VolatileValue], move: bool,
                   shared: Collection[Any]) -> list[Any]:
    out = list(messages)
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in _SYSTEM_ROLES:
            break
        content = message.get("content")
        where = f"messages[{index}].content"
        if isinstance(content, str):
            out[index] = {**message, "content": _system_text(content, where, found, move,
                                                             as_blocks=True, shared=shared)}
        elif isinstance(content, list):
            out[index] = {**message, "content": _text_parts(content, where, found, "text",
                                                            move, shared)}
    return out


def arrange(provider: str, endpoint: str, body: Mapping[str, Any], *,
            shared: Collection[Any] = (), move_volatile: bool = True) -> Arranged:
    """Stable content first (see the module docstring); ``shared`` holds the identities
    (:func:`~spendguard.cache_order.layout.identity`) of blocks other requests also send: they
    go first, and a timestamp or id in them is no reason to move them (it is the same in every
    request, so it breaks no prefix).

    With ``move_volatile=False`` system text stays as it is; volatile values are only found.
    """
    out = dict(body)
    found: list[VolatileValue] = []
    if endpoint == "embeddings":
        return Arranged(out, ())
    if isinstance(body.get("tools"), list) and body["tools"]:
        out["tools"] = _tools(list(body["tools"]), found, shared)
    field = "input" if provider == "openai" and endpoint == "responses" else "messages"
    if provider == "anthropic":
        system = body.get("system")
        if isinstance(system, str) and system:
            out["system"] = _system_text(system, "system", found, move_volatile,
                                         as_blocks=True, shared=shared)
        elif isinstance(system, list):
            out["system"] = _text_parts(list(system), "system", found, "text", move_volatile,
                                        shared)
    elif endpoint == "responses":
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            out["instructions"] = _system_text(instructions, "instructions", found,
                                               move_volatile, as_blocks=False, shared=shared)
    elif isinstance(body.get("messages"), list):
        out["messages"] = _openai_system(body["messages"], found, move_volatile, shared)
    if isinstance(out.get(field), list):
        out[field] = _first_user_message(out[field], field, shared, found)
    return Arranged(out, tuple(found))
