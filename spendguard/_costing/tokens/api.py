"""``count_tokens``: offline token counts for a model's messages, tools, system prompt and text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._costing.tokens.anthropic import count_parts
from spendguard._costing.tokens.count import TokenCount
from spendguard._costing.tokens.models import resolve
from spendguard._costing.tokens.openai import chat_messages
from spendguard._costing.tokens.tools import count_tools

__all__ = ["count_tokens"]


def _list_of_mappings(value: Any, field: str, example: str) -> list[Mapping[str, Any]] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ConfigError(f"{field} must be a list of dicts such as {example}, "
                          f"got {type(value).__name__}")
    entries = list(value)
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{field}[{index}] must be a dict such as {example}, "
                              f"got {type(entry).__name__}")
    return entries


def count_tokens(model: str, *, messages: Iterable[Mapping[str, Any]] | None = None,
                 tools: Iterable[Mapping[str, Any]] | None = None, text: str | None = None,
                 system: str | Iterable[Mapping[str, Any]] | None = None) -> TokenCount:
    """Input tokens of ``messages`` (+ ``system``, ``tools``) and of plain ``text`` for ``model``.

    OpenAI models: exact with the model's tiktoken encoding (bundled, no network) and the
    Cookbook's chat framing; tool definitions and images by the published rules (estimates).
    Claude models: a bounded estimate (``.margin`` says how much headroom); see
    ``count_tokens_exact`` for the provider's own count. ``messages`` use the provider's own
    shape; ``tools`` may be in OpenAI (chat or Responses) or Anthropic shape. ``text`` is
    counted bare, without message framing. Raises ``UnknownModelError`` for a model with no
    known tokenizer and ``ConfigError`` for arguments of the wrong type.
    """
    if not isinstance(model, str) or not model:
        raise ConfigError(f"model must be a model id such as 'gpt-4o', got {model!r}")
    message_list = _list_of_mappings(messages, "messages",
                                     "{'role': 'user', 'content': 'Hello'}")
    tool_list = _list_of_mappings(tools, "tools",
                                  "{'type': 'function', 'function': {'name': ...}}")
    if text is not None and not isinstance(text, str):
        raise ConfigError(f"text must be a str, got {type(text).__name__}")
    system_value: str | list[Mapping[str, Any]] | None
    if system is None or isinstance(system, str):
        system_value = system
    else:
        system_value = _list_of_mappings(system, "system", "{'type': 'text', 'text': '...'}")

    profile = resolve(model)
    tally = profile.tally()
    if profile.provider == "anthropic":
        count_parts(profile, tally, system=system_value, messages=message_list,
                    tools=tool_list)
    else:
        chat: list[Mapping[str, Any]] = list(message_list or [])
        if system_value:
            chat.insert(0, {"role": "system", "content": system_value})
        if chat or message_list is not None:
            chat_messages(profile, tally, chat)
        if tool_list:
            count_tools(profile, tally, tool_list)
    if text:
        profile.text(tally, text)
    return tally.result()
