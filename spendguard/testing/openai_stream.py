"""OpenAI server-sent event sequences, derived from the finished response body.

Deriving every stream from the same JSON the non-streaming call returns keeps the two views
consistent by construction: the SDK's accumulated stream equals the plain response. Sequences
are the ones the SDK's ``chat.completions.stream()`` and ``responses.stream()`` helpers accept.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

from spendguard.testing.wire import sse_frame

__all__ = ["chat_frames", "pieces", "responses_frames"]


def pieces(text: str, size: int = 0) -> Iterator[str]:
    """Delta-sized pieces of ``text`` (a word each, or ``size`` characters); they join back."""
    if size:
        yield from (text[i:i + size] for i in range(0, len(text), size))
    else:
        yield from re.findall(r"\S+\s*|\s+", text)


def chat_frames(completion: dict[str, Any], *, include_usage: bool) -> list[bytes]:
    """``chat.completion.chunk`` frames for a ``chat.completion`` body, then ``[DONE]``."""
    base = {key: completion[key] for key in ("id", "created", "model", "service_tier",
                                             "system_fingerprint")}
    base["object"] = "chat.completion.chunk"

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
        payload = {**base, "choices": [{"index": index, "delta": delta, "logprobs": None,
                                        "finish_reason": finish}]}
        if include_usage:
            payload["usage"] = None  # every chunk but the last carries a null usage
        return sse_frame(payload)

    frames = []
    for choice in completion["choices"]:
        index, message = choice["index"], choice["message"]
        frames.append(chunk(index, {"role": "assistant", "content": "", "refusal": None}))
        frames.extend(chunk(index, {"content": piece})
                      for piece in pieces(message["content"] or ""))
        for position, call in enumerate(message.get("tool_calls") or []):
            function = call["function"]
            frames.append(chunk(index, {"tool_calls": [{
                "index": position, "id": call["id"], "type": "function",
                "function": {"name": function["name"], "arguments": ""}}]}))
            frames.extend(chunk(index, {"tool_calls": [{"index": position,
                                                        "function": {"arguments": piece}}]})
                          for piece in pieces(function["arguments"], 16))
        frames.append(chunk(index, {}, choice["finish_reason"]))
    if include_usage:
        frames.append(sse_frame({**base, "choices": [], "usage": completion["usage"]}))
    frames.append(sse_frame("[DONE]"))
    return frames


def responses_frames(response: dict[str, Any]) -> list[bytes]:
    """``response.*`` events for a finished Responses body, numbered by ``sequence_number``."""
    frames: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        frames.append(sse_frame({"type": kind, "sequence_number": len(frames), **fields}, kind))

    started = {**response, "status": "in_progress", "output": [], "usage": None,
               "incomplete_details": None}
    emit("response.created", response=started)
    emit("response.in_progress", response=started)
    for output_index, item in enumerate(response["output"]):
        opening = copy.deepcopy(item)
        opening["status"] = "in_progress"
        if item["type"] == "message":
            opening["content"] = []
        elif item["type"] == "function_call":
            opening["arguments"] = ""
        emit("response.output_item.added", output_index=output_index, item=opening)
        if item["type"] == "message":
            for content_index, part in enumerate(item["content"]):
                empty = {**part, "text": ""}
                ids = {"item_id": item["id"], "output_index": output_index,
                       "content_index": content_index}
                emit("response.content_part.added", part=empty, **ids)
                for piece in pieces(part["text"]):
                    emit("response.output_text.delta", delta=piece, logprobs=[], **ids)
                emit("response.output_text.done", text=part["text"], logprobs=[], **ids)
                emit("response.content_part.done", part=part, **ids)
        elif item["type"] == "function_call":
            for piece in pieces(item["arguments"], 16):
                emit("response.function_call_arguments.delta", item_id=item["id"],
                     output_index=output_index, delta=piece)
            emit("response.function_call_arguments.done", item_id=item["id"],
                 output_index=output_index, arguments=item["arguments"], name=item["name"])
        emit("response.output_item.done", output_index=output_index, item=item)
    emit("response.completed" if response["status"] == "completed" else "response.incomplete",
         response=response)
    return frames
