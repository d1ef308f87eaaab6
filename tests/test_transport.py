"""The choke point's failure paths, through the real SDKs (sync and async) with HTTP mocked.

The rule under test: once a request reached the (mocked) provider it ends in exactly one ledger
record and no open reservation, and the caller gets what the SDK alone would have given.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import uuid
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
import respx

import spendguard
from spendguard.ledger.base import SpendRecord
from spendguard.report import render_text
from spendguard.settling import STREAM_TAIL_TOKENS
from spendguard.thresholds import CallOverrun, ThresholdCrossed
from tests.provider_bodies import (
    anthropic_message,
    anthropic_stream_events,
    chat_completion,
    chat_stream_events,
    sse,
)
from tests.redis_helpers import (
    fixture_redis_prefix,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_url,  # noqa: F401 - a fixture: pytest finds it here
    requires_redis,
)

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_MESSAGES = "https://api.anthropic.com/v1/messages"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]
EVENT_STREAM = {"content-type": "text/event-stream"}


@pytest.fixture
def ledger_url() -> str:
    """A ledger of this test's own (in memory, shared by name; SQLite and Redis are covered by
    the backend test below and the ledger's own contract tests)."""
    return f"memory://transport-{uuid.uuid4().hex}"


def records(url: str) -> list[SpendRecord]:
    return list(spendguard.open_ledger(url).records())


def billed(url: str) -> list[SpendRecord]:
    return [r for r in records(url) if r.status != "released"]


def openai_call(is_async: bool, budget: spendguard.Budget | None, **client: Any) -> Any:
    """One chat completion through the guarded client (or the plain one when budget is None)."""
    request: dict[str, Any] = {"model": "gpt-4o-mini", "messages": MESSAGES, "max_tokens": 100}
    if is_async:
        async def go() -> Any:
            sdk = (openai.AsyncOpenAI(api_key="k", **client) if budget is None
                   else spendguard.AsyncOpenAI(api_key="k", budget=budget, **client))
            return await sdk.chat.completions.create(**request)
        return asyncio.run(go())
    sdk_client = (openai.OpenAI(api_key="k", **client) if budget is None
                  else spendguard.OpenAI(api_key="k", budget=budget, **client))
    return sdk_client.chat.completions.create(**request)


def anthropic_call(is_async: bool, budget: spendguard.Budget | None, **client: Any) -> Any:
    request: dict[str, Any] = {"model": "claude-haiku-4-5", "messages": MESSAGES,
                               "max_tokens": 100}
    if is_async:
        async def go() -> Any:
            sdk = (anthropic.AsyncAnthropic(api_key="k", **client) if budget is None
                   else spendguard.AsyncAnthropic(api_key="k", budget=budget, **client))
            return await sdk.messages.create(**request)
        return asyncio.run(go())
    sdk_client = (anthropic.Anthropic(api_key="k", **client) if budget is None
                  else spendguard.Anthropic(api_key="k", budget=budget, **client))
    return sdk_client.messages.create(**request)


def outcome(call: Any, *args: Any, **kwargs: Any) -> str:
    """What the caller saw: the reply's type, or the exception's."""
    try:
        return type(call(*args, **kwargs)).__name__
    except Exception as exc:
        return f"raised {type(exc).__name__}"


# ---------------------------------------------------------------- before and after sending


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_a_connect_error_before_sending_releases_the_reservation(ledger_url: str,
                                                                 is_async: bool) -> None:
    respx.post(OPENAI_CHAT).mock(side_effect=httpx.ConnectError("refused"))
    b = spendguard.Budget("1", ledger=ledger_url)
    with pytest.raises(openai.APIConnectionError):
        openai_call(is_async, b, max_retries=0)
    [record] = records(ledger_url)
    assert (record.status, record.note) == ("released", "ConnectError")
    assert b.spent == b.reserved == 0


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_a_read_timeout_after_sending_is_charged_its_worst_case(
        ledger_url: str, is_async: bool) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).mock(side_effect=httpx.ReadTimeout("slow"))
    b = spendguard.Budget("1", ledger=ledger_url)
    with pytest.raises(anthropic.APITimeoutError):
        anthropic_call(is_async, b, max_retries=0)  # retries would sleep; each is one attempt
    assert route.call_count == 1
    [lost] = records(ledger_url)
    assert (lost.status, lost.actual_usd, lost.usage_estimated) == ("error", lost.estimated_usd,
                                                                    True)
    assert "ReadTimeout" in (lost.note or "")
    assert b.reserved == 0


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_a_connection_reset_mid_body_is_charged_and_the_sdk_error_reaches_the_caller(
        ledger_url: str, is_async: bool) -> None:
    body = httpx.Response(200, json=chat_completion()).content

    class Reset(httpx.SyncByteStream, httpx.AsyncByteStream):
        def __iter__(self) -> Any:
            yield body[:20]
            raise httpx.ReadError("connection reset by peer")

        async def __aiter__(self) -> Any:
            yield body[:20]
            raise httpx.ReadError("connection reset by peer")

    respx.post(OPENAI_CHAT).respond(200, stream=Reset(),
                                    headers={"content-type": "application/json"})
    b = spendguard.Budget("1", ledger=ledger_url)
    with pytest.raises(openai.APIConnectionError):
        openai_call(is_async, b, max_retries=0)
    [record] = billed(ledger_url)
    assert (record.status, record.actual_usd) == ("error", record.estimated_usd)
    assert b.reserved == 0


