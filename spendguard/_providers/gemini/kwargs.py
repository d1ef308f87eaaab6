"""A Gemini request in both of its spellings: the SDK's keyword arguments and the REST body.

``client.models.generate_content(model=..., contents=..., config={...})`` takes the system
instruction, tools and generation settings together in ``config``; the REST body
(``GenerateContentRequest``, ai.google.dev/api/generate-content) has ``systemInstruction``,
``tools``, ``toolConfig``, ``safetySettings`` and ``cachedContent`` at the top and the rest in
``generationConfig``. spendguard estimates, plans and orders the REST body; the strategies
that call an SDK client hand it the keyword arguments. Either spelling is accepted by both
functions, so a request may be written either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["plain", "rest_body", "sdk_kwargs"]

_TOP = frozenset({"systemInstruction", "tools", "toolConfig", "safetySettings", "cachedContent",
                  "labels"})
# The SDK's own settings: they shape the call, not the request the model reads.
_SDK_ONLY = frozenset({"httpOptions", "automaticFunctionCalling", "shouldReturnHttpResponse",
                       "responseSchema"})
_REST_KEYS = _TOP | {"generationConfig"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def plain(value: Any) -> Any:
    """A JSON-shaped copy of SDK (pydantic) objects, by their REST (camelCase) names."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain(dump(mode="json", exclude_none=True, by_alias=True))
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def rest_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The REST body of a request written either way (``config`` lifted out)."""
    out = {_camel(key): plain(value) for key, value in body.items() if key != "config"}
    config = plain(body.get("config"))
    if not isinstance(config, Mapping):
        return out
    generation: dict[str, Any] = dict(out.get("generationConfig") or {})
    for key, value in config.items():
        name = _camel(key)
        if name in _TOP:
            out[name] = value
        elif name not in _SDK_ONLY:
            generation[name] = value
    if generation:
        out["generationConfig"] = generation
    return out


def sdk_kwargs(body: Mapping[str, Any]) -> dict[str, Any]:
    """``generate_content``'s keyword arguments (``model``, ``contents``, ``config``) for a
    request written either way."""
    if not any(_camel(key) in _REST_KEYS for key in body):
        return {key: body[key] for key in ("model", "contents", "config") if key in body}
    config: dict[str, Any] = dict(plain(body.get("config")) or {})
    for key, value in body.items():
        name = _camel(key)
        if name == "generationConfig" and isinstance(value, Mapping):
            config.update(value)
        elif name in _TOP:
            config[name] = value
    return {**{key: body[key] for key in ("model", "contents") if key in body},
            "config": config}
