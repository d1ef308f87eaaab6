"""Anthropic usage: messages, cache writes by TTL, server tools, batches and streams.

The shapes are the ones shared/research/provider-facts.md §2.4 proved against anthropic 2.14.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message
from anthropic.types.beta import BetaMessage

from spendguard import ConfigError, ProviderResponseError, Usage, stream_reader, usage_from

MESSAGE: dict[str, Any] = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
    "content": [{"type": "text", "text": "hi", "citations": None}],
    "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 50, "output_tokens": 120, "cache_creation_input_tokens": 2048,
              "cache_read_input_tokens": 4096,
              "cache_creation": {"ephemeral_5m_input_tokens": 2048, "ephemeral_1h_input_tokens": 0},
              "server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 0},
              "service_tier": "standard", "inference_geo": "global", "speed": "standard",
              "output_tokens_details": {"thinking_tokens": 40}},
}
# input_tokens already excludes the cache: nothing is subtracted.
MESSAGE_USAGE = Usage(input_tokens=50, cache_read_tokens=4096, cache_write_tokens={"5m": 2048},
                      output_tokens=120, reasoning_tokens=40, tool_requests={"web_search": 1},
                      service_tier="standard", speed="standard", inference_geo="global")


def _usage(**fields: Any) -> dict[str, Any]:
    return {"usage": {"input_tokens": 10, "output_tokens": 5, **fields}}


def test_message_input_tokens_exclude_cache_reads_and_writes() -> None:
    assert usage_from("anthropic", MESSAGE) == MESSAGE_USAGE


def test_sdk_message_reads_like_the_dict() -> None:
    assert usage_from("anthropic", Message.model_validate(MESSAGE)) == MESSAGE_USAGE
    assert usage_from("anthropic", Message.model_validate(MESSAGE).usage) == MESSAGE_USAGE


def test_cache_writes_split_by_ttl() -> None:
    body = _usage(cache_creation_input_tokens=300,
                  cache_creation={"ephemeral_5m_input_tokens": 100,
                                  "ephemeral_1h_input_tokens": 200})
    assert usage_from("anthropic", body).cache_write_tokens == {"5m": 100, "1h": 200}


def test_a_bare_cache_creation_total_is_a_five_minute_write() -> None:
    body = _usage(cache_creation_input_tokens=700)
    assert usage_from("anthropic", body).cache_write_tokens == {"5m": 700}


def test_fast_speed_us_geography_and_priority_tier_are_kept() -> None:
    usage = usage_from("anthropic", _usage(speed="fast", inference_geo="us",
                                           service_tier="priority"))
    assert (usage.speed, usage.inference_geo, usage.service_tier) == ("fast", "us", "priority")


def test_compaction_iterations_are_added_to_the_top_level_counts() -> None:
    # The API leaves a compaction's tokens out of the top-level fields, but bills them.
    body = _usage(iterations=[
        {"type": "compaction", "input_tokens": 1000, "output_tokens": 300,
         "cache_read_input_tokens": 50, "cache_creation_input_tokens": 20},
        {"type": "message", "input_tokens": 10, "output_tokens": 5,
         "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
    ])
    assert usage_from("anthropic", body) == Usage(
        input_tokens=1010, cache_read_tokens=50, cache_write_tokens={"5m": 20}, output_tokens=305)
    beta = BetaMessage.model_validate({**MESSAGE, "usage": {**MESSAGE["usage"], **body["usage"]}})
    assert usage_from("anthropic", beta).input_tokens == 1010


def test_batch_results_are_billed_at_batch_rates_and_failures_are_free() -> None:
    message = {**MESSAGE, "usage": {**MESSAGE["usage"], "service_tier": "batch"}}
    line = {"custom_id": "r1", "result": {"type": "succeeded", "message": message}}
    assert usage_from("anthropic", line).service_tier == "batch"
    assert usage_from("anthropic", line).cache_read_tokens == 4096
    for result in ({"type": "errored", "error": {"type": "error"}}, {"type": "canceled"},
                   {"type": "expired"}):
        assert usage_from("anthropic", {"custom_id": "r", "result": result}) == Usage(
            service_tier="batch")


@pytest.mark.parametrize(("body", "field"), [
    ({"id": "msg", "type": "message"}, "usage"),
    ({"usage": None}, "usage"),
    ({"usage": {"output_tokens": 3}}, "usage.input_tokens"),
    ({"usage": {"input_tokens": 3, "output_tokens": "3"}}, "usage.output_tokens"),
    (_usage(cache_creation=[1]), "usage.cache_creation"),
    (_usage(server_tool_use={"web_search_requests": -1}),
     "usage.server_tool_use.web_search_requests"),
    ({"custom_id": "r", "result": {"type": "succeeded"}}, "result.message"),
])
def test_missing_or_malformed_usage_names_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(ProviderResponseError) as caught:
        usage_from("anthropic", body)
    assert caught.value.field == field
    assert caught.value.provider == "anthropic"


def _stream_start() -> list[tuple[str, dict[str, Any]]]:
    start_usage = {"input_tokens": 50, "output_tokens": 1, "cache_creation_input_tokens": 2048,
                   "cache_read_input_tokens": 4096,
                   "cache_creation": {"ephemeral_5m_input_tokens": 0,
                                      "ephemeral_1h_input_tokens": 2048},
                   "service_tier": "standard"}
    message = {**MESSAGE, "model": "claude-sonnet-4-5-20250929", "content": [],
               "stop_reason": None, "usage": start_usage}
    return [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "thinking", "thinking": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "thinking_delta", "thinking": "Hmm"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "text_delta", "text": "Hello"}}),
    ]


def test_stream_reader_merges_message_start_with_the_cumulative_delta() -> None:
    reader = stream_reader("anthropic", "messages")
    for name, data in _stream_start():
        reader.feed(name, data)
    reader.feed("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": "end_turn"},
                                  "usage": {"output_tokens": 60}})
    reader.feed("message_delta", {"type": "message_delta", "delta": {},
                                  "usage": {"output_tokens": 120, "input_tokens": None,
                                            "server_tool_use": {"web_search_requests": 1}}})
    reader.feed("message_stop", {"type": "message_stop"})
    assert reader.complete
    assert reader.usage() == Usage(input_tokens=50, cache_read_tokens=4096,
                                   cache_write_tokens={"1h": 2048}, output_tokens=120,
                                   tool_requests={"web_search": 1}, service_tier="standard")
    assert reader.model == "claude-sonnet-4-5-20250929"
    assert reader.output_text() == "HmmHello"
    assert (reader.output_chars, reader.output_events) == (8, 2)


def test_a_stream_cut_after_message_start_still_reports_its_input() -> None:
    reader = stream_reader("anthropic", "/v1/messages")
    for _name, data in _stream_start():
        reader.feed(None, data)  # no `event:` names: the data's type is used
    assert not reader.complete
    usage = reader.usage()
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (50, 4096, 1)


def test_a_stream_without_events_has_no_usage() -> None:
    reader = stream_reader("anthropic", "messages")
    reader.feed("ping", {"type": "ping"})
    assert reader.usage() is None and not reader.complete


def test_unknown_provider_or_endpoint_is_refused() -> None:
    with pytest.raises(ConfigError, match="provider"):
        usage_from("mistral", MESSAGE)
    with pytest.raises(ConfigError, match="endpoint"):
        usage_from("anthropic", MESSAGE, endpoint="/v1/images")
    with pytest.raises(ProviderResponseError):
        stream_reader("anthropic", "chat")
