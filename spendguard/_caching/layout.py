"""A request's prompt as the provider renders it: cacheable slots in order, each with a path.

Every provider caches exact prefixes of the rendered prompt, in the order tools → system
(instructions, Gemini's ``systemInstruction``) → messages (Gemini's ``contents``, whose turns
hold ``parts``). A *slot* is the smallest piece a prefix can end on: one tool, one
system block, one content block (or a whole message whose content is a string). Planning hashes
slots to find prefixes shared across requests; cache ordering places breakpoints on them.
Nothing here changes a body.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from spendguard._caching.kind import body_fields, caches_implicitly, marks_breakpoints
from spendguard._costing.endpoints import Endpoint

__all__ = ["Slot", "describe", "identity", "prefix_body", "remembered_identities", "slots"]

Path = tuple[Any, ...]
_MARKERS = frozenset({"cache_control", "prompt_cache_breakpoint"})
# id(dict) -> (the dict, its identity). The dict is held so that its id cannot be reused
# while the memo lives; only a block that is never modified afterwards may be remembered.
_memo: ContextVar[dict[int, tuple[Any, Any]] | None] = ContextVar("spendguard_identities",
                                                                  default=None)


@contextmanager
def remembered_identities() -> Iterator[None]:
    """Inside the block, :func:`identity` computes each dict's identity once (a planner sees
    the same blocks many times). Dicts must not be modified inside the block."""
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


@dataclass(frozen=True, slots=True)
class Slot:
    """One cacheable piece of a prompt.

    ``path`` addresses it in the body: ``("tools", 2)``, ``("system", 0)``,
    ``("messages", 1, 0)`` (block 0 of message 1), ``("messages", 1, None)`` (a message whose
    content is a string), ``("instructions",)``, ``("input", 0, 1)``. ``value`` is what the
    provider renders there, without cache markers.
    """

    path: Path
    value: Any
    role: str | None = None


def _strip(value: Any) -> Any:
    if type(value) is dict or isinstance(value, Mapping):
        if _MARKERS.isdisjoint(value):
            return value
        return {k: v for k, v in value.items() if k not in _MARKERS}
    return value


def _gemini_slots(body: Mapping[str, Any]) -> list[Slot]:
    system = body.get("systemInstruction", body.get("system_instruction"))
    found: list[Slot] = []
    if isinstance(system, str) and system:
        found.append(Slot(("systemInstruction", None), {"text": system}))
    elif isinstance(system, Mapping) and isinstance(system.get("parts"), list):
        found += [Slot(("systemInstruction", i), part)
                  for i, part in enumerate(system["parts"])]
    contents = body.get("contents")
    if isinstance(contents, str):
        return [*found, Slot(("contents", None, None), {"role": "user", "parts": contents},
                             "user")]
    for index, content in enumerate(contents if isinstance(contents, list) else []):
        role = content.get("role") if isinstance(content, Mapping) else None
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if isinstance(parts, list) and parts:
            found += [Slot(("contents", index, position),
                           {"role": role, "block": part} if position == 0 else part, role)
                      for position, part in enumerate(parts)]
        else:
            found.append(Slot(("contents", index, None), content, role))
    return found


def _message_slots(field: str, messages: Any) -> list[Slot]:
    found: list[Slot] = []
    if isinstance(messages, str):  # Responses: input as one string is one user message
        return [Slot((field, None, None), {"role": "user", "content": messages}, "user")]
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        if type(message) is not dict and not isinstance(message, Mapping):
            found.append(Slot((field, index, None), message))
            continue
        role = message.get("role") if isinstance(message.get("role"), str) else None
        content = message.get("content")
        if isinstance(content, list) and content:
            # The role frames the message's first block: a block is identified with it.
            for position, block in enumerate(content):
                value = _strip(block)
                if position == 0:
                    value = {"role": role, "block": value}
                found.append(Slot((field, index, position), value, role))
        else:
            found.append(Slot((field, index, None), _strip(message), role))
    return found


def slots(provider: str, endpoint: Endpoint, body: Mapping[str, Any]) -> list[Slot]:
    """The cacheable slots of a request body, in the order the provider renders them."""
    if endpoint.embeds:
        return []
    found = [Slot(("tools", i), _strip(tool)) for i, tool in enumerate(body.get("tools") or [])]
    if caches_implicitly(provider):
        return found + _gemini_slots(body)
    if marks_breakpoints(provider):
        system = body.get("system")
        if isinstance(system, str) and system:
            found.append(Slot(("system", None), {"type": "text", "text": system}))
        elif isinstance(system, list):
            found += [Slot(("system", i), _strip(b)) for i, b in enumerate(system)]
        return found + _message_slots("messages", body.get("messages"))
    turns, system_field = body_fields(provider, endpoint)
    if system_field is not None and body.get(system_field):  # Responses' instructions
        found.append(Slot((system_field,), {system_field: body[system_field]}))
    return found + _message_slots(turns, body.get(turns))


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _items(value: Mapping[Any, Any]) -> tuple[Any, ...]:
    # Scalars inline: identity() runs for every block of every planned request.
    return tuple(sorted((str(k), v if type(v) in _SCALARS else identity(v))
                        for k, v in value.items()))


def identity(value: Any) -> Any:
    """A hashable form of a JSON value: equal for equal content, whatever the key order."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        memo = _memo.get()
        if memo is None:
            return _items(value)
        hit = memo.get(id(value))
        if hit is None:
            hit = memo[id(value)] = (value, _items(value))
        return hit[1]
    if kind is list or kind is tuple:
        return ("[", *map(identity, value))
    if isinstance(value, Mapping):
        return _items(value)
    return value


def prefix_body(body: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """The body cut just after the slot at ``path`` (what a cache entry there holds)."""
    cut: dict[str, Any] = {"model": body.get("model")}
    head = path[0]
    order: Sequence[str] = ("tools", "system", "systemInstruction", "instructions", "messages",
                            "input", "contents")
    for field in order:
        if field not in body or body[field] in (None, ""):
            continue
        if field != head:
            if order.index(field) > order.index(head):
                break
            cut[field] = body[field]
            continue
        value = body[field]
        if len(path) == 1 or isinstance(value, str) or path[1] is None:
            cut[field] = value
        elif field in ("tools", "system"):
            cut[field] = value[:path[1] + 1]
        elif field == "systemInstruction":
            cut[field] = {**value, "parts": value["parts"][:path[1] + 1]}
        else:
            index, position = path[1], path[2]
            messages = list(value[:index])
            message = value[index]
            key = "parts" if field == "contents" else "content"
            if position is not None and isinstance(message, Mapping):
                message = {**message, key: message[key][:position + 1]}
            cut[field] = [*messages, message]
        break
    if head in ("messages", "input", "contents") or any(
            turns in cut for turns in ("messages", "input", "contents")):
        return cut
    if "contents" in body:
        cut["contents"] = []
        return cut
    # A prefix that ends before the messages still needs the field the counter walks.
    cut["input" if "instructions" in body or "input" in body else "messages"] = []
    return cut


def describe(path: Path) -> str:
    """A slot's path for people: ``tools[2]``, ``system[0]``, ``messages[1].content[0]``."""
    text = str(path[0])
    if len(path) > 1 and path[1] is not None:
        text += f"[{path[1]}]"
    if len(path) > 2 and path[2] is not None:
        text += f".content[{path[2]}]"
    return text
