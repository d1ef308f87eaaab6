"""Virtual keys: issued by the CLI, stored hashed, each a scope and budget; the gateway holds
the real provider key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from click.testing import CliRunner

from spendguard._gateway.app import Gateway
from spendguard._gateway.config import GatewayConfig
from spendguard._gateway.server import check_host, start
from spendguard.cli import main
from spendguard.testing import Emulator, EmulatorServer, ManualClock, serve
from tests.gateway_helpers import USER, memory_ledger, records, upstreams_for


@pytest.fixture
def emulator() -> Emulator:
    return Emulator(clock=ManualClock())


@pytest.fixture
def server(emulator: Emulator) -> Iterator[EmulatorServer]:
    with serve(emulator) as running:
        yield running


def _create(keys_file: Path, scope: str, budget: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["gateway", "keys", "create", "--scope", scope,
                                       "--budget", budget, "--keys", str(keys_file), "--json"])
    assert result.exit_code == 0, result.output
    created: dict[str, Any] = json.loads(result.output)
    return created


def test_keys_are_shown_once_stored_as_digests_listed_and_revoked(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.json"
    created = _create(keys_file, "team:search", "25")
    assert created["key"].startswith("sgk-")
    assert created["key"] not in keys_file.read_text()
    listed = CliRunner().invoke(main, ["gateway", "keys", "list", "--keys", str(keys_file)])
    assert created["id"] in listed.output and "team:search" in listed.output
    assert created["key"] not in listed.output
    revoked = CliRunner().invoke(main, ["gateway", "keys", "revoke", created["id"],
                                        "--keys", str(keys_file)])
    assert revoked.exit_code == 0
    again = CliRunner().invoke(main, ["gateway", "keys", "revoke", created["id"],
                                      "--keys", str(keys_file)])
    assert again.exit_code == 1 and "no key with id" in again.output


def test_a_bad_budget_for_a_key_is_one_line_naming_the_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["gateway", "keys", "create", "--scope", "team:a",
                                       "--budget", "lots", "--keys", str(tmp_path / "k.json")])
    assert result.exit_code == 2 and "budget" in result.output
    assert "Traceback" not in result.output


def test_a_virtual_key_is_charged_to_its_scope_and_the_real_key_is_sent(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.json"
    team = _create(keys_file, "team:search", "5")
    seen: list[httpx2.Request] = []

    def provider(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})

    ledger = memory_ledger()
    config = GatewayConfig(limit_usd="100", scope="org", ledger=ledger, keys_file=str(keys_file),
                           provider_keys={"OPENAI_API_KEY": "sk-real-provider-key"})
    with start(Gateway(config, transport=httpx2.MockTransport(provider)), grace_s=1) as gateway, \
            openai.OpenAI(api_key=team["key"], base_url=gateway.openai_base_url) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20)
        with pytest.raises(openai.AuthenticationError) as denied:
            client.with_options(api_key="sk-my-own-key").chat.completions.create(
                model="gpt-4o-mini", messages=USER, max_tokens=20)
    assert [r.headers["authorization"] for r in seen] == ["Bearer sk-real-provider-key"]
    assert "virtual keys only" in denied.value.message
    [record] = records(ledger)
    assert record.scopes == ("org", "team:search")  # the key's budget, within the gateway's
    assert record.tags["virtual_key"] == team["id"]


def test_a_keys_budget_refuses_and_a_revoked_key_is_refused_at_once(
        emulator: Emulator, server: EmulatorServer, tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.json"
    tight = _create(keys_file, "team:tight", "0.000001")
    config = GatewayConfig(upstreams=upstreams_for(server), ledger=memory_ledger(),
                           keys_file=str(keys_file), provider_keys={"OPENAI_API_KEY": "sk-real"})
    with start(Gateway(config), grace_s=1) as gateway, \
            openai.OpenAI(api_key=tight["key"], base_url=gateway.openai_base_url) as client:
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20)
        CliRunner().invoke(main, ["gateway", "keys", "revoke", tight["id"],
                                  "--keys", str(keys_file)])
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model="gpt-4o-mini", messages=USER, max_tokens=20)
    assert refused.value.status_code == 402
    assert refused.value.response.json()["error"]["spendguard"]["scope"] == "team:tight"
    assert emulator.requests == []


def test_beyond_loopback_virtual_keys_are_required() -> None:
    check_host("0.0.0.0", virtual_keys=True)  # allowed with keys
    with pytest.raises(Exception, match="requires virtual keys"):
        check_host("0.0.0.0", virtual_keys=False)


def test_cli_mistakes_are_one_line_never_a_traceback() -> None:
    import socket

    runner = CliRunner()
    bad_budget = runner.invoke(main, ["gateway", "--port", "0", "--budget", "lots"])
    bad_upstream = runner.invoke(main, ["gateway", "--port", "0", "--upstream", "v1=http://x"])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = runner.invoke(main, ["gateway", "--port", str(taken.getsockname()[1])])
    assert bad_budget.exit_code == 2 and "limit_usd" in bad_budget.output
    assert bad_upstream.exit_code == 2 and "NAME=URL" in bad_upstream.output
    assert busy.exit_code == 1 and "cannot listen on 127.0.0.1:" in busy.output
    for result in (bad_budget, bad_upstream, busy):
        assert "Traceback" not in result.output
