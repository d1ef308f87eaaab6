"""Reorder a request so its stable content comes first, without changing what it says.

What moves, and why it keeps the meaning:

- tools: sorted by name, keys sorted at every level (a set or a dict built in another order
  would otherwise give different bytes, and a tool change invalidates every cache entry);
- system text: paragraphs (or, within a paragraph, sentences and lines) holding a volatile
  value (timestamp, uuid, id) go after the stable ones, in a block of their own where the API
  allows it — still system text, in the same role — or (opt-in) to the end of the last user
  message, where they no longer cut the cached prefix short; nothing is reworded.

Only with ``reorder_content`` (opt-in, because it changes the relative order of what the user
wrote): the first user message's documents, images, files, long texts and blocks shared across
requests go before the rest of that message. "Summarise the document immediately below" + A +
"Now translate the document immediately below" + B means something else once both documents
come first, so by default content is never moved; each move made is reported
(:attr:`Arranged.moves`).

Conversation turns are never reordered and never merged. The input body is not modified.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from spendguard._caching.inline import split_text
from spendguard._caching.kind import body_fields, marks_breakpoints
from spendguard._caching.layout import identity
from spendguard._caching.volatile import (
    END_OF_LAST_MESSAGE,
    END_OF_SYSTEM,
    VolatileValue,
    find_volatile,
    has_volatile,
    split_paragraphs,
)
from spendguard._costing.endpoints import Endpoint

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
    moves: tuple[str, ...] = ()
    """Content moved out of the order the user gave (only with ``reorder_content``)."""
    notes: tuple[str, ...] = ()
    """Shared texts split out of a text block, or that could not be without a move."""


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


@dataclass(slots=True)
class _System:
    """How system text is handled: where volatile paragraphs go, and what was found."""

    move: bool
    to_last_message: bool
    shared: Collection[Any]
    found: list[VolatileValue]
    tail: list[str] = field(default_factory=list)
    """Volatile paragraphs bound for the last user message."""

    def _record(self, values: list[VolatileValue], moved: bool) -> None:
        destination = END_OF_LAST_MESSAGE if self.to_last_message else END_OF_SYSTEM
        self.found += [VolatileValue(v.where, v.kind, v.value, destination if moved else None)
                       for v in values]

    def parts(self, blocks: list[Any], where: str, text_type: str) -> list[Any]:
        """Text blocks with each one's volatile paragraphs moved out of it."""
        stable: list[Any] = []
        moved: list[Any] = []
        values: list[VolatileValue] = []
        for index, block in enumerate(blocks):
            text = block.get("text") if isinstance(block, Mapping) else None
            here = find_volatile(text, f"{where}[{index}]") if isinstance(text, str) and \
                not is_shared(block, self.shared) else []
            values += here
            if not here or not self.move:
                stable.append(block)
                continue
            keep, volatile = split_paragraphs(str(text))
            if keep:
                stable.append({**block, "text": keep})
                moved.append({"type": block.get("type", text_type), "text": volatile})
            else:
                moved.append(block)
        # Moving helps only when stable content is left to go first.
        ok = self.move and bool(stable) and bool(moved)
        self._record(values, ok)
        if ok and self.to_last_message:
            self.tail += [str(block.get("text", "")) for block in moved]
            return stable
        return stable + moved

    def text(self, text: str, where: str, as_blocks: bool) -> Any:
        """A system string with its volatile paragraphs moved out of it."""
        values = [] if shared_text(text, self.shared) else find_volatile(text, where)
        keep, volatile = split_paragraphs(text) if values and self.move else (text, "")
        ok = bool(keep) and bool(volatile)
        self._record(values, ok)
        if not ok:
            return text
        if self.to_last_message:
            self.tail.append(volatile)
            return keep
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


