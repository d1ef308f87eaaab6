"""The gateway's budget: refusals the clients do not retry, concurrency, records, scopes."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import spendguard
from spendguard.testing import Emulator, EmulatorServer, ManualClock, serve
from tests.gateway_helpers import (
    USER,
    gateway_for,
    held_sleep,
    records,
    refused_worst_usd,
    settled_events,
    worst_usd,
)


@pytest.fixture
def emulator() -> Emulator:
    return Emulator(clock=ManualClock())


@pytest.fixture
def server(emulator: Emulator) -> Iterator[EmulatorServer]:
    with serve(emulator) as running:
        yield running


def _summary(base_url: str) -> dict[str, Any]:
    result: dict[str, Any] = httpx2.get(base_url + "/spendguard/v1/summary", timeout=30).json()
    return result


def test_a_tight_budget_refuses_in_openais_shape_and_the_sdk_does_not_retry(
        emulator: Emulator, server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="0.000001") as gateway, \
            openai.OpenAI(api_key="sk-caller", base_url=gateway.openai_base_url,
                          max_retries=2) as client:
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(model="gpt-4o", messages=USER, max_tokens=500)
        summary = _summary(gateway.base_url)
    error = refused.value
    assert error.status_code == 402
    assert error.response.headers["x-should-retry"] == "false"
    body = error.response.json()
    assert body["error"]["type"] == "insufficient_quota"
    assert body["error"]["code"] == "budget_exceeded"
    message = body["error"]["message"]
    assert gateway.gateway.config.scope in message
    assert "could cost up to" in message and "is left" in message
    assert worst_usd(body) > Decimal("0.000001")
    assert emulator.requests == []
    assert summary["gateway"]["refusals"] == 1  # one attempt reached the gateway: no retry


def test_a_tight_budget_refuses_in_anthropics_shape_and_the_sdk_does_not_retry(
        emulator: Emulator, server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="0.000001") as gateway, \
            anthropic.Anthropic(api_key="sk-ant-caller", base_url=gateway.base_url,
                                max_retries=2) as client:
        with pytest.raises(anthropic.APIStatusError) as refused:
            client.messages.create(model="claude-sonnet-4-5", max_tokens=500, messages=USER)
        summary = _summary(gateway.base_url)
    body = refused.value.response.json()
    assert refused.value.status_code == 402
    assert body["type"] == "error" and body["error"]["type"] == "billing_error"
    assert gateway.gateway.config.scope in body["error"]["message"]
    assert emulator.requests == []
    assert summary["gateway"]["refusals"] == 1


def test_twenty_concurrent_calls_against_a_budget_worth_two_and_a_half_send_two(
        server: EmulatorServer) -> None:
    limit = refused_worst_usd(server, model="gpt-4o", max_tokens=400) * Decimal("2.5")
    # The emulator holds its answers until the refusals are in: all twenty are in flight.
    gate = threading.Event()
    emulator = Emulator(latency_s=1.0, sleep=held_sleep(gate))

    async def call(client: openai.AsyncOpenAI) -> Any:
        try:
            return await client.chat.completions.create(model="gpt-4o", messages=USER,
                                                        max_tokens=400)
        except openai.APIStatusError as exc:
            return exc.status_code

    async def burst(base_url: str) -> list[Any]:
        results = []
        async with openai.AsyncOpenAI(api_key="k", base_url=base_url) as client:
            try:
                for done in asyncio.as_completed([call(client) for _ in range(20)],
                                                 timeout=30):
                    results.append(await done)
                    if len(results) == 18:
                        gate.set()
            finally:
                gate.set()
        return results

    with serve(emulator) as upstream, gateway_for(upstream, limit_usd=str(limit)) as gateway:
        results = asyncio.run(burst(gateway.openai_base_url))
        ledger = gateway.gateway.config.ledger
        assert ledger is not None
        found = records(ledger)
    answered = [r for r in results if not isinstance(r, int)]
    assert results[:18] == [402] * 18 and len(answered) == 2
    # Every request the emulator received has exactly one record, at its exact cost.
    assert len(emulator.requests) == len(found) == 2
    assert sorted(r.actual_usd for r in found) == sorted(
        spendguard.cost("gpt-4o", r.usage).total for r in answered)


def test_a_client_leaving_mid_stream_leaves_one_record_of_an_abandoned_stream() -> None:
    gate = threading.Event()
    emulator = Emulator(stream_interval_s=1.0, sleep=held_sleep(gate))
    with serve(emulator) as upstream, gateway_for(upstream, limit_usd="1") as gateway, \
            settled_events() as seen:
        with httpx2.Client(timeout=30) as http, http.stream(
                "POST", gateway.openai_base_url + "/chat/completions",
                headers={"authorization": "Bearer sk-caller"},
                json={"model": "gpt-4o-mini", "messages": USER, "max_tokens": 200,
                      "stream": True}) as response:
            next(response.iter_raw())  # the first event, then the client hangs up
        events = seen.wait(1)
        gate.set()
        ledger = gateway.gateway.config.ledger
        assert ledger is not None
        found = records(ledger)
    assert [e.status for e in events] == ["stream_abandoned"]
    assert [r.status for r in found] == ["stream_abandoned"]
    assert found[0].actual_usd > 0


def test_a_scope_header_nests_a_budget_under_the_gateways(
        emulator: Emulator, server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="5", scope_limit_usd="0.000001") as gateway, \
            openai.OpenAI(api_key="k", base_url=gateway.openai_base_url) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20)
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20,
                                           extra_headers={"x-spendguard-scope": "team-a"})
        with pytest.raises(openai.BadRequestError) as bad:
            client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20,
                                           extra_headers={"x-spendguard-scope": "a/b"})
    scope = gateway.gateway.config.scope
    assert refused.value.status_code == 402
    assert refused.value.response.json()["error"]["spendguard"]["scope"] == f"{scope}/team-a"
    assert "x-spendguard-scope" not in str(emulator.requests[0].headers)
    assert "'/'" in bad.value.message and len(emulator.requests) == 1


def test_per_user_budgets_follow_the_requests_user_field(
        emulator: Emulator, server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="5", per_user_usd="0.000001") as gateway, \
            openai.OpenAI(api_key="k", base_url=gateway.openai_base_url) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20)
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20,
                                           user="alice")
    assert refused.value.response.json()["error"]["spendguard"]["scope"].endswith("/user:alice")
    assert len(emulator.requests) == 1


def test_only_configured_upstreams_are_reached_never_a_host_from_the_request(
        emulator: Emulator, server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="5") as gateway:
        unknown = httpx2.post(gateway.base_url + "/evil.example/v1/chat/completions", timeout=30,
                              json={"model": "gpt-4o-mini", "messages": USER})
        # An absolute-form target (a proxy request) names another host: its host is never
        # used (refused by h11; its path sent to the configured upstream by httptools).
        with socket.create_connection((gateway.host, gateway.port)) as raw:
            body = b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'
            raw.sendall(b"POST http://evil.example/v1/chat/completions HTTP/1.1\r\n"
                        b"host: evil.example\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
            answer = b"".join(iter(lambda: raw.recv(65536), b""))
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "no_upstream"
    status = answer.split(b" ", 2)[1]
    assert status in (b"200", b"404")  # never 502: evil.example was not tried
    assert [r.path for r in emulator.requests] == (
        ["/v1/chat/completions"] if status == b"200" else [])


def test_a_body_above_the_size_limit_is_refused_unsent(
        emulator: Emulator, server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="5", max_body_bytes=2000) as gateway, \
            openai.OpenAI(api_key="k", base_url=gateway.openai_base_url) as client, \
            pytest.raises(openai.APIStatusError) as refused:
        client.chat.completions.create(
            model="gpt-4o-mini", max_tokens=20,
            messages=[{"role": "user", "content": "x" * 5000}])
    assert refused.value.status_code == 413
    assert emulator.requests == []


def test_the_callers_provider_key_passes_through_and_is_never_stored_or_logged(
        server: EmulatorServer, tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    canary = "sk-canary-4f1d2a9b7c"
    ledger = f"sqlite:///{tmp_path / 'spend.db'}"
    with gateway_for(server, limit_usd="5", ledger=ledger) as gateway, \
            openai.OpenAI(api_key=canary, base_url=gateway.openai_base_url) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20)
        with pytest.raises(openai.APIStatusError):
            client.chat.completions.create(model="gpt-4o-mini", messages=USER,
                                           max_tokens=20, extra_headers={
                                               "x-spendguard-scope": "bad/scope"})
    spendguard.open_ledger(ledger).close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert canary.encode() not in stored
    assert canary not in caplog.text


def test_a_provider_error_status_passes_through_and_releases_the_reservation(
        emulator: Emulator, server: EmulatorServer) -> None:
    emulator.fail_next(status=400)
    with gateway_for(server, limit_usd="5") as gateway, \
            openai.OpenAI(api_key="k", base_url=gateway.openai_base_url) as client:
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20)
        summary = _summary(gateway.base_url)
    assert summary["gateway"]["released"] == 1 and summary["gateway"]["calls"] == 0
    assert summary["budget"]["spent_usd"] == "0"


def test_an_endpoint_spendguard_cannot_price_is_refused_unless_allowed(
        emulator: Emulator, server: EmulatorServer) -> None:
    speech = {"model": "tts-1", "input": "hi", "voice": "alloy"}
    with gateway_for(server, limit_usd="5") as gateway:
        refused = httpx2.post(gateway.openai_base_url + "/audio/speech", json=speech, timeout=30,
                              headers={"authorization": "Bearer k"})
    with gateway_for(server, limit_usd="5", allow_unpriced=True) as gateway:
        allowed = httpx2.post(gateway.openai_base_url + "/audio/speech", json=speech, timeout=30,
                              headers={"authorization": "Bearer k"})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "not_priced"
    assert "allow_unpriced" in refused.json()["error"]["message"]
    assert allowed.status_code != 400  # forwarded: the emulator answers as it does
    assert [r.path for r in emulator.requests] == ["/v1/audio/speech"]
