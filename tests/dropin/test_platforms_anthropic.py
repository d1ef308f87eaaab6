"""Claude on Bedrock and Vertex AI through the anthropic SDK's own classes, HTTP mocked by respx.

No cloud credentials: Bedrock takes an API key (bearer token, so nothing is SigV4-signed) and
Vertex an access token. Bedrock streams are AWS event-stream frames written by
``spendguard.testing.eventstream`` and read back by botocore's parser.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import respx

import spendguard
from spendguard import open_ledger
from spendguard._costing.eventstream import EventStreamDecoder
from spendguard.testing.eventstream import bedrock_stream, event_stream_frame
from tests.provider_bodies import anthropic_message, anthropic_stream_events, sse

BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com"
SONNET = "claude-sonnet-4-5-20250929"
US_SONNET = f"us.anthropic.{SONNET}-v1:0"
GLOBAL_SONNET = f"global.anthropic.{SONNET}-v1:0"
VERTEX_REGIONAL = ("https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/"
                   "publishers/anthropic/models/claude-sonnet-4-5@20250929")
VERTEX_GLOBAL = ("https://aiplatform.googleapis.com/v1/projects/p/locations/global/"
                 "publishers/anthropic/models/claude-sonnet-4-5@20250929")
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]
STREAM = {"content-type": "application/vnd.amazon.eventstream"}
# claude-sonnet-4-5: $3 in / $15 out per million; regional endpoints +10 % ($3.30 / $16.50).
# 50 input + 120 output tokens:
REGIONAL_USD = Decimal("0.002145")
GLOBAL_USD = Decimal("0.00195")


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def bedrock(ledger_url: str, limit: str = "1") -> spendguard.AnthropicBedrock:
    return spendguard.AnthropicBedrock(api_key="bedrock-test", aws_region="us-east-1",
                                       max_retries=2,
                                       budget=spendguard.Budget(limit, ledger=ledger_url))


def vertex(ledger_url: str, region: str = "us-east5") -> spendguard.AnthropicVertex:
    return spendguard.AnthropicVertex(region=region, project_id="p", access_token="vertex-test",
                                      budget=spendguard.Budget("1", ledger=ledger_url))


def invoke(model_id: str, stream: bool = False) -> re.Pattern[str]:
    kind = "invoke-with-response-stream" if stream else "invoke"
    return re.compile(re.escape(f"{BEDROCK}/model/{model_id}/{kind}"))


def records(ledger_url: str) -> list[spendguard.SpendRecord]:
    return sorted(open_ledger(ledger_url).records(), key=lambda r: r.attempt)


class Pieces(httpx2.SyncByteStream):
    """A body delivered in small pieces that cut frames apart, as a network would."""

    def __init__(self, body: bytes, size: int) -> None:
        self.body, self.size = body, size

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, len(self.body), self.size):
            yield self.body[start:start + self.size]


def test_platform_clients_are_instances_of_the_sdk_classes(ledger_url: str) -> None:
    assert isinstance(bedrock(ledger_url), anthropic.AnthropicBedrock)
    assert isinstance(vertex(ledger_url), anthropic.AnthropicVertex)
    assert isinstance(spendguard.AsyncAnthropicBedrock(api_key="k", aws_region="us-east-1"),
                      anthropic.AsyncAnthropicBedrock)
    assert isinstance(spendguard.AsyncAnthropicVertex(region="global", project_id="p",
                                                      access_token="t"),
                      anthropic.AsyncAnthropicVertex)


@respx.mock
def test_a_bedrock_call_is_priced_from_the_model_id_in_its_path(ledger_url: str) -> None:
    respx.post(url__regex=invoke(US_SONNET)).respond(200, json=anthropic_message(
        SONNET, input_tokens=50, output_tokens=120))
    bedrock(ledger_url).messages.create(model=US_SONNET, messages=MESSAGES, max_tokens=200)
    [record] = records(ledger_url)
    assert record.model == f"bedrock/{US_SONNET}"  # the id as called; priced as its entry
    # The response names the Claude API's model; the regional uplift still applies.
    assert record.actual_usd == REGIONAL_USD


@respx.mock
def test_the_global_bedrock_profile_costs_the_claude_api_rate(ledger_url: str) -> None:
    respx.post(url__regex=invoke(GLOBAL_SONNET)).respond(200, json=anthropic_message(
        SONNET, input_tokens=50, output_tokens=120))
    bedrock(ledger_url).messages.create(model=GLOBAL_SONNET, messages=MESSAGES, max_tokens=200)
    assert records(ledger_url)[0].actual_usd == GLOBAL_USD


@respx.mock
def test_a_refused_bedrock_call_sends_nothing_and_is_not_retried(ledger_url: str) -> None:
    route = respx.post(url__regex=invoke(US_SONNET)).respond(200, json=anthropic_message())
    with pytest.raises(spendguard.BudgetExceeded):
        bedrock(ledger_url, limit="0.0001").messages.create(model=US_SONNET, messages=MESSAGES,
                                                             max_tokens=4000)
    assert route.call_count == 0


@respx.mock
def test_an_unknown_bedrock_id_is_refused_with_the_fix(ledger_url: str) -> None:
    route = respx.post(url__regex=re.compile(f"{BEDROCK}/.*")).respond(200, json={})
    with pytest.raises(spendguard.UnknownModelError, match=r"aliases = \[\"bedrock/"):
        bedrock(ledger_url).messages.create(model="anthropic.claude-unknown-v9:0",
                                            messages=MESSAGES, max_tokens=10)
    assert route.call_count == 0


@respx.mock
def test_bedrock_retries_are_each_metered(ledger_url: str) -> None:
    route = respx.post(url__regex=invoke(US_SONNET))
    route.side_effect = [
        respx.MockResponse(529, json={"message": "overloaded"}, headers={"retry-after-ms": "1"}),
        respx.MockResponse(200, json=anthropic_message(SONNET, input_tokens=50,
                                                       output_tokens=120)),
    ]
    bedrock(ledger_url).messages.create(model=US_SONNET, messages=MESSAGES, max_tokens=200)
    assert [(r.attempt, r.status) for r in records(ledger_url)] == [(1, "released"), (2, "ok")]
    assert records(ledger_url)[1].actual_usd == REGIONAL_USD


@respx.mock
def test_a_bedrock_event_stream_settles_exactly_as_it_flows(ledger_url: str) -> None:
    events = [data for _, data in anthropic_stream_events(SONNET, words=5, input_tokens=30)]
    body = bedrock_stream(events)  # type: ignore[arg-type]
    respx.post(url__regex=invoke(US_SONNET, stream=True)).mock(
        return_value=respx.MockResponse(200, stream=Pieces(body, 7), headers=STREAM))
    stream = bedrock(ledger_url).messages.create(model=US_SONNET, messages=MESSAGES,
                                                 max_tokens=200, stream=True)
    kinds = [event.type for event in stream]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    [record] = records(ledger_url)
    # 30 input × $3.30 + 10 output × $16.50, per million
    assert record.actual_usd == Decimal("0.000264")
    assert record.status == "ok"


def test_the_event_stream_decoder_yields_each_event_once_its_frame_is_complete() -> None:
    events = [data for _, data in anthropic_stream_events(SONNET, words=2)]
    body = bedrock_stream(events)  # type: ignore[arg-type]
    decoder = EventStreamDecoder()
    seen: list[str | None] = []
    first = len(bedrock_stream(events[:1]))  # type: ignore[arg-type]
    seen += [name for name, _ in decoder.feed(body[:first - 1])]
    assert seen == []  # a frame one byte short yields nothing yet
    seen += [name for name, _ in decoder.feed(body[first - 1:])]
    assert seen == [event["type"] for event in events]  # type: ignore[index]


@respx.mock
def test_an_abandoned_bedrock_stream_is_still_settled(ledger_url: str) -> None:
    events = [data for _, data in anthropic_stream_events(SONNET, words=20, input_tokens=30)]
    respx.post(url__regex=invoke(US_SONNET, stream=True)).respond(
        200, content=bedrock_stream(events), headers=STREAM)  # type: ignore[arg-type]
    stream = bedrock(ledger_url).messages.create(model=US_SONNET, messages=MESSAGES,
                                                 max_tokens=200, stream=True)
    next(iter(stream))
    stream.close()
    [record] = records(ledger_url)
    assert record.status in ("stream_abandoned", "ok")
    assert record.actual_usd > 0


@respx.mock
def test_the_async_bedrock_client_meters_its_stream(ledger_url: str) -> None:
    events = [data for _, data in anthropic_stream_events(SONNET, words=5, input_tokens=30)]
    respx.post(url__regex=invoke(US_SONNET, stream=True)).respond(
        200, content=bedrock_stream(events), headers=STREAM)  # type: ignore[arg-type]
    client = spendguard.AsyncAnthropicBedrock(api_key="k", aws_region="us-east-1",
                                              budget=spendguard.Budget("1", ledger=ledger_url))

    async def run() -> None:
        stream = await client.messages.create(model=US_SONNET, messages=MESSAGES,
                                              max_tokens=200, stream=True)
        async for _ in stream:
            pass

    asyncio.run(run())
    assert records(ledger_url)[0].actual_usd == Decimal("0.000264")


@respx.mock
def test_a_vertex_region_costs_the_regional_rate(ledger_url: str) -> None:
    respx.post(f"{VERTEX_REGIONAL}:rawPredict").respond(200, json=anthropic_message(
        SONNET, input_tokens=50, output_tokens=120))
    vertex(ledger_url).messages.create(model="claude-sonnet-4-5@20250929", messages=MESSAGES,
                                       max_tokens=200)
    [record] = records(ledger_url)
    assert record.model == "vertex-regional/claude-sonnet-4-5@20250929"
    assert record.actual_usd == REGIONAL_USD


@respx.mock
def test_the_vertex_global_endpoint_costs_the_claude_api_rate(ledger_url: str) -> None:
    respx.post(f"{VERTEX_GLOBAL}:rawPredict").respond(200, json=anthropic_message(
        SONNET, input_tokens=50, output_tokens=120))
    vertex(ledger_url, region="global").messages.create(
        model="claude-sonnet-4-5@20250929", messages=MESSAGES, max_tokens=200)
    assert records(ledger_url)[0].actual_usd == GLOBAL_USD


@respx.mock
def test_a_vertex_stream_settles_exactly(ledger_url: str) -> None:
    respx.post(f"{VERTEX_REGIONAL}:streamRawPredict").respond(
        200, content=sse(anthropic_stream_events(SONNET, words=5, input_tokens=30)),
        headers={"content-type": "text/event-stream"})
    stream = vertex(ledger_url).messages.create(model="claude-sonnet-4-5@20250929",
                                                messages=MESSAGES, max_tokens=200, stream=True)
    for _ in stream:
        pass
    assert records(ledger_url)[0].actual_usd == Decimal("0.000264")


@respx.mock
def test_a_refused_vertex_call_sends_nothing(ledger_url: str) -> None:
    route = respx.post(f"{VERTEX_REGIONAL}:rawPredict").respond(200, json=anthropic_message())
    client = spendguard.AnthropicVertex(region="us-east5", project_id="p", access_token="t",
                                        budget=spendguard.Budget("0.0001", ledger=ledger_url))
    with pytest.raises(spendguard.BudgetExceeded):
        client.messages.create(model="claude-sonnet-4-5@20250929", messages=MESSAGES,
                               max_tokens=4000)
    assert route.call_count == 0


@respx.mock
def test_vertex_retries_are_each_metered(ledger_url: str) -> None:
    route = respx.post(f"{VERTEX_REGIONAL}:rawPredict")
    route.side_effect = [
        respx.MockResponse(429, json={"error": {"message": "quota"}},
                           headers={"retry-after-ms": "1"}),
        respx.MockResponse(200, json=anthropic_message(SONNET, input_tokens=50,
                                                       output_tokens=120)),
    ]
    vertex(ledger_url).messages.create(model="claude-sonnet-4-5@20250929", messages=MESSAGES,
                                       max_tokens=200)
    assert [(r.attempt, r.status) for r in records(ledger_url)] == [(1, "released"), (2, "ok")]


@respx.mock
def test_a_sigv4_signed_bedrock_request_is_sent_exactly_as_signed(ledger_url: str) -> None:
    route = respx.post(url__regex=invoke(US_SONNET)).respond(200, json=anthropic_message(
        SONNET, input_tokens=50, output_tokens=120))
    client = spendguard.AnthropicBedrock(
        aws_access_key="AKIDEXAMPLE", aws_secret_key="secret", aws_region="us-east-1",
        cap_output=True, budget=spendguard.Budget("0.01", ledger=ledger_url))
    # 20,000 output tokens would not fit $0.01: an unsigned request would be capped, a signed
    # one cannot be rewritten, so it is priced as sent (and here refused).
    with pytest.raises(spendguard.BudgetExceeded):
        client.messages.create(model=US_SONNET, messages=MESSAGES, max_tokens=20000)
    client.messages.create(model=US_SONNET, messages=MESSAGES, max_tokens=200)
    sent = route.calls.last.request
    assert sent.headers["authorization"].startswith("AWS4-HMAC-SHA256")
    assert b'"max_tokens":200' in sent.content.replace(b" ", b"")


@respx.mock
def test_a_wrapped_sdk_bedrock_client_is_priced_the_same_way(ledger_url: str) -> None:
    respx.post(url__regex=invoke(US_SONNET)).respond(200, json=anthropic_message(
        SONNET, input_tokens=50, output_tokens=120))
    client = spendguard.wrap(anthropic.AnthropicBedrock(api_key="k", aws_region="us-east-1"),
                             budget=spendguard.Budget("1", ledger=ledger_url))
    client.messages.create(model=US_SONNET, messages=MESSAGES, max_tokens=200)
    assert records(ledger_url)[0].actual_usd == REGIONAL_USD


@respx.mock
def test_the_async_vertex_client_settles_the_same_way(ledger_url: str) -> None:
    respx.post(f"{VERTEX_REGIONAL}:rawPredict").respond(200, json=anthropic_message(
        SONNET, input_tokens=50, output_tokens=120))
    client = spendguard.AsyncAnthropicVertex(region="us-east5", project_id="p",
                                             access_token="t",
                                             budget=spendguard.Budget("1", ledger=ledger_url))
    asyncio.run(client.messages.create(model="claude-sonnet-4-5@20250929", messages=MESSAGES,
                                       max_tokens=200))
    assert records(ledger_url)[0].actual_usd == REGIONAL_USD


@respx.mock
def test_a_bedrock_stream_cut_by_an_exception_frame_is_settled_from_what_arrived(
        ledger_url: str) -> None:
    events = [data for _, data in anthropic_stream_events(SONNET, words=3, input_tokens=30)]
    exception = event_stream_frame(
        {":message-type": "exception", ":exception-type": "throttlingException",
         ":content-type": "application/json"}, b'{"message": "slow down"}')
    body = bedrock_stream(events[:4]) + exception  # type: ignore[arg-type]
    respx.post(url__regex=invoke(US_SONNET, stream=True)).respond(200, content=body,
                                                                   headers=STREAM)
    stream = bedrock(ledger_url).messages.create(model=US_SONNET, messages=MESSAGES,
                                                 max_tokens=200, stream=True)
    with pytest.raises(anthropic.APIStatusError):
        for _ in stream:
            pass
    [record] = records(ledger_url)
    assert record.status in ("stream_broken", "stream_abandoned") and record.usage_estimated
    assert record.tokens["input"] == 30  # message_start's usage arrived before the cut
