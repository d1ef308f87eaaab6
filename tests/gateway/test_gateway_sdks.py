"""The official SDKs through the gateway: chat, streams, tools, Responses, embeddings, Messages."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import spendguard
from spendguard.testing import Emulator, EmulatorServer, ManualClock, Reply, ToolCall, serve
from tests.gateway_helpers import USER, gateway_for, held_sleep, records

WEATHER: Any = [{"type": "function", "function": {
    "name": "weather", "parameters": {"type": "object", "properties": {}}}}]


def _reply(prompt: spendguard.testing.Prompt) -> str | Reply:
    if prompt.body.get("tools"):
        return Reply(tool_calls=[ToolCall("weather", {"city": "Oslo"})])
    return "Hello from the emulator."


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    with serve(Emulator(clock=ManualClock(), respond=_reply)) as running:
        yield running


def test_openai_chat_plain_streamed_and_tool_calls_pass_through_and_are_recorded(
        server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="5") as gateway, \
            openai.OpenAI(api_key="sk-caller", base_url=gateway.openai_base_url) as client:
        plain = client.chat.completions.create(model="gpt-4o-mini", messages=USER,
                                               max_tokens=50)
        chunks = list(client.chat.completions.create(
            model="gpt-4o-mini", messages=USER, max_tokens=50, stream=True,
            stream_options={"include_usage": True}))
        tools = client.chat.completions.create(model="gpt-4o-mini", messages=USER,
                                               tools=WEATHER, max_tokens=50)
        ledger = gateway.gateway.config.ledger
        assert ledger is not None
        found = records(ledger)
    assert plain.choices[0].message.content == "Hello from the emulator."
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) \
        == "Hello from the emulator."
    tool_calls = tools.choices[0].message.tool_calls
    assert tool_calls is not None and tool_calls[0].function.name == "weather"  # type: ignore[union-attr]
    assert [r.status for r in found] == ["ok", "ok", "ok"]
    usage = [plain.usage, chunks[-1].usage, tools.usage]
    assert [r.actual_usd for r in found] == [
        spendguard.cost("gpt-4o-mini", u).total for u in usage]


def test_openai_responses_and_embeddings_are_routed_by_path(server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="5") as gateway, \
            openai.OpenAI(api_key="sk-caller", base_url=gateway.openai_base_url) as client:
        response = client.responses.create(model="gpt-4o-mini", input="hi",
                                           max_output_tokens=40)
        embedding = client.embeddings.create(model="text-embedding-3-small", input="hi")
        ledger = gateway.gateway.config.ledger
        assert ledger is not None
        found = records(ledger)
    assert response.output_text
    assert embedding.data[0].embedding
    assert [(r.endpoint, r.status) for r in found] == [("responses", "ok"),
                                                       ("embeddings", "ok")]


def test_anthropic_messages_plain_streamed_and_tool_use_pass_through(
        server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="5") as gateway, \
            anthropic.Anthropic(api_key="sk-ant-caller", base_url=gateway.base_url) as client:
        plain = client.messages.create(model="claude-sonnet-4-5", max_tokens=50, messages=USER)
        with client.messages.stream(model="claude-sonnet-4-5", max_tokens=50,
                                    messages=USER) as stream:
            streamed = stream.get_final_message()
        tool = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=50, messages=USER,
            tools=[{"name": "weather", "input_schema": {"type": "object"}}])
        ledger = gateway.gateway.config.ledger
        assert ledger is not None
        found = records(ledger)
    assert plain.content[0].type == "text"
    assert streamed.usage.output_tokens == plain.usage.output_tokens
    assert any(block.type == "tool_use" for block in tool.content)
    assert [(r.provider, r.status) for r in found] == [("anthropic", "ok")] * 3
    assert [r.actual_usd for r in found] == [
        spendguard.cost("claude-sonnet-4-5", m.usage).total for m in (plain, streamed, tool)]


def test_a_stream_reaches_the_client_event_by_event_as_the_upstream_sends_it() -> None:
    # The emulator waits before each event after the first until the test lets it go: the
    # client must already hold the first event while the second is not yet written.
    gate = threading.Event()
    emulator = Emulator(stream_interval_s=1.0, sleep=held_sleep(gate))
    with serve(emulator) as upstream, gateway_for(upstream, limit_usd="5") as gateway, \
            httpx2.Client(timeout=30) as http, http.stream(
                "POST", gateway.openai_base_url + "/chat/completions",
                headers={"authorization": "Bearer sk-caller"},
                json={"model": "gpt-4o-mini", "messages": USER, "max_tokens": 20,
                      "stream": True}) as response:
        lines = response.iter_lines()
        first = next(line for line in lines if line.startswith("data:"))
        assert json.loads(first[5:])["object"] == "chat.completion.chunk"
        gate.set()
        rest = [line for line in lines if line.startswith("data:")]
    assert rest[-1] == "data: [DONE]"


def test_health_and_summary_report_the_gateway_and_its_budget(server: EmulatorServer) -> None:
    with gateway_for(server, limit_usd="5") as gateway, \
            openai.OpenAI(api_key="sk-caller", base_url=gateway.openai_base_url) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20)
        health = httpx2.get(gateway.base_url + "/healthz", timeout=30).json()
        summary = httpx2.get(gateway.base_url + "/spendguard/v1/summary", timeout=30).json()
    assert health["status"] == "ok" and "openai" in health["upstreams"]
    assert summary["gateway"]["calls"] == 1
    assert summary["budget"]["limit_usd"] == "5"
    assert Decimal(summary["budget"]["spent_usd"]) == Decimal(summary["gateway"]["cost_usd"])
    assert Decimal(summary["budget"]["spent_usd"]) > 0


def test_the_listening_socket_turns_nagles_algorithm_off_for_every_connection() -> None:
    # With Nagle on, a response written in two parts waits ~40 ms for the client's delayed
    # ACK on every call; asyncio turns it off only on sockets created as IPPROTO_TCP.
    import socket

    from spendguard._gateway.server import bind

    with bind("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
