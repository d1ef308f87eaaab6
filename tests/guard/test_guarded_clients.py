"""The guarded drop-in clients, through the real SDKs with their HTTP mocked by respx."""

from __future__ import annotations

import asyncio
import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
import respx

import spendguard
from tests.provider_bodies import (
    anthropic_message,
    anthropic_stream_events,
    chat_completion,
    chat_stream_events,
    sse,
)
from tests.sdk_errors import ANTHROPIC_STREAM_CUT, assert_sdk_stream_cut

# docs/budgets.md: a stream cut short is charged the received output plus at most
# 1,024 tokens (what the provider may still generate after the disconnect).
STREAM_TAIL_TOKENS = 1024
OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_MESSAGES = "https://api.anthropic.com/v1/messages"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def budget(limit: str, ledger_url: str, **kwargs: Any) -> spendguard.Budget:
    return spendguard.Budget(limit, ledger=ledger_url, **kwargs)


def test_guarded_clients_are_instances_of_the_official_clients() -> None:
    assert isinstance(spendguard.OpenAI(api_key="k"), openai.OpenAI)
    assert isinstance(spendguard.AsyncOpenAI(api_key="k"), openai.AsyncOpenAI)
    assert isinstance(spendguard.Anthropic(api_key="k"), anthropic.Anthropic)
    assert isinstance(spendguard.AsyncAnthropic(api_key="k"), anthropic.AsyncAnthropic)


@respx.mock
def test_a_call_settles_at_its_actual_cost(ledger_url: str) -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion(
        prompt_tokens=1000, cached_tokens=200, completion_tokens=500))
    b = budget("1", ledger_url)
    client = spendguard.OpenAI(api_key="sk-test", budget=b)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES,
                                           max_tokens=600)
    assert reply.choices[0].message.content == "hi"
    # gpt-4o-mini: 800 uncached × $0.15 + 200 cached × $0.075 + 500 out × $0.60, per million
    assert b.spent == Decimal("0.000435")
    assert b.reserved == 0


@respx.mock
def test_a_refused_openai_call_sends_nothing(ledger_url: str) -> None:
    route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    client = spendguard.OpenAI(api_key="sk-test", budget=budget("0.0001", ledger_url))
    with pytest.raises(spendguard.BudgetExceeded) as refused:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_tokens=4000)
    assert route.call_count == 0
    assert refused.value.limit_usd == Decimal("0.0001")
    assert refused.value.estimate_usd > Decimal("0.0001")


@respx.mock
def test_a_refused_anthropic_call_sends_nothing_and_is_not_retried(ledger_url: str) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())
    client = spendguard.Anthropic(api_key="sk-ant-test", budget=budget("0.0001", ledger_url))
    with pytest.raises(spendguard.BudgetExceeded):
        client.messages.create(model="claude-haiku-4-5", messages=MESSAGES, max_tokens=4000)
    assert route.call_count == 0


@respx.mock
async def test_refusals_reach_async_callers_as_budget_exceeded(ledger_url: str) -> None:
    openai_route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    anthropic_route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())
    b = budget("0.0001", ledger_url)
    with pytest.raises(spendguard.BudgetExceeded):
        await spendguard.AsyncOpenAI(api_key="k", budget=b).chat.completions.create(
            model="gpt-4o", messages=MESSAGES, max_tokens=4000)
    with pytest.raises(spendguard.BudgetExceeded):
        await spendguard.AsyncAnthropic(api_key="k", budget=b).messages.create(
            model="claude-haiku-4-5", messages=MESSAGES, max_tokens=4000)
    assert openai_route.call_count == 0
    assert anthropic_route.call_count == 0


@respx.mock
def test_an_unknown_model_is_refused_before_sending(ledger_url: str) -> None:
    route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    client = spendguard.OpenAI(api_key="k", budget=budget("10", ledger_url))
    with pytest.raises(spendguard.UnknownModelError, match="price"):
        client.chat.completions.create(model="gpt-unheard-of", messages=MESSAGES)
    assert route.call_count == 0


@respx.mock
def test_an_endpoint_the_guard_cannot_price_is_refused_unless_allowed(ledger_url: str) -> None:
    route = respx.post("https://api.openai.com/v1/images/generations").respond(
        200, json={"created": 1, "data": []})
    client = spendguard.OpenAI(api_key="k", budget=budget("10", ledger_url))
    with pytest.raises(spendguard.UnsupportedEndpointError, match="allow_unpriced"):
        client.images.generate(model="gpt-image-1", prompt="a cat")
    assert route.call_count == 0
    lenient = spendguard.OpenAI(api_key="k", budget=budget("10", ledger_url),
                                allow_unpriced=True)
    lenient.images.generate(model="gpt-image-1", prompt="a cat")
    assert route.call_count == 1


