"""Canned provider responses, shaped as the APIs document them (see shared/research)."""

from __future__ import annotations

import json
from typing import Any


def chat_completion(model: str = "gpt-4o-mini", *, prompt_tokens: int = 1000,
                    cached_tokens: int = 0, completion_tokens: int = 500,
                    content: str = "hi") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1800000000, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content,
                                             "refusal": None},
                     "finish_reason": "stop", "logprobs": None}],
        "service_tier": "default",
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens,
                  "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                "accepted_prediction_tokens": 0,
                                                "rejected_prediction_tokens": 0}},
    }


def anthropic_message(model: str = "claude-haiku-4-5", *, input_tokens: int = 50,
                      output_tokens: int = 120, cache_write_5m: int = 0,
                      cache_read: int = 0) -> dict[str, Any]:
    return {
        "id": "msg_01", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": "hi", "citations": None}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": cache_write_5m,
                  "cache_read_input_tokens": cache_read,
                  "cache_creation": {"ephemeral_5m_input_tokens": cache_write_5m,
                                     "ephemeral_1h_input_tokens": 0},
                  "service_tier": "standard"},
    }


def sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


def chat_stream_events(model: str = "gpt-4o-mini", *, words: int = 5, usage: bool = True,
                       prompt_tokens: int = 20) -> list[tuple[str | None, dict[str, Any] | str]]:
    base = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1800000000,
            "model": model}
    events: list[tuple[str | None, dict[str, Any] | str]] = []
    events.append((None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                      "content": ""},
                                               "finish_reason": None}]}))
    for i in range(words):
        events.append((None, {**base, "choices": [{"index": 0, "delta": {"content": f" word{i}"},
                                                   "finish_reason": None}]}))
    events.append((None, {**base, "choices": [{"index": 0, "delta": {},
                                               "finish_reason": "stop"}]}))
    if usage:
        events.append((None, {**base, "choices": [], "usage": {
            "prompt_tokens": prompt_tokens, "completion_tokens": words * 2,
            "total_tokens": prompt_tokens + words * 2,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0}}}))
    events.append((None, "[DONE]"))
    return events


def anthropic_stream_events(model: str = "claude-haiku-4-5", *, words: int = 5,
                            input_tokens: int = 30,
                            ) -> list[tuple[str | None, dict[str, Any] | str]]:
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_2", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
    ]
    for i in range(words):
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta",
                                                         "text": f" word{i}"}}))
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": words * 2}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events
