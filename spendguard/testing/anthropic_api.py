"""Anthropic Messages and count_tokens, as the ``anthropic`` SDK expects them on the wire.

``usage.input_tokens`` EXCLUDES cache reads and writes (Anthropic's convention: the three add
up to the prompt); cache writes are split by TTL in ``usage.cache_creation``. Caching happens
only at ``cache_control`` breakpoints (or the request-level automatic one), from the model's
minimum cacheable length up.
"""

from __future__ import annotations

import json
from typing import Any

from spendguard.testing.counting import input_tokens
from spendguard.testing.generation import Generation, generate, output_cap, require_model
from spendguard.testing.openai_stream import pieces
from spendguard.testing.prompt_cache import CacheUse, anthropic_breakpoints, anthropic_cache_use
from spendguard.testing.state import Ctx, State
from spendguard.testing.wire import (
    EmulatedError,
    WireResponse,
    json_response,
    sse_frame,
    sse_response,
)

__all__ = ["count_tokens", "message_body", "message_frames", "messages"]

MESSAGES_PATH = "/v1/messages"
Spot = tuple[str, int, int | None]


def _strip(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) \
        else block


def _blocks(body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Spot]]:
    """Cacheable blocks in prompt order (tools, system, messages) and where each one sits."""
    blocks: list[dict[str, Any]] = []
    spots: list[Spot] = []
    for index, tool in enumerate(body.get("tools") or []):
        blocks.append({"at": "tool", "block": _strip(tool), "cache_control": tool.get(
            "cache_control") if isinstance(tool, dict) else None})
        spots.append(("tools", index, None))
    system = body.get("system")
    for index, block in enumerate([{"type": "text", "text": system}] if isinstance(system, str)
                                  and system else system or []):
        blocks.append({"at": "system", "block": _strip(block),
                       "cache_control": block.get("cache_control")})
        spots.append(("system", index, None))
    for index, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"at": message.get("role"), "first": True,
                           "block": {"type": "text", "text": content}, "cache_control": None})
            spots.append(("messages", index, None))
            continue
        for position, block in enumerate(content or []):
            blocks.append({"at": message.get("role"), "first": position == 0,
                           "block": _strip(block), "cache_control": block.get("cache_control")})
            spots.append(("messages", index, position))
    return blocks, spots


def _prefix_body(body: dict[str, Any], spot: Spot) -> dict[str, Any]:
    kind, index, position = spot
    prefix: dict[str, Any] = {"model": body["model"], "messages": []}
    if kind == "tools":
        prefix["tools"] = body["tools"][:index + 1]
        return prefix
    if body.get("tools"):
        prefix["tools"] = body["tools"]
    system: Any = body.get("system")
    if kind == "system":
        prefix["system"] = system if isinstance(system, str) else system[:index + 1]
        return prefix
    if system:
        prefix["system"] = system
    message = body["messages"][index]
    if position is not None:
        message = {**message, "content": message["content"][:position + 1]}
    prefix["messages"] = [*body["messages"][:index], message]
    return prefix


def run_messages(state: State, body: dict[str, Any], now_s: float) -> Generation:
    model = require_model(body)
    if output_cap(body, "max_tokens") is None:
        raise EmulatedError(400, "max_tokens: Field required")
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        raise EmulatedError(400, "messages: Field required (at least one message)")
    blocks, spots = _blocks(body)
    breakpoints = anthropic_breakpoints(body, blocks)

    def cache(total: int) -> CacheUse:
        return anthropic_cache_use(
            state.cache, root=json.dumps(["anthropic", model]), blocks=blocks,
            breakpoints=breakpoints, total_tokens=total, now_s=now_s,
            min_tokens=state.config.min_cacheable_tokens(model),
            prefix_tokens=lambda at: state.config.anthropic_tokens(
                body, input_tokens("anthropic", MESSAGES_PATH, _prefix_body(body, spots[at]))))

    return generate(state, provider="anthropic", endpoint=MESSAGES_PATH, body=body, model=model,
                    cap=output_cap(body, "max_tokens"), cache=cache, now_s=now_s,
                    id_prefix="msg_emu_", call_prefix="toolu_emu_")


