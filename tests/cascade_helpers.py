"""Scripted provider replies for cascade and loop tests: the real SDKs, HTTP mocked by respx."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
OPENAI_RESPONSES = "https://api.openai.com/v1/responses"
ANTHROPIC_MESSAGES = "https://api.anthropic.com/v1/messages"

IN_TOKENS = 20
OUT_TOKENS = 5


def chat_body(model: str, text: str, prompt_tokens: int = IN_TOKENS,
              completion_tokens: int = OUT_TOKENS) -> dict[str, Any]:
    """A chat.completions reply as the API sends it."""
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": text, "refusal": None}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def messages_body(model: str, text: str, input_tokens: int = IN_TOKENS,
                  output_tokens: int = OUT_TOKENS) -> dict[str, Any]:
    """An Anthropic messages reply as the API sends it."""
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def responses_body(model: str, text: str, input_tokens: int = IN_TOKENS,
                   output_tokens: int = OUT_TOKENS) -> dict[str, Any]:
    """An OpenAI Responses reply as the API sends it."""
    return {
        "id": "resp_1", "object": "response", "created_at": 1_700_000_000, "model": model,
        "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "output": [{"type": "message", "id": "msg_1", "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "total_tokens": input_tokens + output_tokens,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


BODIES: dict[str, Callable[[str, str], dict[str, Any]]] = {
    OPENAI_CHAT: chat_body, OPENAI_RESPONSES: responses_body, ANTHROPIC_MESSAGES: messages_body,
}


@dataclass
class Script:
    """Answers each model with fixed text; records the models called, in order.

    ``judge`` answers requests whose prompt asks for PASS or FAIL (the judge check's).
    """

    answers: Mapping[str, str]
    judge: str = "PASS"
    calls: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def responder(self, url: str) -> Callable[[httpx.Request], httpx.Response]:
        make = BODIES[url]

        def respond(request: httpx.Request) -> httpx.Response:
            body = json.loads(request.content)
            self.requests.append(body)
            model = body["model"]
            if "PASS or FAIL" in json.dumps(body):
                self.calls.append(f"judge:{model}")
                return httpx.Response(200, json=make(model, self.judge))
            self.calls.append(model)
            return httpx.Response(200, json=make(model, self.answers[model]))

        return respond
