"""The OpenAI Responses API: create (plain and streamed), retrieve, and input-token counts.

``previous_response_id`` is honoured the way the provider bills it: the earlier turns (their
input and output items) are part of this request's prompt, so they count and they cache.
"""

from __future__ import annotations

import json
from typing import Any

from spendguard.testing.counting import input_tokens
from spendguard.testing.generation import Generation, generate, output_cap, require_model
from spendguard.testing.openai_api import openai_cache, service_tier
from spendguard.testing.openai_stream import responses_frames
from spendguard.testing.prompt_cache import cut_messages, message_segments
from spendguard.testing.state import Ctx, State
from spendguard.testing.wire import EmulatedError, WireResponse, json_response, sse_response

__all__ = ["input_token_count", "response_body", "responses", "retrieve_response"]

RESPONSES_PATH = "/v1/responses"


def _input_items(state: State, body: dict[str, Any]) -> list[Any]:
    raw = body.get("input", [])
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else list(raw or [])
    previous = body.get("previous_response_id")
    if previous is None:
        return items
    stored = state.responses.get(previous)
    if stored is None:
        raise EmulatedError(400, f"Previous response with id '{previous}' not found.",
                            param="previous_response_id")
    return [*stored["conversation"], *items]


def _prompt(state: State, body: dict[str, Any]) -> tuple[str, dict[str, Any], list[Any]]:
    """The model, the prompt as the model sees it, and its head (tools, instructions)."""
    model = require_model(body)
    items = _input_items(state, body)
    counted = {"model": model, "input": items}
    for name in ("instructions", "tools"):
        if body.get(name):
            counted[name] = body[name]
    tools = list(body.get("tools") or [])
    head = [*tools, *([{"instructions": body["instructions"]}] if body.get("instructions") else [])]
    return model, counted, head


def _run(state: State, body: dict[str, Any], now_s: float) -> tuple[Generation, list[Any]]:
    model, counted, head = _prompt(state, body)
    tools = list(body.get("tools") or [])
    pieces, spots = message_segments(counted["input"])
    segments = [*head, *pieces]
    head_length = len(head)

    def prefix_body(position: int) -> dict[str, Any]:
        cut = position + 1
        items = cut_messages(counted["input"], spots[cut - head_length - 1]) \
            if cut > head_length else []
        prefix: dict[str, Any] = {"model": model, "tools": tools[:cut], "input": items}
        if cut > len(tools) and body.get("instructions"):
            prefix["instructions"] = body["instructions"]
        return prefix

    cache = openai_cache(state, body, model=model, endpoint=RESPONSES_PATH, segments=segments,
                         prefix_body=prefix_body, now_s=now_s)
    generation = generate(state, provider="openai", endpoint=RESPONSES_PATH, body=body,
                          counted_body=counted, model=model,
                          cap=output_cap(body, "max_output_tokens"), cache=cache, now_s=now_s,
                          id_prefix="resp_emu_", call_prefix="call_emu_")
    return generation, counted["input"]


def _output_items(state: State, generation: Generation) -> list[dict[str, Any]]:
    choice = generation.choices[0]
    items: list[dict[str, Any]] = []
    if choice.reasoning_tokens:
        items.append({"type": "reasoning", "id": state.ids.new("rs_emu_"), "summary": []})
    if choice.text or not choice.tool_calls:
        items.append({"type": "message", "id": state.ids.new("msg_emu_"), "status": "completed",
                      "role": "assistant", "content": [{"type": "output_text", "text": choice.text,
                                                        "annotations": [], "logprobs": []}]})
    for call, call_id in zip(choice.tool_calls, generation.call_ids[0], strict=True):
        items.append({"type": "function_call", "id": state.ids.new("fc_emu_"), "call_id": call_id,
                      "name": call.name, "arguments": json.dumps(dict(call.arguments)),
                      "status": "completed"})
    return items


def response_body(state: State, body: dict[str, Any], now_s: float) -> dict[str, Any]:
    """The ``response`` JSON for a request body (also used for batch lines); stores the turn."""
    generation, conversation = _run(state, body, now_s)
    output = _output_items(state, generation)
    stopped = generation.choices[0].stopped_by_cap
    prompt, completion = generation.prompt_tokens, generation.output_tokens
    response = {
        "id": generation.id, "object": "response", "created_at": int(generation.created_s),
        "status": "incomplete" if stopped else "completed", "model": generation.model,
        "output": output, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if stopped else None,
        "instructions": body.get("instructions"), "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [],
        "temperature": body.get("temperature", 1.0), "top_p": body.get("top_p", 1.0),
        "max_output_tokens": body.get("max_output_tokens"),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
        "text": body.get("text") or {"format": {"type": "text"}}, "truncation": "disabled",
        "service_tier": service_tier(body.get("service_tier")), "store": body.get("store", True),
        "background": False, "user": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion,
                  "total_tokens": prompt + completion,
                  "input_tokens_details": {"cached_tokens": generation.cache.read_tokens,
                                           "cache_write_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": generation.reasoning_tokens}},
    }
    if response["store"]:
        state.responses[generation.id] = {"response": response,
                                          "conversation": [*conversation, *output]}
    return response


def responses(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body = ctx.request.json()
    response = response_body(ctx.state, body, ctx.now_s)
    if body.get("stream"):
        return sse_response("openai", ctx.request_id, responses_frames(response))
    return json_response("openai", ctx.request_id, response)


def retrieve_response(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    response_id = params["id"]
    stored = ctx.state.responses.get(response_id)
    if stored is None:
        raise EmulatedError(404, f"Response with id '{response_id}' not found.")
    return json_response("openai", ctx.request_id, stored["response"])


def input_token_count(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    _, counted, _ = _prompt(ctx.state, ctx.request.json())
    return json_response("openai", ctx.request_id, {
        "object": "response.input_tokens",
        "input_tokens": input_tokens("openai", RESPONSES_PATH, counted)})