@respx.mock
def test_each_retry_attempt_is_reserved_and_only_the_billed_one_is_charged(
        ledger_url: str) -> None:
    route = respx.post(OPENAI_CHAT)
    route.side_effect = [
        httpx.Response(500, json={"error": {"message": "boom"}}, headers={"retry-after-ms": "0"}),
        httpx.Response(429, json={"error": {"message": "slow"}}, headers={"retry-after-ms": "0"}),
        httpx.Response(200, json=chat_completion(prompt_tokens=100, completion_tokens=10)),
    ]
    b = budget("1", ledger_url)
    spendguard.OpenAI(api_key="k", budget=b, max_retries=2).chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, max_tokens=50)
    assert route.call_count == 3
    records = list(spendguard.open_ledger(ledger_url).records())
    assert [(r.attempt, r.status) for r in records] == [
        (1, "released"), (2, "released"), (3, "ok")]
    assert b.spent == records[2].actual_usd > 0
    assert b.reserved == 0


@respx.mock
def test_a_gzip_encoded_body_is_read_for_usage(ledger_url: str) -> None:
    payload = gzip.compress(json.dumps(chat_completion(prompt_tokens=1000,
                                                       completion_tokens=0)).encode())
    respx.post(OPENAI_CHAT).respond(200, content=payload, headers={
        "content-encoding": "gzip", "content-type": "application/json"})
    b = budget("1", ledger_url)
    reply = spendguard.OpenAI(api_key="k", budget=b).chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, max_tokens=10)
    assert reply.usage is not None and reply.usage.prompt_tokens == 1000
    assert b.spent == Decimal("0.00015")


@respx.mock
def test_a_complete_stream_passes_through_and_settles_from_its_usage(ledger_url: str) -> None:
    respx.post(OPENAI_CHAT).respond(200, content=sse(chat_stream_events(words=5)),
                                    headers={"content-type": "text/event-stream"})
    b = budget("1", ledger_url)
    client = spendguard.OpenAI(api_key="k", budget=b)
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES,
                                            max_tokens=50, stream=True,
                                            stream_options={"include_usage": True})
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == " word0 word1 word2 word3 word4"
    # 20 prompt tokens × $0.15 + 10 completion tokens × $0.60, per million
    assert b.spent == Decimal("0.000009")
    [record] = spendguard.open_ledger(ledger_url).records()
    assert record.status == "ok" and not record.usage_estimated


@respx.mock
def test_an_abandoned_stream_is_charged_what_was_received_plus_the_tail_bound(
        ledger_url: str) -> None:
    events = chat_stream_events(words=50)

    class EventByEvent(httpx.SyncByteStream):
        def __iter__(self) -> Any:
            for event in events:
                yield sse([event])

    respx.post(OPENAI_CHAT).respond(200, stream=EventByEvent(),
                                    headers={"content-type": "text/event-stream"})
    b = budget("1", ledger_url)
    stream = spendguard.OpenAI(api_key="k", budget=b).chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, max_tokens=5000, stream=True,
        stream_options={"include_usage": True})
    for _ in stream:
        break
    stream.close()
    [record] = spendguard.open_ledger(ledger_url).records()
    assert (record.status, record.usage_estimated) == ("stream_abandoned", True)
    assert b.reserved == 0
    # the words received (a few tokens) plus the 1,024 the provider may generate after the cut
    output = record.tokens["output"]
    assert STREAM_TAIL_TOKENS <= output < STREAM_TAIL_TOKENS + 60
    assert b.spent == (record.tokens["input"] * Decimal("0.15")
                       + output * Decimal("0.60")) / 1_000_000
    assert b.spent < record.estimated_usd


