"""Helpers for the budget and ledger tests: a settable clock, call facts, worker processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import spendguard
from spendguard._budget.budget import Budget, CallInfo
from spendguard._budget.reservations import Reservation, reserve_call

# The worker scripts import spendguard from this checkout, whether or not it is installed.
REPO_ROOT = Path(spendguard.__file__).resolve().parent.parent
WORKER = Path(__file__).with_name("ledger_worker.py")
START = datetime(2031, 1, 31, 23, 0, tzinfo=UTC)  # far from the real clock: no accidental expiry


class FakeClock:
    """A clock the test moves by hand; budgets call it like ``datetime.now``."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def call_info(model: str = "gpt-test", *, prompt_hash: str | None = None,
              prompt_text: str | None = None) -> CallInfo:
    """A CallInfo as the transport would make it, for ``model``."""
    return CallInfo(provider="openai", model=model, endpoint="chat", attempt=1,
                    prompt_hash=prompt_hash, prompt_text=prompt_text,
                    estimated_input_tokens=10, estimated_output_tokens=100, input_exact=True)


def settle(reservation: Reservation, actual_usd: str | Decimal, *, status: str = "ok",
           tokens: dict[str, int] | None = None) -> None:
    """Settle as the transport does after reading usage."""
    reservation.settle(actual_usd=Decimal(actual_usd),
                       tokens={"input": 10, "output": 5} if tokens is None else tokens,
                       usage_estimated=False, table_version="test-2031-01", latency_s=0.25,
                       request_id="req_1", status=status)


def spend(budget: Budget | None, worst_usd: str, actual_usd: str, *,
          prompt_hash: str | None = None, prompt_text: str | None = None) -> Reservation:
    """One whole guarded call: reserve the worst case, settle the actual cost."""
    info = call_info(prompt_hash=prompt_hash, prompt_text=prompt_text)
    reservation = reserve_call(budget, Decimal(worst_usd), call=info)
    settle(reservation, actual_usd)
    return reservation


def worker(*args: str) -> subprocess.Popen[str]:
    """Start ``ledger_worker.py`` with ``args`` in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen([sys.executable, str(WORKER), *args], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def start_together(processes: list[subprocess.Popen[str]]) -> list[Any]:
    """Let worker processes that printed ``ready`` go at once; their JSON summaries, in order."""
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [process.communicate(timeout=120) for process in processes]
    for process, (_, errors) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, errors
    return [json.loads(out) for out, _ in outputs]
