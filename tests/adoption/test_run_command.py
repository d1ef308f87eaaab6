"""``spendguard run -- CMD``: a program that never imports spendguard is guarded from its first
import, keeps its output and exit status, and a spend summary is printed on exit."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from spendguard import format_usd, open_ledger
from spendguard.testing import Emulator, serve
from spendguard.testing.server import EmulatorServer
from tests.paths import TESTS

PROGRAM = TESTS / "run_program.py"


@pytest.fixture(name="server")
def fixture_server() -> Iterator[tuple[Emulator, EmulatorServer]]:
    emulator = Emulator()
    with serve(emulator) as server:
        yield emulator, server


def _spendguard_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from spendguard.cli import main; main()",
                           "run", *args], capture_output=True, text=True, timeout=120,
                          check=False)


def test_a_plain_program_is_guarded_refused_calls_are_budget_exceeded_and_it_keeps_its_exit(
        server: tuple[Emulator, EmulatorServer], tmp_path: Path) -> None:
    emulator, running = server
    ledger = f"sqlite:///{tmp_path / 'spend.db'}"
    # Each call reserves $0.001255 and costs $0.001165: two fit in $0.0035, the third not.
    done = _spendguard_run("--budget", "0.0035", "--scope", "team:cli", "--ledger", ledger,
                           "--", sys.executable, str(PROGRAM), running.openai_base_url, "3", "7")
    assert done.returncode == 7, done.stderr
    assert done.stdout == "ok\nok\nBudgetExceeded\n"  # the program's own output, untouched
    assert len(emulator.requests) == 2  # the refused call never left
    records = list(open_ledger(ledger).records(scope="team:cli"))
    assert [r.model for r in records] == ["gpt-5.5", "gpt-5.5"]
    cost = sum((r.actual_usd for r in records), Decimal(0))
    summary = done.stderr.strip().splitlines()
    assert summary[0] == (f"spendguard run: 2 calls, 22 input + 74 output tokens, "
                          f"{format_usd(cost)}; 1 refused; 0 warnings")
    assert summary[1] == f"  budget 'team:cli': {format_usd(cost)} spent of $0.0035"
    assert summary[-1] == "  exit status 7"


def test_observe_mode_sends_everything_and_says_what_it_would_have_refused(
        server: tuple[Emulator, EmulatorServer], tmp_path: Path) -> None:
    emulator, running = server
    done = _spendguard_run("--budget", "0.00001", "--observe", "--ledger",
                           f"sqlite:///{tmp_path / 'spend.db'}", "--json", "--", sys.executable,
                           "-W", "ignore::spendguard.BudgetWarning", str(PROGRAM),
                           running.openai_base_url, "2", "0")
    assert done.stdout == "ok\nok\n", done.stderr
    assert len(emulator.requests) == 2
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    assert (summary["calls"], summary["refusals"], summary["would_refuse"]) == (2, 0, 2)
    assert summary["observe"] is True
    assert Decimal(summary["would_refuse_usd"]) == Decimal(summary["cost_usd"]) > 0


def test_user_mistakes_are_one_line_errors_without_a_traceback() -> None:
    no_program = _spendguard_run("--budget", "1")
    assert no_program.returncode == 2 and "Traceback" not in no_program.stderr
    bad_budget = _spendguard_run("--budget", "lots", "--", sys.executable, "-c", "pass")
    assert bad_budget.returncode == 2 and "limit_usd" in bad_budget.stderr
    assert "Traceback" not in bad_budget.stderr
    scope_alone = _spendguard_run("--scope", "x", "--", sys.executable, "-c", "pass")
    assert scope_alone.returncode == 2 and "--budget" in scope_alone.stderr
    missing = _spendguard_run("--", "no-such-program-spendguard")
    assert missing.returncode == 1 and "cannot start" in missing.stderr