@respx.mock
def test_a_broken_anthropic_stream_settles_and_the_error_reaches_the_caller(
        ledger_url: str) -> None:
    body = sse(anthropic_stream_events(words=5))
    cut = body[: len(body) // 2]

    class Broken(httpx.SyncByteStream):
        def __iter__(self) -> Any:
            yield cut
            raise httpx.RemoteProtocolError("peer closed connection")

    respx.post(ANTHROPIC_MESSAGES).respond(200, stream=Broken(),
                                           headers={"content-type": "text/event-stream"})
    b = budget("1", ledger_url)
    client = spendguard.Anthropic(api_key="k", budget=b, max_retries=0)
    with (pytest.raises(ANTHROPIC_STREAM_CUT) as error,
          client.messages.stream(model="claude-haiku-4-5", messages=MESSAGES,
                                 max_tokens=100) as stream):
        for _ in stream:
            pass
    assert_sdk_stream_cut(error)
    [record] = spendguard.open_ledger(ledger_url).records()
    assert record.status == "stream_broken"
    assert record.usage_estimated
    assert b.reserved == 0
    assert b.spent > 0


@respx.mock
def test_a_complete_anthropic_stream_merges_start_and_delta_usage(ledger_url: str) -> None:
    respx.post(ANTHROPIC_MESSAGES).respond(
        200, content=sse(anthropic_stream_events(words=5, input_tokens=30)),
        headers={"content-type": "text/event-stream"})
    b = budget("1", ledger_url)
    client = spendguard.Anthropic(api_key="k", budget=b)
    with client.messages.stream(model="claude-haiku-4-5", messages=MESSAGES,
                                max_tokens=100) as stream:
        final = stream.get_final_message()
    assert final.usage.output_tokens == 10
    # claude-haiku-4-5: 30 in × $1 + 10 out × $5, per million
    assert b.spent == Decimal("0.00008")


@respx.mock
def test_cap_output_shrinks_the_output_cap_to_fit_instead_of_refusing(ledger_url: str) -> None:
    route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion(
        prompt_tokens=10, completion_tokens=5))
    b = budget("0.001", ledger_url)
    client = spendguard.OpenAI(api_key="k", budget=b, cap_output=True)
    client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=100000)
    sent = json.loads(route.calls[0].request.content)
    # $0.001 at $0.60 per million output tokens leaves room for ~1,666 tokens
    assert 1000 < sent["max_tokens"] < 1667


@respx.mock
def test_a_user_supplied_http_client_is_honoured(ledger_url: str) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["x-team"])
        return httpx.Response(200, json=chat_completion(prompt_tokens=10, completion_tokens=1))

    http_client = httpx.Client(transport=httpx.MockTransport(handler),
                               headers={"x-team": "search"})
    b = budget("1", ledger_url)
    client = spendguard.OpenAI(api_key="k", budget=b,
                               http_client=http_client)  # type: ignore[arg-type]  # httpx is httpx2 in tests
    client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=5)
    assert seen == ["search"]
    assert b.spent > 0


@respx.mock
def test_wrap_guards_a_client_built_elsewhere(ledger_url: str) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())
    raw = anthropic.Anthropic(api_key="k")
    client = spendguard.wrap(raw, budget=budget("0.00001", ledger_url))
    assert client is raw
    with pytest.raises(spendguard.BudgetExceeded):
        client.messages.create(model="claude-haiku-4-5", messages=MESSAGES, max_tokens=1000)
    assert route.call_count == 0


@respx.mock
def test_with_options_copies_keep_the_guard(ledger_url: str) -> None:
    route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    client = spendguard.OpenAI(api_key="k", budget=budget("0.00001", ledger_url))
    with pytest.raises(spendguard.BudgetExceeded):
        client.with_options(timeout=5).chat.completions.create(
            model="gpt-4o", messages=MESSAGES, max_tokens=1000)
    assert route.call_count == 0


@respx.mock
def test_free_endpoints_pass_without_a_reservation(ledger_url: str) -> None:
    respx.post("https://api.anthropic.com/v1/messages/count_tokens").respond(
        200, json={"input_tokens": 12})
    b = budget("0.000001", ledger_url)
    count = spendguard.Anthropic(api_key="k", budget=b).messages.count_tokens(
        model="claude-haiku-4-5", messages=MESSAGES)
    assert count.input_tokens == 12
    assert b.spent == 0


@respx.mock
def test_nested_scopes_are_all_charged(ledger_url: str) -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion(prompt_tokens=1000,
                                                              completion_tokens=0))
    project = budget("10", ledger_url, scope="project:acme")
    client = spendguard.OpenAI(api_key="k", budget=project)
    run = budget("1", ledger_url, scope="run:42")
    with run:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=1)
    assert project.spent == run.spent == Decimal("0.00015")


@respx.mock
async def test_concurrent_async_calls_never_exceed_the_budget(ledger_url: str) -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion(prompt_tokens=9,
                                                              completion_tokens=100))
    warned: list[object] = []
    b = budget("0.01", ledger_url, on_warn=warned.append)
    client = spendguard.AsyncOpenAI(api_key="k", budget=b, max_retries=0)

    async def one() -> bool:
        try:
            await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES,
                                                 max_tokens=100)
        except spendguard.BudgetExceeded:
            return False
        return True

    results = await asyncio.gather(*(one() for _ in range(200)))
    assert b.spent + b.reserved <= Decimal("0.01")
    assert b.reserved == 0
    assert any(results) and not all(results)
    assert len(warned) == 1  # one crossing of 80 %, one warning


@respx.mock
def test_crossing_the_warning_threshold_warns_once(ledger_url: str) -> None:
    route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion(
        prompt_tokens=9, completion_tokens=1000))
    b = budget("0.002", ledger_url)  # each call costs $0.00060135: 30 %, 60 %, 90 %, refused
    client = spendguard.OpenAI(api_key="k", budget=b)
    for _ in range(2):
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=1000)
    with pytest.warns(spendguard.BudgetWarning, match="90%"):
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=1000)
    with pytest.raises(spendguard.BudgetExceeded):
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=1000)
    assert route.call_count == 3


