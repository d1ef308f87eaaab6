"""The choke point's guarantee as a property, over arbitrary usage objects and event sequences.

For every provider (OpenAI, Anthropic, Gemini), bodies and server-sent-event streams: every
request that reached the (in-process) provider ends in exactly one ledger record, nothing stays
reserved, and the caller sees exactly what the SDK alone would have shown (the same reply, or
the same SDK error): nothing is raised from inside spendguard.
"""

from __future__ import annotations

import functools
import gzip
import json
from typing import Any

import anthropic
import httpx2
import openai
from google import genai
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spendguard
from tests.provider_bodies import anthropic_message, chat_completion, sse

PROPERTY = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]


class Wire(httpx2.BaseTransport):
    """The provider: answers every request with the same bytes, counting what it received."""

    def __init__(self, body: bytes, headers: dict[str, str]) -> None:
        self.body, self.headers, self.sent = body, headers, 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent += 1
        return httpx2.Response(200, headers=self.headers, stream=httpx2.ByteStream(self.body))


# ---------------------------------------------------------------- strategies

counts = st.one_of(st.integers(0, 3000), st.integers(-3, 10**31), st.none(),
                   st.text(max_size=3), st.floats(), st.booleans(),
                   st.lists(st.integers(0, 9), max_size=2),
                   st.dictionaries(st.text(max_size=3), st.integers(0, 9), max_size=2))
labels = st.one_of(st.none(), st.integers(0, 3),
                   st.sampled_from(["standard", "default", "priority", "batch", "flex", "us",
                                    "global", "fast", "ultra", "mars"]))
anthropic_usages = st.one_of(counts, st.fixed_dictionaries({}, optional={
    "input_tokens": counts, "output_tokens": counts,
    "cache_creation_input_tokens": counts, "cache_read_input_tokens": counts,
    "cache_creation": st.one_of(counts, st.fixed_dictionaries({}, optional={
        "ephemeral_5m_input_tokens": counts, "ephemeral_1h_input_tokens": counts})),
    "server_tool_use": st.one_of(counts, st.dictionaries(
        st.sampled_from(["web_search_requests", "web_fetch_requests",
                         "code_execution_requests"]), counts, max_size=2)),
    "service_tier": labels, "inference_geo": labels, "speed": labels,
    "iterations": st.one_of(counts, st.lists(st.fixed_dictionaries(
        {"type": st.sampled_from(["compaction", "message"])},
        optional={"input_tokens": counts, "output_tokens": counts}), max_size=2)),
}))
openai_usages = st.one_of(counts, st.fixed_dictionaries({}, optional={
    "prompt_tokens": counts, "completion_tokens": counts, "total_tokens": counts,
    "prompt_tokens_details": st.one_of(counts, st.fixed_dictionaries({}, optional={
        "cached_tokens": counts, "cache_write_tokens": counts})),
    "completion_tokens_details": st.one_of(counts, st.fixed_dictionaries({}, optional={
        "reasoning_tokens": counts})),
}))
gemini_usages = st.one_of(counts, st.fixed_dictionaries({}, optional={
    "promptTokenCount": counts, "candidatesTokenCount": counts, "thoughtsTokenCount": counts,
    "cachedContentTokenCount": counts, "toolUsePromptTokenCount": counts,
    "totalTokenCount": counts,
}))
gemini_grounding = st.one_of(st.none(), counts, st.fixed_dictionaries({}, optional={
    "webSearchQueries": st.one_of(counts, st.lists(st.one_of(st.text(max_size=4), counts),
                                                    max_size=3))}))
models = st.one_of(st.none(), st.integers(0, 9), st.sampled_from(["", "gpt-4o-mini",
                                                                  "claude-haiku-4-5", "x"]))
texts = st.text(max_size=12)


@st.composite
def encodings(draw: st.DrawFn, body: bytes) -> tuple[bytes, dict[str, str]]:
    """The body as sent: plain, honestly gzipped, or labelled gzip without being it."""
    how = draw(st.sampled_from(["identity", "gzip", "lying gzip"]))
    if how == "identity":
        return body, {}
    return (gzip.compress(body) if how == "gzip" else body), {"content-encoding": "gzip"}


