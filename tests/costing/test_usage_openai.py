"""OpenAI usage: chat, Responses, embeddings, streams and batch lines, as dicts and SDK objects.

The shapes are the ones shared/research/provider-facts.md §2 proved against openai 3.57.
"""

from __future__ import annotations

from typing import Any

import pytest
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response

from spendguard import ProviderResponseError, UnknownModelError, Usage, stream_reader, usage_from
from spendguard._providers.openai.usage import _chat_usage, _usual_chat_usage

CHAT: dict[str, Any] = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1800000000, "model": "gpt-5.5",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi", "refusal": None},
                 "finish_reason": "stop", "logprobs": None}],
    "service_tier": "default",
    "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
              "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0,
                                        "cache_write_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 256, "audio_tokens": 0,
                                            "accepted_prediction_tokens": 0,
                                            "rejected_prediction_tokens": 0}},
}

RESPONSE: dict[str, Any] = {
    "id": "resp_1", "object": "response", "created_at": 1800000000, "status": "completed",
    "model": "gpt-6.2-sol",
    "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "hello", "annotations": []}]}],
    "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
    "incomplete_details": None, "service_tier": "priority",
    "tool_usage": {"web_search": {"num_requests": 2},
                   "image_gen": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
                                 "input_tokens_details": {"image_tokens": 0, "text_tokens": 0}}},
    "usage": {"input_tokens": 10000, "output_tokens": 500, "total_tokens": 10500,
              "input_tokens_details": {
                  "cached_tokens": 4000, "cache_write_tokens": 3000,
                  "cache_write_tokens_details": {"ttl_30m_tokens": 1000, "ttl_12h_tokens": 2000}},
              "output_tokens_details": {"reasoning_tokens": 384}},
}

EMBEDDINGS: dict[str, Any] = {
    "object": "list", "model": "text-embedding-3-small",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2, 0.3]}],
    "usage": {"prompt_tokens": 5, "total_tokens": 5},
}

CHAT_USAGE = Usage(input_tokens=176, cache_read_tokens=1024, output_tokens=300,
                   reasoning_tokens=256, service_tier="default")
# input_tokens 10000 includes 4000 cached and 3000 written: 3000 uncached remain.
RESPONSE_USAGE = Usage(input_tokens=3000, cache_read_tokens=4000,
                       cache_write_tokens={"30m": 1000, "12h": 2000}, output_tokens=500,
                       reasoning_tokens=384, tool_requests={"web_search": 2},
                       service_tier="priority")


def test_chat_completion_prompt_tokens_include_cached_tokens() -> None:
    assert usage_from("openai", CHAT) == CHAT_USAGE


