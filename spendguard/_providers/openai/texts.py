"""The text of an OpenAI request and reply: the last user turn of Chat Completions messages or
of a Responses input, and a reply's message content or ``output_text``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._costing.endpoints import Endpoint
from spendguard._providers.openai import endpoints
from spendguard._providers.texts import block_text, last_user_text

__all__ = ["prompt_text", "reply_text"]


def prompt_text(endpoint: Endpoint, request: Mapping[str, Any]) -> str:
    """The last user turn of a request, as text."""
    if endpoint == endpoints.RESPONSES:
        items = request.get("input")
        if isinstance(items, str):
            return items
        return last_user_text(items if isinstance(items, list) else [])
    return last_user_text(request.get("messages") or [])


def reply_text(endpoint: Endpoint, response: Any) -> str:
    """The text an SDK reply carries: the first choice's message, or the Responses
    ``output_text``."""
    if endpoint == endpoints.CHAT:
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices else None
        return content or ""
    if endpoint == endpoints.RESPONSES:
        return str(getattr(response, "output_text", "") or "")
    return block_text(response)