@st.composite
def anthropic_bodies(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    message: dict[str, Any] = anthropic_message()
    message["model"] = draw(st.one_of(st.just("claude-haiku-4-5"), models))
    if draw(st.booleans()):
        message["usage"] = draw(anthropic_usages)
    else:
        del message["usage"]
    body, headers = draw(encodings(json.dumps(message).encode()))
    return body, {"content-type": "application/json", **headers}


@st.composite
def openai_bodies(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    reply: dict[str, Any] = chat_completion()
    reply["model"] = draw(st.one_of(st.just("gpt-4o-mini"), models))
    reply["service_tier"] = draw(labels)
    if draw(st.booleans()):
        reply["usage"] = draw(openai_usages)
    else:
        del reply["usage"]
    body, headers = draw(encodings(json.dumps(reply).encode()))
    return body, {"content-type": "application/json", **headers}


def _gemini_response(draw: st.DrawFn, *, text: str, finish: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]},
                                 "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    grounding = draw(gemini_grounding)
    if grounding is not None:
        candidate["groundingMetadata"] = grounding
    reply: dict[str, Any] = {"candidates": [candidate],
                             "modelVersion": draw(st.one_of(st.just("gemini-2.5-flash"),
                                                            models))}
    if draw(st.booleans()):
        reply["usageMetadata"] = draw(gemini_usages)
    return reply


@st.composite
def gemini_bodies(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    reply = _gemini_response(draw, text=draw(texts), finish="STOP")
    body, headers = draw(encodings(json.dumps(reply).encode()))
    return body, {"content-type": "application/json", **headers}


@st.composite
def gemini_streams(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    events: list[tuple[str | None, Any]] = []
    for kind in draw(st.lists(st.sampled_from(["piece", "garbage"]), max_size=6)):
        events.append((None, _gemini_response(draw, text=draw(texts), finish=None))
                      if kind == "piece" else (None, "{oops"))
    if draw(st.booleans()):
        events.append((None, _gemini_response(draw, text="", finish=draw(
            st.sampled_from(["STOP", "MAX_TOKENS", None])))))
    body, headers = draw(encodings(_cut(draw, sse(events))))
    return body, {"content-type": "text/event-stream", **headers}


def _cut(draw: st.DrawFn, body: bytes) -> bytes:
    """The stream whole, or cut anywhere (the connection closed early)."""
    return body if draw(st.booleans()) else body[:draw(st.integers(0, len(body)))]


@st.composite
def anthropic_streams(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    def start() -> tuple[str, Any]:
        return "message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": draw(st.one_of(st.just("claude-haiku-4-5"), models)),
            "stop_reason": None, "stop_sequence": None, "usage": draw(anthropic_usages)}}

    def delta() -> tuple[str, Any]:
        return "content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": draw(texts)}}

    def usage() -> tuple[str, Any]:
        return "message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                 "usage": draw(anthropic_usages)}

    fixed: dict[str, tuple[str, Any]] = {
        "block_start": ("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}}),
        "block_stop": ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        "ping": ("ping", {"type": "ping"}),
        "stop": ("message_stop", {"type": "message_stop"}),
        "garbage": ("message_delta", "{not json"),
    }
    events: list[tuple[str | None, Any]] = [start(), fixed["block_start"]]
    for kind in draw(st.lists(st.sampled_from(["delta", "usage", "start", *fixed]),
                              max_size=8)):
        events.append(delta() if kind == "delta" else usage() if kind == "usage"
                      else start() if kind == "start" else fixed[kind])
    if draw(st.booleans()):
        events += [fixed["block_stop"], usage(), fixed["stop"]]
    body, headers = draw(encodings(_cut(draw, sse(events))))
    return body, {"content-type": "text/event-stream", **headers}


@st.composite
def openai_streams(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    def chunk(**fields: Any) -> tuple[None, Any]:
        return None, {"id": "chatcmpl-1", "object": "chat.completion.chunk",
                      "created": 1800000000,
                      "model": draw(st.one_of(st.just("gpt-4o-mini"), models)), **fields}

    def piece() -> tuple[None, Any]:
        finish = draw(st.sampled_from([None, None, "stop", "length"]))
        return chunk(choices=[{"index": draw(st.integers(0, 1)),
                               "delta": {"content": draw(texts)}, "finish_reason": finish}])

    def usage() -> tuple[None, Any]:
        return chunk(choices=draw(st.one_of(st.just([]), counts)), usage=draw(openai_usages))

    events: list[tuple[str | None, Any]] = []
    for kind in draw(st.lists(st.sampled_from(["piece", "usage", "done", "garbage"]),
                              max_size=8)):
        events.append(piece() if kind == "piece" else usage() if kind == "usage"
                      else (None, "[DONE]") if kind == "done" else (None, "{oops"))
    if draw(st.booleans()):
        events += [chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
                   usage(), (None, "[DONE]")]
    body, headers = draw(encodings(_cut(draw, sse(events))))
    return body, {"content-type": "text/event-stream", **headers}


# ---------------------------------------------------------------- the property


def _seen(action: Any) -> str:
    """What the caller saw, comparable across clients: the reply's data, or the error's type."""
    try:
        result = action()
    except Exception as exc:
        return f"raised {type(exc).__module__}.{type(exc).__name__}"
    return json.dumps(result, default=str, sort_keys=True)


_GEMINI_WIRE = Wire(b"", {})


@functools.cache
def _gemini_clients() -> tuple[Any, Any]:
    """A plain and a guarded genai client on one httpx2 client pair (the guarded one tags
    its own requests)."""
    http = genai_types.HttpOptions(
        base_url="http://gemini.invalid/", httpx_client=httpx2.Client(transport=_GEMINI_WIRE),
        httpx_async_client=httpx2.AsyncClient(transport=httpx2.AsyncBaseTransport()))
    return genai.Client(api_key="k", http_options=http), spendguard.Gemini(
        api_key="k", http_options=http)


def _check(provider: str, stream: bool, response: tuple[bytes, dict[str, str]]) -> None:
    wire = Wire(*response)
    budget = spendguard.Budget("1000000000000", ledger="memory://")

    def run(client: Any) -> Any:
        if provider == "gemini":
            config = {"max_output_tokens": 100, "thinking_config": {"thinking_budget": 0}}
            if stream:
                return [chunk.model_dump() for chunk in client.models.generate_content_stream(
                    model="gemini-2.5-flash", contents="Say hi", config=config)]
            return client.models.generate_content(model="gemini-2.5-flash",
                                                  contents="Say hi", config=config).model_dump()
        if provider == "openai":
            request: dict[str, Any] = {"model": "gpt-4o-mini", "messages": MESSAGES,
                                       "max_tokens": 100}
            if stream:
                with client.chat.completions.create(
                        **request, stream=True, stream_options={"include_usage": True}) as s:
                    return [chunk.model_dump() for chunk in s]
            return client.chat.completions.create(**request).model_dump()
        request = {"model": "claude-haiku-4-5", "messages": MESSAGES, "max_tokens": 100}
        if stream:
            with client.messages.create(**request, stream=True) as s:
                return [event.model_dump() for event in s]
        return client.messages.create(**request).model_dump()

    options: dict[str, Any] = {"api_key": "k", "max_retries": 0}
    plain: Any
    guarded: Any
    if provider == "gemini":
        # Building a genai client costs more than the calls: two are built once and share
        # one wire, whose reply each example sets; wrap() gives this example's budget.
        plain, guarded = _gemini_clients()
        wire = _GEMINI_WIRE
        wire.body, wire.headers = response
        spendguard.wrap(guarded, budget)
    elif provider == "openai":
        plain = openai.OpenAI(http_client=httpx2.Client(transport=wire), **options)
        guarded = spendguard.OpenAI(http_client=httpx2.Client(transport=wire),
                                         budget=budget, **options)
    else:
        plain = anthropic.Anthropic(http_client=httpx2.Client(transport=wire), **options)
        guarded = spendguard.Anthropic(http_client=httpx2.Client(transport=wire),
                                       budget=budget, **options)
    expected = _seen(lambda: run(plain))
    sent_plainly = wire.sent
    assert _seen(lambda: run(guarded)) == expected
    reached = wire.sent - sent_plainly
    recorded = list(budget.ledger.records())
    assert len(recorded) == reached
    assert all(record.status != "released" for record in recorded)
    assert budget.reserved == 0


@PROPERTY
@given(anthropic_bodies())
def test_every_anthropic_body_ends_in_one_record_and_the_sdk_own_outcome(
        response: tuple[bytes, dict[str, str]]) -> None:
    _check("anthropic", False, response)


@PROPERTY
@given(anthropic_streams())
def test_every_anthropic_stream_ends_in_one_record_and_the_sdk_own_outcome(
        response: tuple[bytes, dict[str, str]]) -> None:
    _check("anthropic", True, response)


@PROPERTY
@given(openai_bodies())
def test_every_openai_body_ends_in_one_record_and_the_sdk_own_outcome(
        response: tuple[bytes, dict[str, str]]) -> None:
    _check("openai", False, response)


@PROPERTY
@given(openai_streams())
def test_every_openai_stream_ends_in_one_record_and_the_sdk_own_outcome(
        response: tuple[bytes, dict[str, str]]) -> None:
    _check("openai", True, response)


@PROPERTY
@given(gemini_bodies())
def test_every_gemini_body_ends_in_one_record_and_the_sdk_own_outcome(
        response: tuple[bytes, dict[str, str]]) -> None:
    _check("gemini", False, response)


@PROPERTY
@given(gemini_streams())
def test_every_gemini_stream_ends_in_one_record_and_the_sdk_own_outcome(
        response: tuple[bytes, dict[str, str]]) -> None:
    _check("gemini", True, response)