# ---------------------------------------------------------------- unreadable usage, bodies


def _anthropic_usage(**changes: Any) -> dict[str, Any]:
    body = anthropic_message(output_tokens=80)  # within the request's max_tokens
    body["usage"].update(changes)
    return body


ANTHROPIC_UNREADABLE = {
    "unknown service tier": _anthropic_usage(service_tier="ultra"),
    "unknown inference_geo": _anthropic_usage(inference_geo="mars"),
    "unknown server tool counter": _anthropic_usage(
        server_tool_use={"code_execution_requests": 2}),
    "token count 10**30": _anthropic_usage(output_tokens=10**30),
    "non-iterable field": _anthropic_usage(iterations=5),
    "no usage": {k: v for k, v in anthropic_message().items() if k != "usage"},
}


@pytest.mark.parametrize(("body", "is_async"), [
    *[pytest.param(body, False, id=name) for name, body in ANTHROPIC_UNREADABLE.items()],
    pytest.param(ANTHROPIC_UNREADABLE["no usage"], True, id="no usage-async"),
    pytest.param(ANTHROPIC_UNREADABLE["token count 10**30"], True, id="10**30-async"),
])
@respx.mock
def test_unreadable_anthropic_usage_returns_the_reply_sent_once_and_charges_the_worst_case(
        ledger_url: str, body: dict[str, Any], is_async: bool,
        caplog: pytest.LogCaptureFixture) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=body)
    b = spendguard.Budget("1", ledger=ledger_url)
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, "spendguard"):
        warnings.simplefilter("error")  # a user's -W error must not fail the paid call
        reply = anthropic_call(is_async, b)
    assert isinstance(reply, anthropic.types.Message)
    assert route.call_count == 1
    [record] = records(ledger_url)
    assert record.status == "usage_unreadable"
    assert record.actual_usd == record.estimated_usd > 0
    assert (record.note or "").startswith("usage unreadable: ")
    assert b.reserved == 0


OPENAI_REPLY = chat_completion(prompt_tokens=10, completion_tokens=50)  # within the worst case
OPENAI_UNREADABLE = {
    "unknown service tier": {**OPENAI_REPLY, "service_tier": "ultra"},
    "token count 10**30": chat_completion(completion_tokens=10**30),
    "malformed details": {**OPENAI_REPLY, "usage": {
        **OPENAI_REPLY["usage"], "prompt_tokens_details": 7}},
    "no usage": {k: v for k, v in OPENAI_REPLY.items() if k != "usage"},
}


