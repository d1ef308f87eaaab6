"""OpenAI Chat Completions and Embeddings, as the ``openai`` SDK expects them on the wire.

``prompt_tokens`` includes ``cached_tokens`` (OpenAI's convention); ``completion_tokens``
includes reasoning tokens. Caching is automatic for prompts of 1,024 tokens or more; a cached
prefix may end after any content part, not only after a whole message.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
from typing import Any

from spendguard.testing.counting import input_tokens
from spendguard.testing.generation import Generation, generate, output_cap, require_model
from spendguard.testing.openai_stream import chat_frames
from spendguard.testing.prompt_cache import (
    CacheUse,
    cut_messages,
    message_segments,
    openai_cached_tokens,
)
from spendguard.testing.state import Ctx, State
from spendguard.testing.wire import EmulatedError, WireResponse, json_response, sse_response

__all__ = ["chat_completion_body", "chat_completions", "embeddings", "embeddings_body",
           "openai_cache", "service_tier"]

CHAT_PATH = "/v1/chat/completions"
_EMBEDDING_DIMENSIONS = {"text-embedding-3-large": 3072}
_OPENAI_TTL_S = {"24h": 86_400.0, "30m": 1_800.0, "12h": 43_200.0}


def service_tier(requested: Any) -> str:
    """The tier a response reports for the tier asked for (fast shows as priority)."""
    return {"flex": "flex", "priority": "priority", "fast": "priority",
            "scale": "scale"}.get(str(requested), "default")


def openai_cache(state: State, body: dict[str, Any], *, model: str, endpoint: str,
                 segments: list[Any], prefix_body: Any, now_s: float) -> Any:
    """The cache lookup for one OpenAI request, run once its prompt is counted."""
    options = body.get("prompt_cache_options") or {}
    ttl_name = (options.get("ttl") if isinstance(options, dict) else None) \
        or body.get("prompt_cache_retention")
    ttl_s = _OPENAI_TTL_S.get(str(ttl_name), state.config.openai_cache_ttl_s)
    root = json.dumps(["openai", model, body.get("prompt_cache_key")])

    def use(total: int) -> CacheUse:
        def prefix_tokens(position: int) -> int:
            return input_tokens("openai", endpoint, prefix_body(position))
        return CacheUse(openai_cached_tokens(
            state.cache, root=root, segments=segments, prefix_tokens=prefix_tokens,
            total_tokens=total, now_s=now_s, ttl_s=ttl_s))
    return use


def chat_usage(generation: Generation) -> dict[str, Any]:
    prompt, output = generation.prompt_tokens, generation.output_tokens
    return {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": generation.cache.read_tokens,
                                      "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": generation.reasoning_tokens,
                                          "audio_tokens": 0, "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0}}


def finish_reason(generation: Generation, index: int) -> str:
    choice = generation.choices[index]
    if choice.stopped_by_cap:
        return "length"
    return "tool_calls" if choice.tool_calls else "stop"


def tool_calls_json(generation: Generation, index: int) -> list[dict[str, Any]]:
    return [{"id": call_id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))}}
            for call, call_id in zip(generation.choices[index].tool_calls,
                                     generation.call_ids[index], strict=True)]


def run_chat(state: State, body: dict[str, Any], now_s: float) -> Generation:
    model = require_model(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise EmulatedError(400, "Missing required parameter: 'messages'.", param="messages",
                            code="missing_required_parameter")
    tools = list(body.get("tools") or [])
    pieces, spots = message_segments(messages)
    segments = [*tools, *pieces]

    def prefix_body(position: int) -> dict[str, Any]:
        cut = position + 1
        if cut <= len(tools):
            return {"model": model, "tools": tools[:cut], "messages": []}
        return {"model": model, "tools": tools,
                "messages": cut_messages(messages, spots[cut - len(tools) - 1])}

    n = body.get("n") or 1
    if not isinstance(n, int) or n < 1:
        raise EmulatedError(400, f"Invalid 'n': expected an integer >= 1, got {n!r}.", param="n")
    cache = openai_cache(state, body, model=model, endpoint=CHAT_PATH, segments=segments,
                         prefix_body=prefix_body, now_s=now_s)
    return generate(state, provider="openai", endpoint=CHAT_PATH, body=body, model=model,
                    cap=output_cap(body, "max_completion_tokens", "max_tokens"), cache=cache,
                    now_s=now_s, id_prefix="chatcmpl-emu-", call_prefix="call_emu_", choices=n)


def chat_completion_body(state: State, body: dict[str, Any], now_s: float) -> dict[str, Any]:
    """The ``chat.completion`` JSON for a request body (also used for batch lines)."""
    generation = run_chat(state, body, now_s)
    return chat_json(generation, body)


def chat_json(generation: Generation, body: dict[str, Any]) -> dict[str, Any]:
    choices = []
    for index, choice in enumerate(generation.choices):
        message: dict[str, Any] = {"role": "assistant", "content": choice.text or None,
                                   "refusal": None, "annotations": []}
        if choice.tool_calls:
            message["tool_calls"] = tool_calls_json(generation, index)
        choices.append({"index": index, "message": message, "logprobs": None,
                        "finish_reason": finish_reason(generation, index)})
    return {"id": generation.id, "object": "chat.completion", "created": int(generation.created_s),
            "model": generation.model, "choices": choices,
            "service_tier": service_tier(body.get("service_tier")),
            "system_fingerprint": "fp_spendguard_emulator", "usage": chat_usage(generation)}


def chat_completions(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body = ctx.request.json()
    generation = run_chat(ctx.state, body, ctx.now_s)
    if body.get("stream"):
        options = body.get("stream_options") or {}
        include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
        frames = chat_frames(chat_json(generation, body), include_usage=include_usage)
        return sse_response("openai", ctx.request_id, frames)
    return json_response("openai", ctx.request_id, chat_json(generation, body))


def _vector(text: str, dimensions: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    rng = random.Random(seed)
    values = [rng.uniform(-1.0, 1.0) for _ in range(dimensions)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


def embeddings_body(state: State, body: dict[str, Any], now_s: float) -> dict[str, Any]:
    """The embeddings list JSON: deterministic unit vectors, usage from the counter."""
    model = require_model(body)
    raw = body.get("input")
    if raw is None or raw in ([], ""):
        raise EmulatedError(400, "Missing required parameter: 'input'.", param="input")
    if isinstance(raw, str) or (isinstance(raw, list) and raw and isinstance(raw[0], int)):
        raw = [raw]
    if not isinstance(raw, list):
        raise EmulatedError(400, "Invalid 'input': expected a string or a list.", param="input")
    dimensions = body.get("dimensions") or _EMBEDDING_DIMENSIONS.get(model, 1536)
    as_base64 = body.get("encoding_format") == "base64"
    data, tokens = [], 0
    for index, item in enumerate(raw):
        if isinstance(item, list):  # token ids: the count is the length
            text, count = " ".join(map(str, item)), len(item)
        else:
            text = str(item)
            count = input_tokens("openai", "/v1/embeddings", {"model": model, "input": text})
        tokens += count
        vector = _vector(f"{model}:{text}", int(dimensions))
        encoded: Any = vector
        if as_base64:
            encoded = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    return {"object": "list", "model": model, "data": data,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def embeddings(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    return json_response("openai", ctx.request_id,
                         embeddings_body(ctx.state, ctx.request.json(), ctx.now_s))