@respx.mock
def test_a_background_response_is_recorded_at_its_worst_case(ledger_url: str) -> None:
    respx.post("https://api.openai.com/v1/responses").respond(200, json={
        "id": "resp_1", "object": "response", "created_at": 1800000000, "status": "queued",
        "model": "gpt-4o-mini", "output": [], "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [], "usage": None})
    b = budget("1", ledger_url)
    spendguard.OpenAI(api_key="k", budget=b).responses.create(
        model="gpt-4o-mini", input="Write a long essay", background=True,
        max_output_tokens=1000)
    [record] = spendguard.open_ledger(ledger_url).records()
    assert record.status == "background"
    assert record.actual_usd == record.estimated_usd == b.spent


@respx.mock
def test_responses_compaction_is_priced_like_a_response(ledger_url: str) -> None:
    route = respx.post("https://api.openai.com/v1/responses/compact").respond(200, json={
        "id": "cmp_1", "object": "response.compaction", "created_at": 1800000000,
        "output": [], "usage": {"input_tokens": 1000, "output_tokens": 100,
                                "total_tokens": 1100,
                                "input_tokens_details": {"cached_tokens": 0},
                                "output_tokens_details": {"reasoning_tokens": 0}}})
    b = budget("0.00001", ledger_url)
    client = spendguard.OpenAI(api_key="k", budget=b)
    with pytest.raises(spendguard.BudgetExceeded):
        client.responses.compact(model="gpt-4o-mini", input="a long conversation")
    assert route.call_count == 0
    funded = budget("1", ledger_url)
    spendguard.OpenAI(api_key="k", budget=funded).responses.compact(
        model="gpt-4o-mini", input="a long conversation")
    # 1,000 in × $0.15 + 100 out × $0.60, per million
    assert funded.spent == Decimal("0.00021")


@respx.mock
def test_stored_object_updates_pass_as_free(ledger_url: str) -> None:
    respx.post("https://api.openai.com/v1/conversations").respond(
        200, json={"id": "conv_1", "object": "conversation", "created_at": 1, "metadata": {}})
    b = budget("0.000001", ledger_url)
    spendguard.OpenAI(api_key="k", budget=b).conversations.create()
    assert b.spent == 0 and b.reserved == 0


@respx.mock
def test_no_api_key_or_prompt_reaches_the_ledger_file_or_the_logs(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())
    path = tmp_path / "ledger.db"
    b = spendguard.Budget("1", ledger=f"sqlite:///{path}")
    prompt: Any = [{"role": "user", "content": "the-secret-prompt-text"}]
    spendguard.OpenAI(api_key="sk-live-KEY123", budget=b).chat.completions.create(
        model="gpt-4o-mini", messages=prompt, max_tokens=5)
    spendguard.Anthropic(api_key="sk-ant-KEY456", budget=b).messages.create(
        model="claude-haiku-4-5", messages=prompt, max_tokens=5)
    spendguard.open_ledger(f"sqlite:///{path}").close()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("ledger.db*"))
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("spendguard"))
    assert ours  # spendguard did log (the calls cost more than the mock's tiny prompt)
    for secret in (b"KEY123", b"KEY456", b"the-secret-prompt-text"):
        assert secret not in stored
        assert secret.decode() not in ours
    assert len(list(spendguard.open_ledger(f"sqlite:///{path}").records())) == 2


@respx.mock
@pytest.mark.parametrize(("should_retry", "attempts"), [("false", 1), ("true", 3)])
def test_a_body_dropped_mid_read_reaches_the_sdk_as_without_spendguard(
        ledger_url: str, should_retry: str, attempts: int) -> None:
    # The SDK sees the response's headers and meets the dropped connection while reading the
    # body, so its own rules (x-should-retry here) decide whether to retry.
    class Dropped(httpx.SyncByteStream):
        def __iter__(self) -> Any:
            yield b'{"id": "msg_'
            raise httpx.ReadError("connection reset")

    route = respx.post(ANTHROPIC_MESSAGES).mock(side_effect=lambda request: httpx.Response(
        200, headers={"x-should-retry": should_retry, "retry-after-ms": "1"},
        stream=Dropped()))
    b = budget("1", ledger_url)
    client = spendguard.Anthropic(api_key="k", budget=b, max_retries=2)
    with pytest.raises(anthropic.APIConnectionError) as error:
        client.messages.create(model="claude-haiku-4-5", messages=MESSAGES, max_tokens=100)
    assert type(error.value.__cause__) is httpx.ReadError
    assert route.call_count == attempts
    records = spendguard.open_ledger(ledger_url).records()
    assert [r.status for r in records] == ["error"] * attempts  # each may have been billed
    assert b.reserved == 0