@pytest.mark.parametrize(("body", "is_async"), [
    *[pytest.param(body, False, id=name) for name, body in OPENAI_UNREADABLE.items()],
    pytest.param(OPENAI_UNREADABLE["unknown service tier"], True, id="tier-async"),
])
@respx.mock
def test_unreadable_openai_usage_returns_the_reply_and_charges_the_worst_case(
        ledger_url: str, body: dict[str, Any], is_async: bool) -> None:
    route = respx.post(OPENAI_CHAT).respond(200, json=body)
    b = spendguard.Budget("1", ledger=ledger_url)
    reply = openai_call(is_async, b)
    assert reply.choices[0].message.content == "hi"
    assert route.call_count == 1
    [record] = records(ledger_url)
    assert (record.status, record.actual_usd) == ("usage_unreadable", record.estimated_usd)
    assert b.reserved == 0


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=requires_redis)])
@respx.mock
def test_every_ledger_backend_keeps_the_reason_of_an_unreadable_charge(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    url = (f"sqlite:///{tmp_path / 'ledger.db'}" if backend == "sqlite"
           else request.getfixturevalue("redis_url"))
    respx.post(ANTHROPIC_MESSAGES).respond(200, json=_anthropic_usage(output_tokens="many"))
    b = spendguard.Budget("1", ledger=url)
    anthropic_call(False, b)
    [record] = b.ledger.records()
    assert record.status == "usage_unreadable"
    assert "output_tokens" in (record.note or "")


@respx.mock
def test_a_non_string_model_in_the_reply_is_priced_by_the_request_model(ledger_url: str) -> None:
    respx.post(ANTHROPIC_MESSAGES).respond(200, json={**anthropic_message(output_tokens=80),
                                                      "model": 42})
    b = spendguard.Budget("1", ledger=ledger_url)
    anthropic_call(False, b)
    [record] = records(ledger_url)
    # claude-haiku-4-5: 50 in × $1 + 80 out × $5, per million
    assert (record.status, record.actual_usd) == ("ok", Decimal("0.00045"))


def test_an_unreadable_cause_is_logged_once(ledger_url: str,
                                            caplog: pytest.LogCaptureFixture) -> None:
    body = _anthropic_usage(inference_geo="atlantis")
    with respx.mock, caplog.at_level(logging.DEBUG, "spendguard"):
        respx.post(ANTHROPIC_MESSAGES).respond(200, json=body)
        b = spendguard.Budget("1", ledger=ledger_url)
        for _ in range(3):
            anthropic_call(False, b)
    said = [r for r in caplog.records if "could not read usage" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING, logging.DEBUG, logging.DEBUG]
    assert len(records(ledger_url)) == 3


class RawWire(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """A provider sending these exact bytes and headers (nothing decoded on the way)."""

    def __init__(self, body: bytes, headers: dict[str, str]) -> None:
        self.body, self.headers, self.sent = body, headers, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        return httpx.Response(200, headers=self.headers, stream=httpx.ByteStream(self.body))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self.handle_request(request)


@pytest.mark.parametrize("is_async", [False, True])
def test_a_lying_content_encoding_gives_the_sdk_own_outcome_and_one_record_per_attempt(
        ledger_url: str, is_async: bool) -> None:
    wire = RawWire(b'{"not": "gzip"}', {"content-type": "application/json",
                                        "content-encoding": "gzip"})

    def http_client() -> Any:
        return httpx.AsyncClient(transport=wire) if is_async else httpx.Client(transport=wire)

    plain = outcome(openai_call, is_async, None, max_retries=0, http_client=http_client())
    sent_plainly = wire.sent
    b = spendguard.Budget("1", ledger=ledger_url)
    guarded = outcome(openai_call, is_async, b, max_retries=0, http_client=http_client())
    assert guarded == plain
    assert wire.sent - sent_plainly == sent_plainly
    assert [r.status for r in billed(ledger_url)] == ["usage_unreadable"] * sent_plainly
    assert "error" in (billed(ledger_url)[0].note or "")
    assert b.reserved == 0


# ---------------------------------------------------------------- streams


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


# ---------------------------------------------------------------- overrun, warnings


@respx.mock
def test_usage_above_the_worst_case_is_recorded_truthfully_and_reaches_on_warn(
        ledger_url: str) -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion(completion_tokens=10**9))
    heard: list[ThresholdCrossed] = []
    b = spendguard.Budget("10", ledger=ledger_url, on_warn=heard.append)
    reply = openai_call(False, b)
    assert reply.usage is not None
    [record] = records(ledger_url)
    assert record.status == "overrun"
    # 1000 prompt × $0.15 + 10**9 completion × $0.60, per million: what was reported
    assert record.actual_usd == Decimal("600.00015")
    assert "above the reserved worst case" in (record.note or "")
    overruns = [e for e in heard if isinstance(e, CallOverrun)]
    assert len(overruns) == 1
    assert (overruns[0].actual_usd, overruns[0].spent_usd) == (record.actual_usd, b.spent)
    report = spendguard.report_spend(ledger_url)
    assert (report.overrun_calls, report.overrun_usd) == (1, record.actual_usd)
    assert "on 1 call that cost more than the worst case reserved" in render_text(report)


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_a_budget_warning_under_w_error_leaves_the_paid_call_returned_and_sent_once(
        ledger_url: str, is_async: bool, caplog: pytest.LogCaptureFixture) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message(
        output_tokens=100))
    b = spendguard.Budget("0.001", ledger=ledger_url, warn_at="0.1")
    with warnings.catch_warnings(), caplog.at_level(logging.ERROR, "spendguard.budget"):
        warnings.simplefilter("error")
        reply = anthropic_call(is_async, b)
    assert isinstance(reply, anthropic.types.Message)
    assert route.call_count == 1
    assert any("BudgetWarning" in (r.exc_text or "") for r in caplog.records)
    assert b.spent == Decimal("0.00055")


@respx.mock
def test_an_on_warn_that_raises_does_not_fail_or_repeat_the_call(ledger_url: str) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())

    def explode(event: ThresholdCrossed) -> None:
        raise RuntimeError("pager is down")

    b = spendguard.Budget("0.001", ledger=ledger_url, warn_at="0.1", on_warn=explode)
    anthropic_call(False, b)
    assert route.call_count == 1
    assert len(records(ledger_url)) == 1


# ---------------------------------------------------------------- proxy mounts


@pytest.mark.parametrize("is_async", [False, True])
def test_requests_through_a_proxy_mount_are_guarded_on_every_path(ledger_url: str,
                                                                  is_async: bool) -> None:
    replies: Any = iter([httpx.Response(200, json=chat_completion(prompt_tokens=10,
                                                                  completion_tokens=5)),
                         httpx.ReadTimeout("proxy timed out")])

    def proxy(request: httpx.Request) -> httpx.Response:
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        assert isinstance(reply, httpx.Response)
        return reply

    mount = {"https://api.openai.com": httpx.MockTransport(proxy)}
    b = spendguard.Budget("1", ledger=ledger_url)
    for _ in range(2):
        http_client: Any = (httpx.AsyncClient(mounts=mount) if is_async
                            else httpx.Client(mounts=mount))
        outcome(openai_call, is_async, b, http_client=http_client, max_retries=0)
    assert [r.status for r in records(ledger_url)] == ["ok", "error"]
    assert b.reserved == 0
