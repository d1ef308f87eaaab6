"""``spendguard run`` for programs that are not Python: a gateway for the program's lifetime,
named in the base-URL variables; Python processes keep install() and get the variables too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from spendguard.cli.run import is_python_program
from spendguard.testing import Emulator, EmulatorServer, ManualClock, serve
from tests.gateway_helpers import records
from tests.node_sdks import node_modules, node_program

__all__ = ["node_modules"]  # a fixture, imported for pytest to find

OPENAI_APP = """\
import OpenAI from "openai";
const client = new OpenAI();  // OPENAI_BASE_URL and OPENAI_API_KEY from the environment
const outcome = [];
for (let i = 0; i < 3; i++) {
  try {
    const reply = await client.chat.completions.create({
      model: "gpt-4o-mini", max_tokens: 40,
      messages: [{ role: "user", content: `Hello number ${i}` }] });
    outcome.push(reply.usage.completion_tokens > 0 ? "ok" : "empty");
  } catch (error) {
    outcome.push(String(error.status));
  }
}
console.log(JSON.stringify(outcome));
"""

ANTHROPIC_APP = """\
import Anthropic from "@anthropic-ai/sdk";
const client = new Anthropic();  // ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY
const stream = client.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 40,
  messages: [{ role: "user", content: "Hello" }] });
const message = await stream.finalMessage();
console.log(JSON.stringify({ output_tokens: message.usage.output_tokens }));
"""

@pytest.fixture
def emulator() -> Emulator:
    return Emulator(clock=ManualClock())


@pytest.fixture
def server(emulator: Emulator) -> Iterator[EmulatorServer]:
    with serve(emulator) as running:
        yield running


def _spendguard_run(server: EmulatorServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": server.openai_base_url,
           "ANTHROPIC_BASE_URL": server.anthropic_base_url, "OPENAI_API_KEY": "sk-emulated",
           "ANTHROPIC_API_KEY": "sk-ant-emulated"}
    return subprocess.run([sys.executable, "-c", "from spendguard.cli import main; main()",
                           "run", *args], capture_output=True, text=True, timeout=120,
                          check=False, env=env)


def test_a_node_openai_program_is_refused_by_a_tight_budget_before_anything_is_sent(
        emulator: Emulator, server: EmulatorServer, node_modules: Path, tmp_path: Path) -> None:
    app = node_program(tmp_path, node_modules, "app.mjs", OPENAI_APP)
    done = _spendguard_run(server, "--budget", "0.00001", "--json", "--", "node", str(app))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["402", "402", "402"]  # refused, and not retried
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    assert summary["refusals"] == 3 and summary["calls"] == 0
    assert emulator.requests == []


def test_a_node_openai_program_is_guarded_and_counted_in_the_runs_summary(
        emulator: Emulator, server: EmulatorServer, node_modules: Path, tmp_path: Path) -> None:
    app = node_program(tmp_path, node_modules, "app.mjs", OPENAI_APP)
    ledger = f"sqlite:///{tmp_path / 'spend.db'}"
    done = _spendguard_run(server, "--budget", "1", "--scope", "node:app", "--ledger", ledger,
                           "--json", "--", "node", str(app))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["ok", "ok", "ok"]
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    found = records(ledger, scope="node:app")
    assert summary["calls"] == len(found) == len(emulator.requests) == 3
    assert Decimal(summary["cost_usd"]) == sum((r.actual_usd for r in found), Decimal(0))


def test_a_node_anthropic_stream_is_guarded(
        emulator: Emulator, server: EmulatorServer, node_modules: Path, tmp_path: Path) -> None:
    app = node_program(tmp_path, node_modules, "claude.mjs", ANTHROPIC_APP)
    ledger = f"sqlite:///{tmp_path / 'spend.db'}"
    done = _spendguard_run(server, "--budget", "1", "--scope", "node:claude", "--ledger",
                           ledger, "--", "node", str(app))
    assert done.returncode == 0, done.stderr
    [record] = records(ledger, scope="node:claude")
    assert record.provider == "anthropic" and record.status == "ok"
    assert record.tokens["output"] == json.loads(done.stdout)["output_tokens"]


def test_python_programs_are_told_apart_from_others(tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/usr/bin/env python3\nprint('hi')\n", encoding="utf-8")
    assert is_python_program((sys.executable, "app.py"))
    assert is_python_program(("python3.12",))
    assert is_python_program((str(script),))
    assert not is_python_program(("node", "app.mjs"))
    assert not is_python_program(("curl",))
