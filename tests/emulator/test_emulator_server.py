"""The loopback server: the SDKs over real HTTP on 127.0.0.1, and ``spendguard emulate``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from click.testing import CliRunner

from spendguard import ConfigError
from spendguard.cli import main
from spendguard.testing import Emulator, EmulatorServer, ManualClock, serve
from tests.sdk_errors import ANTHROPIC_STREAM_CUT, assert_sdk_stream_cut

USER: Any = [{"role": "user", "content": "hi"}]


@pytest.fixture
def emulator() -> Emulator:
    return Emulator(clock=ManualClock(), batch_completion_s=0)


@pytest.fixture
def server(emulator: Emulator) -> Iterator[EmulatorServer]:
    with serve(emulator) as running:
        yield running


@pytest.fixture
def oai(server: EmulatorServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(api_key="k", base_url=server.openai_base_url) as client:
        yield client


@pytest.fixture
def claude(server: EmulatorServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(api_key="k", base_url=server.anthropic_base_url) as client:
        yield client


def test_server_answers_both_sdks_over_loopback(server: EmulatorServer, oai: openai.OpenAI,
                                                claude: anthropic.Anthropic) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    chat = oai.chat.completions.create(model="gpt-5.5", messages=USER)
    assert chat.choices[0].message.content.startswith("[spendguard emulator]")  # type: ignore[union-attr]
    message = claude.messages.create(model="claude-sonnet-5", max_tokens=10, messages=USER)
    assert message.usage.output_tokens <= 10


def test_server_streams_to_the_sdk_helpers(oai: openai.OpenAI,
                                           claude: anthropic.Anthropic) -> None:
    client = oai
    with client.chat.completions.stream(model="gpt-5.5", messages=USER,
                                        stream_options={"include_usage": True}) as stream:
        assert stream.get_final_completion().usage is not None
    with client.responses.stream(model="gpt-5.5", input="hi") as responses_stream:
        assert responses_stream.get_final_response().usage is not None
    with claude.messages.stream(model="claude-sonnet-5", max_tokens=30,
                                messages=USER) as message_stream:
        assert message_stream.get_final_message().usage.output_tokens > 0


def test_server_sends_streams_chunk_by_chunk(server: EmulatorServer) -> None:
    with httpx2.Client() as client, client.stream(
            "POST", server.openai_base_url + "/chat/completions",
            json={"model": "gpt-5.5", "messages": USER, "stream": True}) as reply:
        assert reply.headers["transfer-encoding"] == "chunked"
        assert reply.headers["x-spendguard-emulator"] == "not a real provider"
        frames = [chunk for chunk in reply.iter_raw() if chunk]
    assert len(frames) > 3
    assert frames[-1] == b"data: [DONE]\n\n"


def test_server_cuts_a_broken_stream_mid_body(emulator: Emulator,
                                              claude: anthropic.Anthropic) -> None:
    emulator.break_next_stream(after_events=2)
    seen = []
    with pytest.raises(ANTHROPIC_STREAM_CUT) as cut:
        for event in claude.messages.create(model="claude-sonnet-5", max_tokens=30,
                                            messages=USER, stream=True):
            seen.append(event.type)
    assert_sdk_stream_cut(cut)
    assert seen == ["message_start", "content_block_start"]


def test_server_faults_are_retried_by_the_sdk(emulator: Emulator, oai: openai.OpenAI) -> None:
    emulator.fail_next(2, status=429)
    oai.chat.completions.create(model="gpt-5.5", messages=USER)
    assert [r.status for r in emulator.requests] == [429, 429, 200]
    assert all("authorization" not in r.headers for r in emulator.requests)


def test_server_runs_batches_with_absolute_results_urls(
        emulator: Emulator, server: EmulatorServer, oai: openai.OpenAI,
        claude: anthropic.Anthropic) -> None:
    client = claude
    batch = client.messages.batches.create(requests=[{"custom_id": "a", "params": {
        "model": "claude-sonnet-5", "max_tokens": 5, "messages": USER}}])
    batch = client.messages.batches.retrieve(batch.id)
    assert batch.results_url is not None and batch.results_url.startswith(server.base_url)
    assert [r.result.type for r in client.messages.batches.results(batch.id)] == ["succeeded"]
    line = {"custom_id": "x", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-5.5", "messages": USER}}
    uploaded = oai.files.create(file=("b.jsonl", json.dumps(line).encode()), purpose="batch")
    assert emulator.requests[-1].body == {"purpose": "batch", "filename": "b.jsonl",
                                          "bytes": uploaded.bytes}
    done = oai.batches.retrieve(oai.batches.create(input_file_id=uploaded.id,
                                                   endpoint="/v1/chat/completions",
                                                   completion_window="24h").id)
    assert done.status == "completed" and done.output_file_id is not None
    assert json.loads(oai.files.content(done.output_file_id).text)["custom_id"] == "x"


def test_async_sdks_work_against_the_server(server: EmulatorServer) -> None:
    async def run() -> tuple[int, int]:
        async with openai.AsyncOpenAI(api_key="k", base_url=server.openai_base_url) as oai:
            chat = await oai.chat.completions.create(model="gpt-5.5", messages=USER)
        async with anthropic.AsyncAnthropic(api_key="k",
                                            base_url=server.anthropic_base_url) as claude, \
                claude.messages.stream(model="claude-sonnet-5", max_tokens=20,
                                       messages=USER) as stream:
            message = await stream.get_final_message()
        assert chat.usage is not None
        return chat.usage.completion_tokens, message.usage.output_tokens

    completion_tokens, output_tokens = asyncio.run(run())
    assert completion_tokens > 0 and 0 < output_tokens <= 20


def test_server_refuses_non_loopback_addresses_unless_allowed() -> None:
    with pytest.raises(ConfigError, match="loopback"):
        serve(Emulator(), host="0.0.0.0")


def test_emulate_command_prints_the_banner_and_base_urls(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr("spendguard.cli.emulate._wait_for_interrupt", lambda: None)
    result = CliRunner().invoke(main, ["emulate", "--port", "0", "--latency-ms", "5"])
    assert result.exit_code == 0, result.output
    assert "not a real provider" in result.output
    assert "OpenAI SDK:    base_url=http://127.0.0.1:" in result.output
    assert "/v1" in result.output


def test_emulate_command_json_and_interrupt(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("spendguard.cli.emulate._wait_for_interrupt", interrupt)
    result = CliRunner().invoke(main, ["emulate", "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["real_provider"] is False
    assert info["openai_base_url"] == info["anthropic_base_url"] + "/v1"


def test_emulate_command_refuses_a_public_host() -> None:
    result = CliRunner().invoke(main, ["emulate", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "--allow-remote" in result.output


def test_a_responder_bug_is_answered_with_a_500_not_a_hang() -> None:
    def broken(prompt: object) -> str:
        raise RuntimeError("bug in the test's responder")

    with serve(Emulator(respond=broken)) as running, openai.OpenAI(
            api_key="k", base_url=running.openai_base_url, max_retries=0) as client, \
            pytest.raises(openai.InternalServerError, match="bug in the test"):
        client.chat.completions.create(model="gpt-5.5", messages=USER)


def test_a_client_dropping_its_connection_prints_nothing_but_a_server_bug_does(
        capsys: pytest.CaptureFixture[str]) -> None:
    """What the server does with an exception in a request's thread (socketserver calls
    ``handle_error`` inside the ``except``): a reset by the client is a client's right."""
    with serve(Emulator()) as server:
        for raised in (ConnectionResetError(104, "Connection reset by peer"),
                       BrokenPipeError(32, "Broken pipe"), ValueError("a bug")):
            try:
                raise raised
            except Exception:
                server._server.handle_error(None, ("127.0.0.1", 40000))
    err = capsys.readouterr().err
    assert "ConnectionResetError" not in err and "BrokenPipeError" not in err
    assert "ValueError: a bug" in err
