"""The text of a Gemini request and reply: the last user turn of ``contents`` (written as the
REST body or as ``generate_content``'s arguments) and a reply's first candidate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._costing.endpoints import Endpoint
from spendguard._providers.gemini import endpoints
from spendguard._providers.gemini.kwargs import plain
from spendguard._providers.texts import block_text, last_user_text

__all__ = ["prompt_text", "reply_text"]


def _contents_prompt(contents: Any) -> str:
    if isinstance(contents, str):
        return contents
    turns = plain(contents) if isinstance(contents, list) else []
    if turns and all(isinstance(turn, str) for turn in turns):
        return "\n".join(turns)
    for turn in reversed(turns):
        if isinstance(turn, Mapping) and turn.get("role", "user") == "user":
            parts = turn.get("parts") or []
            return "\n".join(str(part.get("text")) for part in parts
                             if isinstance(part, Mapping) and isinstance(part.get("text"), str))
    return ""


def prompt_text(endpoint: Endpoint, request: Mapping[str, Any]) -> str:
    """The last user turn of a request, as text (``contents`` a string, a list of strings,
    or turns of parts)."""
    if endpoint == endpoints.GENERATE:
        return _contents_prompt(request.get("contents"))
    return last_user_text(request.get("messages") or [])


def reply_text(endpoint: Endpoint, response: Any) -> str:
    """The text of a reply's first candidate, its thoughts left out."""
    if endpoint != endpoints.GENERATE:
        return block_text(response)
    candidates = getattr(response, "candidates", None) or []
    content = getattr(candidates[0], "content", None) if candidates else None
    return "".join(part.text for part in getattr(content, "parts", None) or []
                   if isinstance(getattr(part, "text", None), str)
                   and not getattr(part, "thought", False))
