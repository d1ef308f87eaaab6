"""The ``"implicit"`` prompt-cache style: a common prefix cached with no marker (Gemini's).

An adapter whose ``prompt_cache`` is ``"implicit"`` gets this arrangement
(:mod:`spendguard._caching.rules`); it reads the body Gemini's way, the only API of that style.

Gemini 2.5 and later cache implicitly: a request whose prompt starts with the same tokens as a
recent one is billed the cached part at the cache-read rate, with no marker in the request
(explicit caches are ``cachedContents`` resources, priced apart). The prompt renders the system
instruction and the tools before the conversation, so ordering for it means
(ai.google.dev/gemini-api/docs/caching: "put large and common contents at the beginning of
your prompt"):

- tools: function declarations sorted by name, keys sorted at every level (the same tools in
  another order are other bytes);
- the system instruction: parts holding a volatile value (timestamp, uuid, id) go after the
  stable ones, as parts of their own, split by paragraph (or, opt-in, to the end of the last
  user turn);
- only with ``reorder_content``: the first user turn's media, files, long texts and shared
  texts before the rest of that turn.

Turns are never reordered. There are no breakpoints to place: a prefix shorter than the
model's published minimum for context caching (``min_cacheable_tokens`` in the price file;
4,096 tokens where a model states none, the largest published) is reported in the notes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from typing import Any

from spendguard._caching.arrange import Arranged, is_shared, shared_text, text_identity
from spendguard._caching.volatile import (
    END_OF_LAST_MESSAGE,
    END_OF_SYSTEM,
    VolatileValue,
    find_volatile,
    has_volatile,
    split_paragraphs,
)
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import ModelPrice
from spendguard._providers.gemini.requests import field

__all__ = ["DEFAULT_MIN_TOKENS", "arrange_implicit", "prefix_notes"]

DEFAULT_MIN_TOKENS = 4096
"""The shortest cacheable prompt for a model whose entry states none (the largest published
minimum, so a note never promises a cache)."""
LONG_TEXT_CHARS = 4000
_STABLE_PARTS = ("inlineData", "fileData")


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _sorted_keys(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def _tools(tools: list[Any], found: list[VolatileValue], shared: Collection[Any]) -> list[Any]:
    out: list[Any] = []
    for tool in tools:
        tool = _sorted_keys(tool)  # noqa: PLW2901 - the sorted copy replaces it
        for key in ("functionDeclarations", "function_declarations"):
            declarations = tool.get(key) if isinstance(tool, Mapping) else None
            if isinstance(declarations, list):
                tool = {**tool, key: sorted(declarations, key=lambda d: (  # noqa: PLW2901
                    str(d.get("name")) if isinstance(d, Mapping) else "",
                    json.dumps(d, sort_keys=True, default=str)))}
        out.append(tool)
    out.sort(key=lambda t: json.dumps(t, sort_keys=True, default=str))
    for index, tool in enumerate(out):
        if not is_shared(tool, shared):
            found += find_volatile(json.dumps(tool, default=str), f"tools[{index}]")
    return out


def _parts(content: Any) -> list[Any] | None:
    if isinstance(content, str):
        return [{"text": content}]
    parts = field(content, "parts")
    return list(parts) if isinstance(parts, list) else None


def _system(content: Any, *, move: bool, shared: Collection[Any], found: list[VolatileValue],
            tail: list[str] | None) -> Any:
    """The system instruction with its volatile paragraphs in parts after the stable ones
    (or in ``tail``, bound for the last user turn)."""
    parts = _parts(content)
    if parts is None:
        return content
    stable: list[Any] = []
    moved: list[str] = []
    values: list[VolatileValue] = []
    for index, part in enumerate(parts):
        text = field(part, "text")
        here = (find_volatile(text, f"systemInstruction.parts[{index}]")
                if isinstance(text, str) and not shared_text(text, shared) else [])
        values += here
        if not here or not move:
            stable.append(part)
            continue
        keep, volatile = split_paragraphs(str(text))
        if keep:
            stable.append({**part, "text": keep})
        moved.append(volatile if keep else str(text))
    ok = move and bool(stable) and bool(moved)
    destination = END_OF_LAST_MESSAGE if tail is not None else END_OF_SYSTEM
    found += [VolatileValue(v.where, v.kind, v.value, destination if ok else None)
              for v in values]
    if not ok:
        return content
    if tail is not None:
        tail += moved
        ordered = stable
    else:
        ordered = stable + [{"text": text} for text in moved]
    base = content if isinstance(content, Mapping) else {}
    return {**base, "parts": ordered}


def _stable_part(part: Any, shared: Collection[Any]) -> bool:
    if not isinstance(part, Mapping):
        return False
    if any(field(part, key) is not None for key in _STABLE_PARTS):
        return True
    text = field(part, "text")
    if not isinstance(text, str):
        return False
    return (bool(shared) and text_identity(text) in shared) or (
        len(text) >= LONG_TEXT_CHARS and not has_volatile(text))


def _first_user(contents: list[Any], shared: Collection[Any], moves: list[str]) -> list[Any]:
    for index, content in enumerate(contents):
        if not isinstance(content, Mapping):
            return contents
        if field(content, "role") not in (None, "user"):
            return contents
        parts = _parts(content)
        if parts is None:
            return contents
        first = [p for p in parts if _stable_part(p, shared)]
        rest = [p for p in parts if not _stable_part(p, shared)]
        order = [i for i, p in enumerate(parts) if _stable_part(p, shared)] + [
            i for i, p in enumerate(parts) if not _stable_part(p, shared)]
        if first and rest and order != sorted(order):
            moves.append(f"contents[{index}].parts: parts {order} (was 0..{len(order) - 1}): "
                         f"{len(first)} media/document part(s) moved before the rest")
            return [*contents[:index], {**content, "parts": first + rest},
                    *contents[index + 1:]]
        return contents
    return contents


def _to_last_user(contents: list[Any], texts: list[str]) -> list[Any] | None:
    for index in range(len(contents) - 1, -1, -1):
        content = contents[index]
        parts = _parts(content) if isinstance(content, Mapping) else None
        if parts is not None and field(content, "role") in (None, "user"):
            grown = {**content, "parts": parts + [{"text": text} for text in texts]}
            return [*contents[:index], grown, *contents[index + 1:]]
    return None


def arrange_implicit(provider: str, endpoint: Endpoint, body: Mapping[str, Any], *,
                     shared: Collection[Any] = (), move_volatile: bool = True,
                     to_last_message: bool = False, reorder_content: bool = False,
                     shared_texts: Collection[str] = ()) -> Arranged:
    """A ``generateContent`` body with its stable content first (see the module's rules);
    the arguments are :func:`~spendguard._caching.arrange.arrange`'s."""
    out = dict(body)
    found: list[VolatileValue] = []
    if not endpoint.generates or endpoint.turns_field != "contents":  # generateContent only
        return Arranged(out, ())
    tools = field(body, "tools")
    if isinstance(tools, list) and tools:
        out["tools"] = _tools(tools, found, shared)
    contents = field(body, "contents")
    tail: list[str] | None = [] if to_last_message and isinstance(contents, list) \
        and _to_last_user(contents, ["probe"]) is not None else None
    for key in ("systemInstruction", "system_instruction"):
        if key in body:
            out[key] = _system(body[key], move=move_volatile, shared=shared, found=found,
                               tail=tail)
    moves: list[str] = []
    if isinstance(contents, list):
        if reorder_content:
            out["contents"] = _first_user(contents, shared, moves)
        if tail:
            out["contents"] = _to_last_user(out["contents"], tail) or out["contents"]
            moves.insert(0, f"{len(tail)} volatile system part(s) moved to the end of the "
                            "last user turn")
    return Arranged(out, tuple(found), tuple(moves))


def prefix_notes(body: Mapping[str, Any], model_price: ModelPrice | None,
                 count: Callable[[Mapping[str, Any]], int]) -> tuple[str, ...]:
    """Why the stable prefix may not be cached: under the model's minimum, or cut short by
    a volatile value the caller chose to keep in place (``count``: the tokens of a body, as
    the provider's adapter counts them)."""
    minimum = (model_price.min_cacheable_tokens if model_price is not None else None) \
        or DEFAULT_MIN_TOKENS
    prefix = {key: value for key, value in body.items() if key in (
        "systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config")}
    contents = field(body, "contents")
    if isinstance(contents, list) and contents:
        prefix["contents"] = contents[:1]  # the first turn: what other requests may share
    tokens = count(prefix)
    if tokens >= minimum:
        return ()
    model = f"{model_price.model}'s" if model_price is not None else "the model's"
    return (f"the stable prefix (system instruction, tools, first turn) is about {tokens} "
            f"tokens, under {model} {minimum}-token minimum for implicit caching: it will "
            "not be cached",)
