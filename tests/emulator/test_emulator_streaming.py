"""Emulated streams: the SDKs' stream helpers accumulate them, with the final usage."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import openai
import pytest

from spendguard.testing import Emulator, Reply, ToolCall
from tests.sdk_errors import ANTHROPIC_STREAM_CUT, assert_sdk_stream_cut

USER: Any = [{"role": "user", "content": "Stream me something."}]


def test_chat_stream_helper_gets_the_same_usage_as_a_plain_call() -> None:
    emulator = Emulator()
    client = emulator.openai_client()
    plain = client.chat.completions.create(model="gpt-5.5", messages=USER)
    with client.chat.completions.stream(model="gpt-5.5", messages=USER,
                                        stream_options={"include_usage": True}) as stream:
        final = stream.get_final_completion()
    assert final.usage == plain.usage
    assert final.choices[0].message.content == plain.choices[0].message.content


def test_chat_stream_without_include_usage_has_no_usage_chunk() -> None:
    client = Emulator().openai_client()
    chunks = list(client.chat.completions.create(model="gpt-5.5", messages=USER, stream=True))
    assert all(chunk.usage is None for chunk in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"
    with_usage = list(client.chat.completions.create(
        model="gpt-5.5", messages=USER, stream=True, stream_options={"include_usage": True}))
    assert with_usage[-1].choices == []
    assert with_usage[-1].usage is not None
    assert all(chunk.usage is None for chunk in with_usage[:-1])


def test_chat_stream_helper_accumulates_scripted_tool_calls() -> None:
    emulator = Emulator(respond=lambda prompt: Reply(
        tool_calls=[ToolCall("get_weather", {"city": "Lima", "unit": "celsius"})]))
    with emulator.openai_client().chat.completions.stream(model="gpt-5.5",
                                                          messages=USER) as stream:
        final = stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "get_weather"
    assert call.function.arguments == '{"city": "Lima", "unit": "celsius"}'


def test_responses_stream_helper_ends_with_completed_and_usage() -> None:
    client = Emulator().openai_client()
    plain = client.responses.create(model="gpt-5.5", input="hello")
    with client.responses.stream(model="gpt-5.5", input="hello") as stream:
        events = [event.type for event in stream]
        final = stream.get_final_response()
    assert events[0] == "response.created"
    assert events[-1] == "response.completed"
    assert final.usage is not None and plain.usage is not None
    assert final.usage.output_tokens == plain.usage.output_tokens
    assert final.output_text == plain.output_text


def test_responses_stream_sequence_numbers_count_up_from_zero() -> None:
    stream = Emulator().openai_client().responses.create(model="gpt-5.5", input="hi",
                                                         stream=True)
    numbers = [event.sequence_number for event in stream]
    assert numbers == list(range(len(numbers)))


def test_responses_stream_with_a_function_call_is_accepted_by_the_helper() -> None:
    emulator = Emulator(respond=lambda prompt: Reply(text="Let me look.",
                                                     tool_calls=[ToolCall("search", {"q": "x"})]))
    with emulator.openai_client().responses.stream(model="gpt-5.5", input="hi") as stream:
        final = stream.get_final_response()
    assert [item.type for item in final.output] == ["message", "function_call"]
    assert final.output[1].arguments == '{"q": "x"}'  # type: ignore[union-attr]


def test_capped_responses_stream_ends_incomplete() -> None:
    stream = Emulator(reply_tokens=200).openai_client().responses.create(
        model="gpt-5.5", input="hi", max_output_tokens=5, stream=True)
    last = list(stream)[-1]
    assert last.type == "response.incomplete"
    assert last.response.usage is not None
    assert last.response.usage.output_tokens == 5


def test_anthropic_stream_helper_merges_start_and_delta_usage() -> None:
    client = Emulator().anthropic_client()
    plain = client.messages.create(model="claude-sonnet-5", max_tokens=200, messages=USER)
    with client.messages.stream(model="claude-sonnet-5", max_tokens=200,
                                messages=USER) as stream:
        final = stream.get_final_message()
    assert final.usage == plain.usage
    assert final.content[0].text == plain.content[0].text  # type: ignore[union-attr]


def test_anthropic_raw_stream_event_order() -> None:
    stream = Emulator().anthropic_client().messages.create(
        model="claude-sonnet-5", max_tokens=50, messages=USER, stream=True)
    kinds = [event.type for event in stream]
    # the SDK swallows the "ping" event that follows the first content_block_start
    assert kinds[:3] == ["message_start", "content_block_start", "content_block_delta"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]


def test_anthropic_stream_helper_accumulates_tool_use_and_thinking() -> None:
    emulator = Emulator(respond=lambda prompt: Reply(
        text="Calling.", tool_calls=[ToolCall("calc", {"x": 2})], reasoning_tokens=40))
    with emulator.anthropic_client().messages.stream(model="claude-sonnet-5", max_tokens=500,
                                                     messages=USER) as stream:
        final = stream.get_final_message()
    assert [block.type for block in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[2].input == {"x": 2}  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"


def test_a_broken_stream_drops_the_connection_mid_body() -> None:
    emulator = Emulator()
    emulator.break_next_stream(after_events=3)
    events = []
    with pytest.raises(ANTHROPIC_STREAM_CUT) as cut:
        for event in emulator.anthropic_client().messages.create(
                model="claude-sonnet-5", max_tokens=50, messages=USER, stream=True):
            events.append(event.type)
    assert_sdk_stream_cut(cut)
    assert events == ["message_start", "content_block_start"]  # the third, a ping, is hidden
    assert emulator.requests[-1].fault == "break_stream"
    # the cut is used up: the next stream is whole
    with emulator.anthropic_client().messages.stream(model="claude-sonnet-5", max_tokens=50,
                                                     messages=USER) as stream:
        assert stream.get_final_message().usage.output_tokens > 0


def test_a_broken_chat_stream_never_delivers_the_usage_chunk() -> None:
    emulator = Emulator()
    emulator.break_next_stream(after_events=2, path="/v1/chat/completions")
    received = []
    with pytest.raises(openai.APIConnectionError):  # the OpenAI SDK wraps the dropped stream
        for chunk in emulator.openai_client().chat.completions.create(
                model="gpt-5.5", messages=USER, stream=True,
                stream_options={"include_usage": True}):
            received.append(chunk)
    assert len(received) == 2
    assert all(chunk.usage is None for chunk in received)


def test_stream_pacing_uses_the_injected_sleep() -> None:
    naps: list[float] = []

    async def async_nap(seconds: float) -> None:
        naps.append(seconds)

    emulator = Emulator(stream_interval_s=0.01, latency_s=0.2, sleep=naps.append,
                        async_sleep=async_nap)
    chunks = list(emulator.openai_client().chat.completions.create(
        model="gpt-5.5", messages=USER, stream=True))
    assert naps[0] == 0.2
    assert naps[1:] == [0.01] * (len(chunks))  # between frames; [DONE] is a frame too

    async def run() -> int:
        client = emulator.async_anthropic_client()
        async with client.messages.stream(model="claude-sonnet-5", max_tokens=30,
                                          messages=USER) as stream:
            message = await stream.get_final_message()
        return message.usage.output_tokens

    naps.clear()
    assert asyncio.run(run()) > 0
    assert naps[0] == 0.2 and set(naps[1:]) == {0.01}


def test_async_streams_match_sync_streams() -> None:
    async def run() -> tuple[int, int]:
        emulator = Emulator()
        openai_client = emulator.async_openai_client()
        async with openai_client.chat.completions.stream(
                model="gpt-5.5", messages=USER,
                stream_options={"include_usage": True}) as chat_stream:
            chat = await chat_stream.get_final_completion()
        anthropic_client = emulator.async_anthropic_client()
        async with anthropic_client.messages.stream(model="claude-sonnet-5", max_tokens=99,
                                                    messages=USER) as message_stream:
            message = await message_stream.get_final_message()
        assert chat.usage is not None
        return chat.usage.completion_tokens, message.usage.output_tokens

    emulator = Emulator()
    with emulator.openai_client().chat.completions.stream(
            model="gpt-5.5", messages=USER, stream_options={"include_usage": True}) as stream:
        chat = stream.get_final_completion()
    message = emulator.anthropic_client().messages.create(model="claude-sonnet-5",
                                                          max_tokens=99, messages=USER)
    assert chat.usage is not None
    assert asyncio.run(run()) == (chat.usage.completion_tokens, message.usage.output_tokens)


def test_anthropic_sdk_accepts_the_emulator_transport_via_its_own_http_client() -> None:
    emulator = Emulator()
    client = anthropic.Anthropic(api_key="x", base_url="https://api.anthropic.com",
                                 http_client=anthropic.DefaultHttpxClient(
                                     transport=emulator.transport()))
    with client.messages.stream(model="claude-sonnet-5", max_tokens=10,
                                messages=USER) as stream:
        assert stream.get_final_message().usage.output_tokens <= 10
