"""A framework cell through ``spendguard run``: a program that never imports spendguard,
built on LiteLLM (classic httpx, its own Anthropic HTTP code) and pydantic-ai (a new http
client per event loop), is guarded whole: every request the emulator received is counted.
One cell, not the whole matrix: the matrix itself (refusals included) runs in-process
(test_framework_matrix.py); a refusal under ``spendguard run`` is tested on a plain program
(test_run_command.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from spendguard import open_ledger
from spendguard.testing import Emulator, serve
from spendguard.testing.server import EmulatorServer
from tests.paths import TESTS

PROGRAM = TESTS / "framework_program.py"


@pytest.fixture(name="server")
def fixture_server() -> Iterator[tuple[Emulator, EmulatorServer]]:
    for name in ("litellm", "pydantic_ai"):
        if importlib.util.find_spec(name) is None:  # looked up, not imported (slow)
            pytest.skip(f"{name} is not installed: pip install -e '.[frameworks]' to run "
                        "the framework cells")
    emulator = Emulator()
    with serve(emulator) as running:
        yield emulator, running


def _run(budget: str, ledger: str, base_url: str) -> subprocess.CompletedProcess[str]:
    # Pointed at the emulator the way users point the SDKs (and LiteLLM) at a provider.
    env = {**os.environ, "OPENAI_BASE_URL": f"{base_url}/v1", "ANTHROPIC_BASE_URL": base_url,
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-c", "from spendguard.cli import main; main()",
                           "run", "--budget", budget, "--scope", "frameworks", "--ledger",
                           ledger, "--json", "--", sys.executable, str(PROGRAM), base_url],
                          capture_output=True, text=True, timeout=180, check=False, env=env)


def test_litellm_and_pydantic_ai_under_spendguard_run_are_counted_whole(
        server: tuple[Emulator, EmulatorServer], tmp_path: Path) -> None:
    emulator, running = server
    ledger = f"sqlite:///{tmp_path / 'spend.db'}"
    done = _run("1", ledger, running.base_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok"] * 4  # works as it does without spendguard
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    records = list(open_ledger(ledger).records(scope="frameworks"))
    assert summary["calls"] == len(records) == len(emulator.requests) == 4
    assert sorted({r.provider for r in records}) == ["anthropic", "openai"]
    assert Decimal(summary["cost_usd"]) == sum((r.actual_usd for r in records), Decimal(0))
