"""``spendguard gateway`` as a process: curl, graceful shutdown, several gateways on one Redis."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from decimal import Decimal
from pathlib import Path

import httpx2
import pytest

from spendguard.testing import Emulator, EmulatorServer, ManualClock, serve
from tests.gateway_helpers import (
    USER,
    gateway_process,
    held_sleep,
    records,
    refused_worst_usd,
    spawn_gateway,
    urls_of,
)
from tests.redis_helpers import fixture_redis_prefix, ledger_url, requires_redis

__all__ = ["fixture_redis_prefix"]  # a fixture, imported for pytest to find

requires_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


@pytest.fixture
def emulator() -> Emulator:
    return Emulator(clock=ManualClock())


@pytest.fixture
def server(emulator: Emulator) -> Iterator[EmulatorServer]:
    with serve(emulator) as running:
        yield running


def _stop(child: subprocess.Popen[str]) -> tuple[int, str]:
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=20)
    return child.returncode, err


@requires_curl
def test_curl_through_a_gateway_process_plain_and_streamed(
        emulator: Emulator, server: EmulatorServer, tmp_path: Path) -> None:
    ledger = f"sqlite:///{tmp_path / 'spend.db'}"
    child, urls = gateway_process("--budget", "1", "--ledger", ledger,
                                  "--upstream", f"openai={server.openai_base_url}")
    try:
        body = json.dumps({"model": "gpt-4o-mini", "messages": USER, "max_tokens": 20})
        curl = ["curl", "-sS", "--max-time", "20", "-H", "authorization: Bearer sk-caller",
                "-H", "content-type: application/json"]
        plain = subprocess.run([*curl, "-d", body, urls["openai_base_url"] + "/chat/completions"],
                               capture_output=True, text=True, check=True)
        streamed = subprocess.run(
            [*curl, "-N", "-d", body.replace('"max_tokens"', '"stream":true,"max_tokens"'),
             urls["openai_base_url"] + "/chat/completions"],
            capture_output=True, text=True, check=True)
    finally:
        code, err = _stop(child)
    assert code == 0, err
    assert json.loads(plain.stdout)["choices"][0]["message"]["content"].startswith(
        "[spendguard emulator]")
    assert streamed.stdout.rstrip().endswith("data: [DONE]")
    assert [r.status for r in records(ledger)] == ["ok", "ok"]
    assert len(emulator.requests) == 2


def test_sigterm_lets_a_stream_in_flight_finish_and_records_it(tmp_path: Path) -> None:
    gate = threading.Event()
    emulator = Emulator(stream_interval_s=1.0, sleep=held_sleep(gate))
    ledger = f"sqlite:///{tmp_path / 'spend.db'}"
    with serve(emulator) as upstream:
        child, urls = gateway_process("--budget", "1", "--ledger", ledger, "--grace", "10",
                                      "--upstream", f"openai={upstream.openai_base_url}")
        try:
            with httpx2.Client(timeout=30) as http, http.stream(
                    "POST", urls["openai_base_url"] + "/chat/completions",
                    headers={"authorization": "Bearer k"},
                    json={"model": "gpt-4o-mini", "messages": USER, "max_tokens": 20,
                          "stream": True}) as response:
                chunks = response.iter_raw()
                received = [next(chunks)]
                child.send_signal(signal.SIGTERM)  # shutting down while the stream flows
                gate.set()
                received.extend(chunks)
        finally:
            _, err = child.communicate(timeout=20)
    assert child.returncode == 0, err
    assert b"".join(received).rstrip().endswith(b"data: [DONE]")
    assert [r.status for r in records(ledger)] == ["ok"]


@requires_redis
def test_four_gateway_processes_on_one_redis_ledger_hold_one_budget(
        server: EmulatorServer, redis_prefix: str) -> None:
    limit = refused_worst_usd(server, model="gpt-4o", max_tokens=400) * Decimal("2.5")
    # The emulator holds every answer until the refusals are in, so that all the calls are
    # in flight at once, whatever the machine's speed.
    gate = threading.Event()
    emulator = Emulator(latency_s=1.0, sleep=held_sleep(gate))
    ledger = ledger_url(redis_prefix)
    with serve(emulator) as upstream:
        spawned = [spawn_gateway("--budget", str(limit), "--scope", "team:shared",
                                 "--ledger", ledger,
                                 "--upstream", f"openai={upstream.openai_base_url}")
                   for _ in range(4)]  # started side by side, then each awaited
        children = [(child, urls_of(child)) for child in spawned]

        def call(index: int) -> int:
            base = children[index % 4][1]["openai_base_url"]
            answer = httpx2.post(base + "/chat/completions", timeout=30,
                                 headers={"authorization": "Bearer k"},
                                 json={"model": "gpt-4o", "messages": USER, "max_tokens": 400})
            return answer.status_code

        statuses: list[int] = []
        try:
            with ThreadPoolExecutor(12) as pool:
                for done in as_completed([pool.submit(call, i) for i in range(12)], timeout=30):
                    statuses.append(done.result())
                    if len(statuses) == 10:
                        gate.set()  # ten refused while two are held: let those two finish
        finally:
            gate.set()
            for child, _ in children:
                _stop(child)
    assert statuses == [402] * 10 + [200] * 2
    assert len(emulator.requests) == 2
    assert [r.status for r in records(ledger, scope="team:shared")] == ["ok", "ok"]


def test_listening_beyond_loopback_without_virtual_keys_is_refused() -> None:
    from click.testing import CliRunner

    from spendguard.cli import main

    result = CliRunner().invoke(main, ["gateway", "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 2
    assert "requires virtual keys" in result.output and "Traceback" not in result.output