def message_body(state: State, body: dict[str, Any], now_s: float, *, batch: bool = False
                 ) -> dict[str, Any]:
    """The ``message`` JSON for a request body (``batch``: as a Message Batch result)."""
    generation = run_messages(state, body, now_s)
    choice = generation.choices[0]
    content: list[dict[str, Any]] = []
    if choice.reasoning_tokens:
        content.append({"type": "thinking", "signature": "spendguard-emulator",
                        "thinking": f"{choice.reasoning_tokens} emulated thinking tokens."})
    if choice.text:
        content.append({"type": "text", "text": choice.text, "citations": None})
    for call, call_id in zip(choice.tool_calls, generation.call_ids[0], strict=True):
        content.append({"type": "tool_use", "id": call_id, "name": call.name,
                        "input": dict(call.arguments)})
    cache = generation.cache
    usage: dict[str, Any] = {
        "input_tokens": generation.uncached_tokens, "output_tokens": generation.output_tokens,
        "cache_creation_input_tokens": cache.write_tokens,
        "cache_read_input_tokens": cache.read_tokens,
        "cache_creation": {"ephemeral_5m_input_tokens": cache.write_5m_tokens,
                           "ephemeral_1h_input_tokens": cache.write_1h_tokens},
        "server_tool_use": None, "service_tier": "batch" if batch else "standard",
        "inference_geo": body.get("inference_geo", "global"),
        "speed": body.get("speed", "standard")}
    if choice.reasoning_tokens:
        usage["output_tokens_details"] = {"thinking_tokens": choice.reasoning_tokens}
    stop = "max_tokens" if choice.stopped_by_cap else ("tool_use" if choice.tool_calls
                                                      else "end_turn")
    return {"id": generation.id, "type": "message", "role": "assistant",
            "model": generation.model, "content": content, "stop_reason": stop,
            "stop_sequence": None, "usage": usage}


def message_frames(message: dict[str, Any]) -> list[bytes]:
    """The Messages stream for a finished message: start, blocks, cumulative delta, stop."""
    usage = message["usage"]
    opening_usage = {**usage, "output_tokens": min(1, usage["output_tokens"])}
    opening = {**message, "content": [], "stop_reason": None, "usage": opening_usage}
    frames = [sse_frame({"type": "message_start", "message": opening}, "message_start")]
    for index, block in enumerate(message["content"]):
        start, deltas = dict(block), []
        if block["type"] == "text":
            start["text"] = ""
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
        elif block["type"] == "thinking":
            start.update(thinking="", signature="")
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block["signature"]}]
        elif block["type"] == "tool_use":
            start["input"] = {}
            deltas = [{"type": "input_json_delta", "partial_json": p}
                      for p in pieces(json.dumps(block["input"]), 16)]
        frames.append(sse_frame({"type": "content_block_start", "index": index,
                                 "content_block": start}, "content_block_start"))
        if index == 0:
            frames.append(sse_frame({"type": "ping"}, "ping"))
        frames.extend(sse_frame({"type": "content_block_delta", "index": index, "delta": delta},
                                "content_block_delta") for delta in deltas)
        frames.append(sse_frame({"type": "content_block_stop", "index": index},
                                "content_block_stop"))
    final_usage = {key: usage[key] for key in (
        "input_tokens", "output_tokens", "cache_creation_input_tokens",
        "cache_read_input_tokens", "server_tool_use")}
    frames.append(sse_frame({"type": "message_delta", "usage": final_usage, "delta": {
        "stop_reason": message["stop_reason"], "stop_sequence": None}}, "message_delta"))
    frames.append(sse_frame({"type": "message_stop"}, "message_stop"))
    return frames


def messages(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body = ctx.request.json()
    message = message_body(ctx.state, body, ctx.now_s)
    if body.get("stream"):
        return sse_response("anthropic", ctx.request_id, message_frames(message))
    return json_response("anthropic", ctx.request_id, message)


def count_tokens(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body = ctx.request.json()
    require_model(body)
    if not isinstance(body.get("messages"), list):
        raise EmulatedError(400, "messages: Field required")
    return json_response("anthropic", ctx.request_id,
                         {"input_tokens": ctx.config.anthropic_tokens(
                             body, input_tokens("anthropic", MESSAGES_PATH, body))})
