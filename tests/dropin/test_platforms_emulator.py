"""The emulator answers Azure, Bedrock and Vertex paths; the guarded clients settle them exactly."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx2

import spendguard
from spendguard import open_ledger
from spendguard.testing import Emulator

MESSAGES: Any = [{"role": "user", "content": "hi"}]
US_SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def test_the_emulator_serves_an_azure_deployment() -> None:
    emulator = Emulator(reply_tokens=40)
    client = spendguard.AzureOpenAI(
        api_key="k", azure_endpoint="http://azure.spendguard.invalid", api_version="2024-10-21",
        deployments={"prod-4o": "gpt-4o"}, budget=spendguard.Budget("1", ledger="memory://az"),
        http_client=httpx2.Client(transport=emulator.transport()))
    reply = client.chat.completions.create(model="prod-4o", messages=MESSAGES, max_tokens=100)
    assert reply.usage is not None
    [record] = list(open_ledger("memory://az").records())
    # gpt-4o: $2.50 in, $10 out per million
    assert record.actual_usd == (Decimal(reply.usage.prompt_tokens) * Decimal("2.5")
                                 + 40 * 10) / 1_000_000
    assert emulator.requests[0].path.endswith("/deployments/prod-4o/chat/completions")


def test_the_emulator_streams_bedrock_event_stream_frames() -> None:
    emulator = Emulator(reply_tokens=40)
    client = spendguard.AnthropicBedrock(
        api_key="k", aws_region="us-east-1", base_url="http://bedrock.spendguard.invalid",
        budget=spendguard.Budget("1", ledger="memory://br"),
        http_client=httpx2.Client(transport=emulator.transport()))
    plain = client.messages.create(model=US_SONNET, messages=MESSAGES, max_tokens=100)
    events = [event.type for event in client.messages.create(
        model=US_SONNET, messages=MESSAGES, max_tokens=100, stream=True)]
    assert events[0] == "message_start" and events[-1] == "message_stop"
    streamed, whole = sorted(open_ledger("memory://br").records(), key=lambda r: r.time)[::-1]
    # regional Sonnet 4.5: $3.30 in, $16.50 out per million
    expected = (Decimal(plain.usage.input_tokens) * Decimal("3.3")
                + 40 * Decimal("16.5")) / 1_000_000
    assert whole.actual_usd == streamed.actual_usd == expected


def test_the_emulator_answers_vertex_raw_predict() -> None:
    emulator = Emulator(reply_tokens=40)
    client = spendguard.AnthropicVertex(
        region="global", project_id="p", access_token="t",
        base_url="http://vertex.spendguard.invalid/v1",
        budget=spendguard.Budget("1", ledger="memory://vx"),
        http_client=httpx2.Client(transport=emulator.transport()))
    for _ in client.messages.create(model="claude-sonnet-4-5@20250929", messages=MESSAGES,
                                    max_tokens=100, stream=True):
        pass
    [record] = list(open_ledger("memory://vx").records())
    assert record.model == "vertex/claude-sonnet-4-5@20250929"
    assert record.tokens["output"] == 40
