"""What the emulated model says: a labelled default reply, or one scripted by a responder.

Output length is deterministic: the default reply is sized from a hash of the request (or the
configured ``reply_tokens``), every reply is cut at the request's output cap the way a model is
(``finish_reason="length"`` / ``stop_reason="max_tokens"``), and the reported output tokens are
the counter's count of the text actually returned, plus any scripted reasoning tokens.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard.testing.counting import text_tokens

__all__ = ["Prompt", "Rendered", "Reply", "Responder", "ToolCall", "render"]

LABEL = "[spendguard emulator]"
_PROMPT_FIELDS = ("tools", "system", "instructions", "messages", "input")
_FILLER = ("This is an emulated reply, not a model's answer: spendguard counts every token "
           "of it so that budgets, caches and bills can be tested offline.")


@dataclass(frozen=True, slots=True)
class Prompt:
    """One generation request, as a responder sees it."""

    provider: str
    """``"openai"`` or ``"anthropic"``."""
    endpoint: str
    """The API path: ``/v1/chat/completions``, ``/v1/responses`` or ``/v1/messages``."""
    model: str
    body: Mapping[str, Any]

    @property
    def last_user_text(self) -> str:
        """The text of the last user message (or of a plain-string Responses ``input``, or of
        Gemini's last user ``contents`` turn)."""
        source = self.body.get("messages", self.body.get("input", self.body.get("contents")))
        if isinstance(source, str):
            return source
        for message in reversed(source if isinstance(source, list) else []):
            if isinstance(message, dict) and message.get("role") == "user":
                return _content_text(message.get("content", message.get("parts")))
        return ""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool (function) call the emulated model makes."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted answer: text, tool calls, and reasoning tokens billed as output."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    reasoning_tokens: int = 0


Responder = Callable[[Prompt], "str | Reply"]


@dataclass(frozen=True, slots=True)
class Rendered:
    """The reply as sent: what fits under the output cap, and its token counts."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    output_tokens: int
    """All generated tokens billed as output, reasoning included."""
    reasoning_tokens: int
    stopped_by_cap: bool


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [block.get("text", "") for block in content or [] if isinstance(block, dict)]
    return "".join(part for part in parts if isinstance(part, str))


def _default_target(prompt: Prompt, seed: int) -> int:
    # Only the prompt decides the length, so streamed and plain calls of it reply alike.
    prompt_only = {k: v for k, v in prompt.body.items() if k in _PROMPT_FIELDS}
    canonical = json.dumps([prompt.model, prompt_only], sort_keys=True, default=str)
    digest = hashlib.sha256(f"{seed}:{canonical}".encode()).digest()
    return 16 + digest[0] % 49  # 16..64 tokens: short, and different prompts differ


def _fits(model: str, count: int, budget: int, make: Callable[[int], str]) -> int:
    """The largest k in [0, count] with tokens(make(k)) <= budget; counts grow with k."""
    low, high = 0, count
    while low < high:
        middle = (low + high + 1) // 2
        if text_tokens(model, make(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def _longest_prefix(model: str, words: Sequence[str], budget: int) -> tuple[str, int]:
    """The longest leading text (whole words, then part of one) within ``budget`` tokens."""
    whole = "".join(words[:_fits(model, len(words), budget,
                                 lambda k: "".join(words[:k]))])
    if len(whole) < len("".join(words)):  # fill the rest of the budget with part of a word
        rest = "".join(words)[len(whole):].split(" ", 1)[0]
        whole += rest[:_fits(model, len(rest), budget, lambda k: whole + rest[:k])]
    return whole, text_tokens(model, whole)


def _default_words(target: int) -> list[str]:
    words = [word + " " for word in LABEL.split(" ")]
    while len(words) < 4 * target + 8:  # enough words for any tokenizer to reach the target
        words.extend(word + " " for word in _FILLER.split(" "))
    words[-1] = words[-1].rstrip()
    return words


def render(prompt: Prompt, *, respond: Responder | None, output_cap: int | None,
           reply_tokens: int | None, seed: int) -> Rendered:
    """The reply to ``prompt``, cut at ``output_cap`` tokens (None: no cap)."""
    cap = output_cap if output_cap is not None else 1 << 40
    if respond is None:
        wanted = reply_tokens if reply_tokens is not None else _default_target(prompt, seed)
        text, tokens = _longest_prefix(prompt.model, _default_words(min(wanted, cap)),
                                       min(wanted, cap))
        return Rendered(text.rstrip(), (), tokens, 0, wanted > cap)
    reply = respond(prompt)
    if isinstance(reply, str):
        reply = Reply(text=reply)
    if not isinstance(reply, Reply):
        raise ConfigError(f"Emulator(respond=...) returned {type(reply).__name__}; return a str "
                          "or a spendguard.testing.Reply")
    used = min(max(reply.reasoning_tokens, 0), cap)
    reasoning = used
    text, text_count = reply.text, text_tokens(prompt.model, reply.text)
    stopped = used + text_count > cap
    if stopped:
        text, text_count = _longest_prefix(prompt.model, re.findall(r"\S+\s*|\s+", reply.text),
                                           cap - used)
    used += text_count
    calls: list[ToolCall] = []
    for call in reply.tool_calls:
        call_tokens = text_tokens(prompt.model, call.name + json.dumps(dict(call.arguments)))
        if stopped or used + call_tokens > cap:
            stopped = True
            break
        calls.append(call)
        used += call_tokens
    return Rendered(text, tuple(calls), used, reasoning, stopped)