def _split_inline(content: Any, shared_texts: Collection[str], text_type: str, where: str,
                  reorder: bool, notes: list[str]) -> Any:
    """Content with a shared text cut out of the text that holds it, where that is safe."""
    if not shared_texts:
        return content
    blocks = [{"type": text_type, "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return content
    out: list[Any] = []
    changed = False
    for position, block in enumerate(blocks):
        text = block.get("text") if isinstance(block, Mapping) and not block.get(
            "cache_control") else None
        cut = split_text(text, shared_texts) if isinstance(text, str) else None
        if cut is None:
            out.append(block)
            continue
        pieces, doc = cut
        if pieces[0] != doc and not reorder:
            notes.append(f"{where}[{position}]: a shared text of {len(doc):,} characters "
                         f"follows this request's own text in one block, so it is not cached; "
                         f"send it first, as its own block (or reorder_content=True)")
            out.append(block)
            continue
        out += [{**block, "text": piece} for piece in pieces]
        changed = True
        notes.append(f"{where}[{position}]: split the shared text ({len(doc):,} characters) "
                     f"into a block of its own, order unchanged")
    return out if changed else content


def _first_user_message(messages: list[Any], field: str, shared: Collection[Any],
                        found: list[VolatileValue], moves: list[str] | None,
                        shared_texts: Collection[str] = (),
                        notes: list[str] | None = None) -> list[Any]:
    """The first user message with its stable blocks first (only when ``moves`` is a list:
    reordering was asked for; each move is described in it)."""
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") in _SYSTEM_ROLES:
            continue
        if message.get("role") != "user":
            return messages
        content = _split_inline(message.get("content"), shared_texts,
                                "input_text" if field == "input" else "text",
                                f"{field}[{index}].content", moves is not None,
                                [] if notes is None else notes)
        if content is not message.get("content"):
            split = {**message, "content": content}
            messages = [*messages[:index], split, *messages[index + 1:]]
            message = split  # noqa: PLW2901 - the split message is the one to reorder
        if not isinstance(content, list):
            return messages
        first = [b for b in content if is_stable_block(b, shared)]
        rest = [b for b in content if not is_stable_block(b, shared)]
        for position, block in enumerate(first):
            text = block.get("text") if isinstance(block, Mapping) else None
            if isinstance(text, str) and not is_shared(block, shared):
                found += find_volatile(text, f"{field}[{index}].content[{position}]")
        order = [i for i, b in enumerate(content) if is_stable_block(b, shared)] + [
            i for i, b in enumerate(content) if not is_stable_block(b, shared)]
        if moves is not None and first and rest and order != sorted(order):
            moves.append(f"{field}[{index}].content: blocks {order} (was 0..{len(order) - 1}): "
                         f"{len(first)} document/shared block(s) moved before the rest")
            return [*messages[:index], {**message, "content": first + rest},
                    *messages[index + 1:]]
        return messages
    return messages


def _openai_system(messages: list[Any], system: _System) -> list[Any]:
    out = list(messages)
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in _SYSTEM_ROLES:
            break
        content = message.get("content")
        where = f"messages[{index}].content"
        if isinstance(content, str):
            out[index] = {**message, "content": system.text(content, where, as_blocks=True)}
        elif isinstance(content, list):
            out[index] = {**message, "content": system.parts(content, where, "text")}
    return out


def _append_to_last_user(messages: list[Any], texts: list[str], text_type: str) -> list[Any]:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            blocks = [{"type": text_type, "text": content}] if isinstance(content, str) \
                else list(content or [])
            blocks += [{"type": text_type, "text": text} for text in texts]
            return [*messages[:index], {**message, "content": blocks}, *messages[index + 1:]]
    return messages


def _has_user(messages: Any) -> bool:
    if isinstance(messages, str):
        return bool(messages)
    return isinstance(messages, list) and any(
        isinstance(m, Mapping) and m.get("role") == "user" for m in messages)


def arrange(provider: str, endpoint: Endpoint, body: Mapping[str, Any], *,
            shared: Collection[Any] = (), move_volatile: bool = True,
            to_last_message: bool = False, reorder_content: bool = False,
            shared_texts: Collection[str] = ()) -> Arranged:
    """Stable content first (see the module docstring); ``shared`` holds the identities
    (:func:`~spendguard._caching.layout.identity`) of blocks other requests also send: they
    go first, and a timestamp or id in them is no reason to move them (it is the same in every
    request, so it breaks no prefix).

    Volatile system paragraphs go to the end of the system prompt, or with
    ``to_last_message`` to the end of the last user message (where they no longer cut the
    cached prefix short, but the model reads them as the user's words). With
    ``move_volatile=False`` system text stays as it is; volatile values are only found.
    """
    out = dict(body)
    found: list[VolatileValue] = []
    if endpoint.embeds:
        return Arranged(out, ())
    if isinstance(body.get("tools"), list) and body["tools"]:
        out["tools"] = _tools(list(body["tools"]), found, shared)
    turns, system_field = body_fields(provider, endpoint)
    system = _System(move_volatile, to_last_message and _has_user(body.get(turns)), shared,
                     found)
    if marks_breakpoints(provider):
        value = body.get("system")
        if isinstance(value, str) and value:
            out["system"] = system.text(value, "system", as_blocks=True)
        elif isinstance(value, list):
            out["system"] = system.parts(list(value), "system", "text")
    elif system_field is not None:  # Responses' instructions: one string
        instructions = body.get(system_field)
        if isinstance(instructions, str) and instructions:
            out[system_field] = system.text(instructions, system_field, as_blocks=False)
    elif isinstance(body.get("messages"), list):
        out["messages"] = _openai_system(body["messages"], system)
    if system.tail and isinstance(out.get(turns), str):  # Responses: input as one user message
        out[turns] = [{"role": "user", "content": out[turns]}]
    moves: list[str] = []
    notes: list[str] = []
    if system.tail:
        moves.append(f"{len(system.tail)} volatile system part(s) moved to the end of the last "
                     f"user message")
    if isinstance(out.get(turns), list):
        out[turns] = _first_user_message(out[turns], turns, shared, found,
                                         moves if reorder_content else None, shared_texts,
                                         notes)
        if system.tail:
            out[turns] = _append_to_last_user(out[turns], system.tail,
                                              "input_text" if turns == "input" else "text")
    return Arranged(out, tuple(found), tuple(moves), tuple(notes))
