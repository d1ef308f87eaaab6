"""The text of a request and of an SDK reply, as message-shaped APIs write them.

What a judge is shown: a request's last user turn (the question) and a reply's text. The
adapters whose requests are a list of ``messages`` and whose replies hold content blocks read
them with these; each adapter reads its own other shapes (OpenAI's choices and Responses
items, Gemini's candidates) around them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["block_text", "content_text", "last_user_text"]


def content_text(content: Any) -> str:
    """A message's content as text: the string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, Mapping) and part.get("type") in
                         ("text", "input_text"))
    return ""


def last_user_text(messages: Sequence[Any]) -> str:
    """The content of the last ``user`` message, as text; empty when there is none."""
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def block_text(response: Any) -> str:
    """The text blocks of a reply's ``content`` joined (empty when it has none)."""
    blocks = getattr(response, "content", None) or []
    return "".join(block.text for block in blocks if getattr(block, "type", None) == "text")
