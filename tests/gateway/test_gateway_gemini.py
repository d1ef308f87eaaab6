"""google-genai through the gateway: Gemini's paths routed, priced and recorded as Gemini, a
refusal in Google's error shape that the client does not retry."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from google import genai
from google.genai import errors, types

from spendguard._gateway.app import Gateway
from spendguard._gateway.config import GatewayConfig
from spendguard._gateway.server import RunningGateway, start
from spendguard._gateway.upstreams import parse_upstream
from spendguard.testing import Emulator, EmulatorServer, ManualClock, serve
from tests.gateway_helpers import memory_ledger, records

CONFIG = types.GenerateContentConfig(max_output_tokens=200,
                                     thinking_config=types.ThinkingConfig(thinking_budget=0))


EMULATOR = Emulator(clock=ManualClock())


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    with serve(EMULATOR) as running:
        yield running


def _gateway(server: EmulatorServer, limit_usd: str) -> RunningGateway:
    config = GatewayConfig(upstreams=(parse_upstream(f"gemini=gemini+{server.base_url}"),),
                           ledger=memory_ledger(), scope=f"gw:{uuid.uuid4().hex[:8]}",
                           limit_usd=limit_usd)
    return start(Gateway(config), grace_s=1)


def _client(gateway: RunningGateway) -> genai.Client:
    return genai.Client(api_key="caller-key",
                        http_options=types.HttpOptions(base_url=gateway.base_url))


def test_a_gemini_call_through_the_gateway_is_priced_and_recorded_as_gemini(
        server: EmulatorServer) -> None:
    with _gateway(server, "5") as gateway:
        client = _client(gateway)  # held: a dropped genai.Client closes its HTTP client
        reply = client.models.generate_content(
            model="gemini-2.5-flash", contents="Say hello to the gateway.", config=CONFIG)
        ledger = gateway.gateway.config.ledger
        assert ledger is not None
        [record] = records(ledger)
    assert reply.text
    assert (record.provider, record.model, record.status) == ("gemini", "gemini-2.5-flash", "ok")
    usage = reply.usage_metadata
    assert usage is not None and record.tokens["output"] == usage.candidates_token_count
    assert record.actual_usd > 0


def test_a_refused_gemini_call_reaches_no_provider_and_is_not_retried(
        server: EmulatorServer) -> None:
    sent_before = len(EMULATOR.requests)
    with _gateway(server, "0.0000001") as gateway:
        client = _client(gateway)
        with pytest.raises(errors.ClientError) as refused:
            client.models.generate_content(model="gemini-2.5-flash", contents="Hi",
                                           config=CONFIG)
        ledger = gateway.gateway.config.ledger
        assert ledger is not None
        assert records(ledger) == []
    assert refused.value.code == 402
    assert "spendguard" in str(refused.value.message)
    assert len(EMULATOR.requests) == sent_before  # nothing reached the provider
