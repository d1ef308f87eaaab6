"""The choke point's stream paths through the real SDKs: malformed usage, cut and dropped
streams, models without a known tokenizer. Each stream ends in exactly one record."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

import spendguard
from tests.provider_bodies import (
    anthropic_stream_events,
    chat_stream_events,
    sse,
)
from tests.transport_helpers import (
    ANTHROPIC_MESSAGES,
    EVENT_STREAM,
    MESSAGES,
    OPENAI_CHAT,
    fixture_ledger_url,  # noqa: F401 - a fixture: pytest finds it here
    records,
)

# docs/budgets.md: a stream cut short is charged the received output plus at most
# 1,024 tokens (what the provider may still generate after the disconnect).
STREAM_TAIL_TOKENS = 1024


def _stream_with(events: list[tuple[str | None, Any]], **usage: Any) -> bytes:
    for _, data in events:
        if isinstance(data, dict) and data.get("type") == "message_delta":
            data["usage"] = {**data["usage"], **usage}
    return sse(events)


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_an_anthropic_stream_with_malformed_usage_closes_normally_and_is_recorded_once(
        ledger_url: str, is_async: bool) -> None:
    respx.post(ANTHROPIC_MESSAGES).respond(
        200, content=_stream_with(anthropic_stream_events(), output_tokens="lots"),
        headers=EVENT_STREAM)
    b = spendguard.Budget("1", ledger=ledger_url)
    request: dict[str, Any] = {"model": "claude-haiku-4-5", "messages": MESSAGES,
                               "max_tokens": 100, "stream": True}
    if is_async:
        async def go() -> list[Any]:
            client = spendguard.AsyncAnthropic(api_key="k", budget=b)
            stream = await client.messages.create(**request)
            async with stream:
                return [event async for event in stream]
        events = asyncio.run(go())
    else:
        stream = spendguard.Anthropic(api_key="k", budget=b).messages.create(**request)
        with stream:
            events = list(stream)
    assert events[-1].type == "message_stop"
    [record] = records(ledger_url)
    assert (record.status, record.actual_usd) == ("usage_unreadable", record.estimated_usd)
    assert b.reserved == 0


@respx.mock
def test_an_openai_stream_follows_the_same_rule_as_a_body_for_malformed_usage(
        ledger_url: str) -> None:
    events = chat_stream_events()
    usage_chunk = events[-2][1]
    assert isinstance(usage_chunk, dict)
    usage_chunk["usage"] = {**usage_chunk["usage"], "completion_tokens": -3}
    respx.post(OPENAI_CHAT).respond(200, content=sse(events), headers=EVENT_STREAM)
    b = spendguard.Budget("1", ledger=ledger_url)
    stream = spendguard.OpenAI(api_key="k", budget=b).chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, max_tokens=100, stream=True,
        stream_options={"include_usage": True})
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    [record] = records(ledger_url)
    assert (record.status, record.actual_usd) == ("usage_unreadable", record.estimated_usd)


def _slow_events(events: list[tuple[str | None, Any]]) -> Any:
    class EventByEvent(httpx.SyncByteStream, httpx.AsyncByteStream):
        def __iter__(self) -> Any:
            for event in events:
                yield sse([event])

        async def __aiter__(self) -> Any:
            for event in events:
                yield sse([event])

    return EventByEvent()


@respx.mock
async def test_an_abandoned_async_stream_is_settled_with_the_tail_bound(ledger_url: str) -> None:
    respx.post(OPENAI_CHAT).respond(200, stream=_slow_events(chat_stream_events(words=40)),
                                    headers=EVENT_STREAM)
    b = spendguard.Budget("1", ledger=ledger_url)
    client = spendguard.AsyncOpenAI(api_key="k", budget=b)
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, max_tokens=4000, stream=True,
        stream_options={"include_usage": True})
    seen = 0
    async for _ in stream:
        seen += 1
        if seen == 5:
            break
    await stream.close()
    [record] = records(ledger_url)
    assert (record.status, record.usage_estimated) == ("stream_abandoned", True)
    assert record.tokens["output"] >= STREAM_TAIL_TOKENS
    assert b.reserved == 0
    assert 0 < b.spent < record.estimated_usd


@respx.mock
def test_a_stream_dropped_without_closing_is_settled_when_collected(ledger_url: str) -> None:
    respx.post(ANTHROPIC_MESSAGES).respond(
        200, stream=_slow_events(anthropic_stream_events(words=30)), headers=EVENT_STREAM)
    b = spendguard.Budget("1", ledger=ledger_url)
    stream = spendguard.Anthropic(api_key="k", budget=b).messages.create(
        model="claude-haiku-4-5", messages=MESSAGES, max_tokens=50, stream=True)
    next(iter(stream))
    del stream
    gc.collect()
    [record] = records(ledger_url)
    assert record.status == "stream_abandoned"
    assert record.tokens["output"] == 50  # received + tail, capped at the request's max_tokens
    assert b.reserved == 0


@respx.mock
def test_an_async_stream_dropped_without_closing_is_settled_when_collected(
        ledger_url: str) -> None:
    respx.post(ANTHROPIC_MESSAGES).respond(
        200, stream=_slow_events(anthropic_stream_events(words=30)), headers=EVENT_STREAM)
    b = spendguard.Budget("1", ledger=ledger_url)

    async def start_and_drop() -> None:
        client = spendguard.AsyncAnthropic(api_key="k", budget=b)
        stream = await client.messages.create(model="claude-haiku-4-5", messages=MESSAGES,
                                              max_tokens=50, stream=True)
        await stream.__aiter__().__anext__()

    asyncio.run(start_and_drop())
    gc.collect()
    [record] = records(ledger_url)
    assert (record.status, record.tokens["output"]) == ("stream_abandoned", 50)
    assert b.reserved == 0


PRICE_FILE = """
provider = "openai"

