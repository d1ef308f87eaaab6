"""Exact counts from the provider: Anthropic ``messages.count_tokens``, OpenAI
``responses.input_tokens.count``. Opt-in: each is one (free) HTTP call through the user's client.

The sync and async functions share the argument building and the reading of the reply; only
the call differs. The client's own errors (auth, rate limits) propagate unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spendguard._core.errors import ConfigError, ProviderResponseError
from spendguard._costing.tokens.content import items
from spendguard._costing.tokens.count import TokenCount
from spendguard._costing.tokens.tools import as_anthropic_tool, function_of

__all__ = ["acount_tokens_exact", "count_tokens_exact"]

METHOD = "provider count_tokens"


def _responses_tool(tool: Any) -> Any:
    function = function_of(tool)
    if function is None or function is tool:
        return tool
    return {"type": "function", **function}


def _responses_part(part: Any, role: Any) -> Any:
    if not isinstance(part, Mapping):
        return part
    if part.get("type") == "text":
        return {"type": "output_text" if role == "assistant" else "input_text",
                "text": part.get("text", "")}
    if part.get("type") == "image_url":
        spec = part.get("image_url")
        spec = spec if isinstance(spec, Mapping) else {"url": spec}
        return {"type": "input_image", "image_url": spec.get("url"),
                "detail": spec.get("detail", "auto")}
    return part


def _responses_input(messages: Iterable[Any]) -> list[Any]:
    """Chat-shaped messages as Responses input items (already-Responses items pass through)."""
    converted: list[Any] = []
    for message in messages:
        if not isinstance(message, Mapping) or "role" not in message:
            converted.append(message)
            continue
        role = message["role"]
        if role == "tool":
            converted.append({"type": "function_call_output",
                              "call_id": message.get("tool_call_id", ""),
                              "output": message.get("content") or ""})
            continue
        content = message.get("content")
        if content is not None:
            parts = items(content)
            converted.append({"role": role, "content": content if parts is None
                              else [_responses_part(p, role) for p in parts]})
        for call in items(message.get("tool_calls")) or []:
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            converted.append({"type": "function_call", "call_id": call.get("id", ""),
                              "name": function.get("name", ""),
                              "arguments": function.get("arguments", "")})
    return converted


def _call(client: Any, model: str, messages: Any, system: Any,
          tools: Any) -> tuple[Any, dict[str, Any]]:
    """The bound SDK method to call and its keyword arguments."""
    if not isinstance(model, str) or not model:
        raise ConfigError(f"model must be a model id, got {model!r}")
    message_list = items(messages)
    if message_list is None:
        raise ConfigError("messages must be a list of message dicts such as "
                          "{'role': 'user', 'content': 'Hello'}")
    anthropic_messages = getattr(getattr(client, "messages", None), "count_tokens", None)
    if callable(anthropic_messages):
        kwargs: dict[str, Any] = {"model": model, "messages": message_list}
        if system is not None:
            kwargs["system"] = system
        if tools is not None:
            kwargs["tools"] = [as_anthropic_tool(t) for t in tools]
        return anthropic_messages, kwargs
    responses = getattr(client, "responses", None)
    openai_count = getattr(getattr(responses, "input_tokens", None), "count", None)
    if callable(openai_count):
        kwargs = {"model": model, "input": _responses_input(message_list)}
        if system is not None:
            kwargs["instructions"] = system if isinstance(system, str) else "\n\n".join(
                str(b.get("text", "")) for b in system if isinstance(b, Mapping))
        if tools is not None:
            kwargs["tools"] = [_responses_tool(t) for t in tools]
        return openai_count, kwargs
    raise ConfigError(
        f"client must be an anthropic.Anthropic or openai.OpenAI client (or their async "
        f"twins), got {type(client).__name__}"
    )


def _result(reply: Any) -> TokenCount:
    tokens = getattr(reply, "input_tokens", None)
    if tokens is None and isinstance(reply, Mapping):
        tokens = reply.get("input_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise ProviderResponseError(
            f"the token-count reply has no valid input_tokens: {reply!r}", field="input_tokens")
    return TokenCount(tokens, exact=True, method=METHOD)


def count_tokens_exact(client: Any, model: str, *, messages: Iterable[Mapping[str, Any]],
                       system: Any = None, tools: Any = None) -> TokenCount:
    """The provider's exact input-token count for a request, through ``client`` (sync).

    ``client`` is an ``anthropic.Anthropic`` (``messages.count_tokens``) or an
    ``openai.OpenAI`` (``responses.input_tokens.count``; chat-shaped messages and tools are
    converted to the Responses shape). Costs nothing but one HTTP call; needs network and keys.
    """
    method, kwargs = _call(client, model, messages, system, tools)
    return _result(method(**kwargs))


async def acount_tokens_exact(client: Any, model: str, *, messages: Iterable[Mapping[str, Any]],
                              system: Any = None, tools: Any = None) -> TokenCount:
    """The async twin of ``count_tokens_exact`` for ``AsyncAnthropic`` / ``AsyncOpenAI``."""
    method, kwargs = _call(client, model, messages, system, tools)
    return _result(await method(**kwargs))