@pytest.mark.parametrize(("usage", "usual"), [
    (CHAT["usage"], True),
    ({"prompt_tokens": 10, "completion_tokens": 2}, True),
    ({"prompt_tokens": 100, "completion_tokens": 5,
      "prompt_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 20}}, True),
    ({"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": None}, False),
    ({"prompt_tokens": 10, "completion_tokens": 2,
      "prompt_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 8}}, False),
    ({"prompt_tokens": 10, "completion_tokens": 2,
      "completion_tokens_details": {"audio_tokens": 3}}, False),
    ({"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 4}, False),
    ({"prompt_tokens": -1, "completion_tokens": 2}, False),
    ({"prompt_tokens": True, "completion_tokens": 2}, False),
    ({"prompt_tokens": 10.0, "completion_tokens": 2}, False),
    ({"completion_tokens": 2}, False),
])
def test_the_usual_chat_usage_read_in_place_is_what_the_careful_reader_reads(
        usage: dict[str, Any], usual: bool) -> None:
    quick = _usual_chat_usage(usage, "default")
    try:
        careful: Usage | None = _chat_usage(usage, "default")
    except (ProviderResponseError, UnknownModelError):
        careful = None  # the careful reader says what is wrong; the quick one leaves it to it
    assert (quick is not None) == usual
    assert quick is None or quick == careful


def test_chat_completion_sdk_object_reads_like_the_dict() -> None:
    completion = ChatCompletion.model_validate(CHAT)
    assert usage_from("openai", completion) == CHAT_USAGE
    assert usage_from("openai", completion.usage, endpoint="chat") == Usage(
        input_tokens=176, cache_read_tokens=1024, output_tokens=300, reasoning_tokens=256)


def test_chat_cache_writes_are_part_of_prompt_tokens() -> None:
    body = {"usage": {"prompt_tokens": 5000, "completion_tokens": 10,
                      "prompt_tokens_details": {"cached_tokens": 1000,
                                                "cache_write_tokens": 3000}}}
    assert usage_from("openai", body) == Usage(input_tokens=1000, cache_read_tokens=1000,
                                               cache_write_tokens={"30m": 3000},
                                               output_tokens=10)


def test_cache_writes_reported_outside_the_total_never_make_input_negative() -> None:
    body = {"usage": {"prompt_tokens": 1000, "completion_tokens": 10,
                      "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 900}}}
    assert usage_from("openai", body).input_tokens == 400


def test_responses_usage_splits_cache_writes_by_ttl_and_counts_web_searches() -> None:
    assert usage_from("openai", RESPONSE) == RESPONSE_USAGE
    assert usage_from("openai", Response.model_validate(RESPONSE)) == RESPONSE_USAGE


def test_responses_cache_writes_without_a_split_are_30_minute_writes() -> None:
    body = {"usage": {"input_tokens": 100, "output_tokens": 1,
                      "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 60}}}
    assert usage_from("openai", body).cache_write_tokens == {"30m": 60}


def test_embeddings_have_input_only() -> None:
    expected = Usage(input_tokens=5)
    assert usage_from("openai", EMBEDDINGS) == expected
    assert usage_from("openai", CreateEmbeddingResponse.model_validate(EMBEDDINGS)) == expected
    assert usage_from("openai", {"prompt_tokens": 5, "total_tokens": 5},
                      endpoint="/v1/embeddings") == expected


def test_final_stream_chunk_and_terminal_event_carry_usage() -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5.5",
             "service_tier": "default", "choices": [], "usage": CHAT["usage"]}
    assert usage_from("openai", chunk) == CHAT_USAGE
    assert usage_from("openai", ChatCompletionChunk.model_validate(chunk)) == CHAT_USAGE
    event = {"type": "response.completed", "sequence_number": 9, "response": RESPONSE}
    assert usage_from("openai", event) == RESPONSE_USAGE


def test_batch_output_lines_are_billed_at_batch_rates_and_failures_are_free() -> None:
    line = {"id": "batch_req_1", "custom_id": "r1", "error": None,
            "response": {"status_code": 200, "request_id": "x", "body": CHAT}}
    assert usage_from("openai", line).service_tier == "batch"
    assert usage_from("openai", line).input_tokens == 176
    failed = {"id": "batch_req_2", "custom_id": "r2", "response": None,
              "error": {"code": "server_error", "message": "boom"}}
    assert usage_from("openai", failed) == Usage(service_tier="batch")


@pytest.mark.parametrize(("body", "field"), [
    ({"id": "x", "model": "gpt-5"}, "usage"),
    ({"usage": None}, "usage"),
    ({"usage": {"completion_tokens": 3}}, "usage.prompt_tokens"),
    ({"usage": {"prompt_tokens": "12", "completion_tokens": 3}}, "usage.prompt_tokens"),
    ({"usage": {"prompt_tokens": 12, "completion_tokens": -3}}, "usage.completion_tokens"),
    ({"usage": {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": 7}},
     "usage.prompt_tokens_details"),
    ({"usage": {"prompt_tokens": 12, "completion_tokens": 3,
                "prompt_tokens_details": {"cached_tokens": 20}}},
     "usage.prompt_tokens_details.cached_tokens"),
    ({"usage": {"input_tokens": 12}}, "usage.output_tokens"),
    ({"custom_id": "r", "response": {"status_code": 200}}, "response.body"),
])
def test_missing_or_malformed_usage_names_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(ProviderResponseError) as caught:
        usage_from("openai", body)
    assert caught.value.field == field
    assert caught.value.provider == "openai"


def test_something_that_is_not_a_response_is_refused() -> None:
    with pytest.raises(ProviderResponseError, match="expected a response"):
        usage_from("openai", 42)


def _chunk(delta: dict[str, Any] | None, finish: str | None = None,
           usage: dict[str, Any] | None = None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "c", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-5.5-2026-04-23", "choices": choices, "usage": usage}


def test_chat_stream_reader_takes_usage_from_the_last_chunk() -> None:
    reader = stream_reader("openai", "chat.completions")
    reader.feed(None, _chunk({"role": "assistant", "content": ""}))
    reader.feed(None, _chunk({"content": "Hello"}))
    reader.feed(None, _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\""}}]}))
    assert reader.usage() is None and not reader.complete
    reader.feed(None, _chunk({}, finish="stop"))
    reader.feed(None, _chunk(None, usage=CHAT["usage"]))
    assert reader.complete
    assert reader.usage() == Usage(input_tokens=176, cache_read_tokens=1024, output_tokens=300,
                                   reasoning_tokens=256)
    assert reader.model == "gpt-5.5-2026-04-23"
    assert reader.output_text() == 'Hello{"a"'
    assert (reader.output_chars, reader.output_events) == (9, 2)


def test_chat_stream_without_include_usage_completes_without_usage() -> None:
    reader = stream_reader("openai", "/v1/chat/completions")
    reader.feed(None, _chunk({"content": "Hi"}))
    reader.feed(None, _chunk({}, finish="stop"))
    assert reader.complete and reader.usage() is None


def test_responses_stream_reader_reads_the_terminal_event() -> None:
    reader = stream_reader("openai", "responses")
    created = {**RESPONSE, "status": "in_progress", "usage": None}
    reader.feed("response.created", {"type": "response.created", "response": created})
    reader.feed("response.output_text.delta", {"type": "response.output_text.delta",
                                               "delta": "hel", "sequence_number": 3})
    reader.feed(None, {"type": "response.output_text.delta", "delta": "lo"})
    assert reader.usage() is None and not reader.complete
    reader.feed("response.incomplete", {"type": "response.incomplete", "response": RESPONSE})
    assert reader.complete
    assert reader.usage() == RESPONSE_USAGE
    assert reader.model == "gpt-6.2-sol"
    assert reader.output_text() == "hello"


def test_a_failed_response_without_usage_completes_with_none() -> None:
    reader = stream_reader("openai", "responses")
    reader.feed("response.failed", {"type": "response.failed",
                                    "response": {**RESPONSE, "usage": None}})
    assert reader.complete and reader.usage() is None


def test_embeddings_do_not_stream() -> None:
    with pytest.raises(ProviderResponseError):
        stream_reader("openai", "embeddings")