[models."my-finetune"]
usd_per_million = { input = 3, cache_read = 0.30, output = 12 }
context_window = 128000
max_output_tokens = 16384
source = "test"
as_of = 2026-11-01
"""


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_an_untokenized_model_streamed_without_usage_settles_with_a_stated_bound(
        ledger_url: str, tmp_path: Path, is_async: bool) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(PRICE_FILE)
    table = spendguard.PriceTable.bundled().with_overrides(path)
    events = chat_stream_events(model="my-finetune", words=3, usage=False)
    respx.post(OPENAI_CHAT).respond(200, content=sse(events), headers=EVENT_STREAM)
    b = spendguard.Budget("1", ledger=ledger_url)
    request: dict[str, Any] = {"model": "my-finetune", "messages": MESSAGES, "max_tokens": 100,
                               "stream": True}
    if is_async:
        async def go() -> str:
            client = spendguard.AsyncOpenAI(api_key="k", budget=b, prices=table)
            stream = await client.chat.completions.create(**request)
            return "".join([c.choices[0].delta.content or "" async for c in stream])
        text = asyncio.run(go())
    else:
        stream = spendguard.OpenAI(api_key="k", budget=b, prices=table).chat.completions.create(
            **request)
        text = "".join(c.choices[0].delta.content or "" for c in stream)
        stream.close()
    assert text == " word0 word1 word2"
    [record] = records(ledger_url)
    assert (record.status, record.usage_estimated) == ("ok", True)
    assert record.tokens["output"] == len(text.encode())  # at least one byte per token
    assert b.reserved == 0 and b.spent > 0


def _one_chunk(events: list[tuple[str | None, Any]]) -> Any:
    """The whole stream in one chunk, as a fast provider's reply arrives over loopback."""
    class OneChunk(httpx.SyncByteStream, httpx.AsyncByteStream):
        def __iter__(self) -> Any:
            yield sse(events)

        async def __aiter__(self) -> Any:
            yield sse(events)

    return OneChunk()


@pytest.mark.parametrize("ending", ["closed", "dropped"])
@respx.mock
def test_a_chunk_the_caller_stopped_at_is_metered_when_the_stream_ends(
        ledger_url: str, ending: str) -> None:
    # The caller has each chunk before the meter reads it: the one it stops at is still read.
    respx.post(OPENAI_CHAT).respond(
        200, stream=_one_chunk(chat_stream_events(words=5, prompt_tokens=20)),
        headers=EVENT_STREAM)
    b = spendguard.Budget("1", ledger=ledger_url)
    stream = spendguard.OpenAI(api_key="k", budget=b).chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, max_tokens=4000, stream=True,
        stream_options={"include_usage": True})
    next(iter(stream))
    if ending == "closed":
        stream.close()
    else:
        del stream
        gc.collect()
    [record] = records(ledger_url)
    assert (record.status, record.usage_estimated, record.tokens["input"]) == ("ok", False, 20)
    assert b.reserved == 0


@respx.mock
async def test_a_chunk_an_async_caller_stopped_at_is_metered_when_the_stream_closes(
        ledger_url: str) -> None:
    respx.post(OPENAI_CHAT).respond(
        200, stream=_one_chunk(chat_stream_events(words=5, prompt_tokens=20)),
        headers=EVENT_STREAM)
    b = spendguard.Budget("1", ledger=ledger_url)
    stream = await spendguard.AsyncOpenAI(api_key="k", budget=b).chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, max_tokens=4000, stream=True,
        stream_options={"include_usage": True})
    await stream.__aiter__().__anext__()
    await stream.close()
    [record] = records(ledger_url)
    assert (record.status, record.usage_estimated, record.tokens["input"]) == ("ok", False, 20)
    assert b.reserved == 0


@respx.mock
def test_a_chunk_an_async_caller_stopped_at_is_metered_when_the_stream_is_collected(
        ledger_url: str) -> None:
    respx.post(OPENAI_CHAT).respond(
        200, stream=_one_chunk(chat_stream_events(words=5, prompt_tokens=20)),
        headers=EVENT_STREAM)
    b = spendguard.Budget("1", ledger=ledger_url)

    async def start_and_drop() -> None:
        stream = await spendguard.AsyncOpenAI(api_key="k", budget=b).chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, max_tokens=4000, stream=True,
            stream_options={"include_usage": True})
        await stream.__aiter__().__anext__()

    asyncio.run(start_and_drop())
    gc.collect()
    [record] = records(ledger_url)
    assert (record.status, record.usage_estimated, record.tokens["input"]) == ("ok", False, 20)
    assert b.reserved == 0
