"""``spendguard demo``: the whole job in a few seconds, offline, against the provider emulator.

Everything here goes through the public API a user would call; the emulator stands in for the
providers (it says so), and the ledger is a fresh SQLite file unless one is given.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx2

import spendguard
from spendguard.money import format_usd
from spendguard.testing import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Emulator
from spendguard.thresholds import ThresholdCrossed

__all__ = ["run_demo"]

Echo = Callable[[str], None]

AGENT_MODEL = "gpt-4o"
RUN_LIMIT_USD = Decimal("0.05")
STEP_OUTPUT_CAP = 400


def _guarded_openai(emulator: Emulator, budget: spendguard.Budget) -> Any:
    return spendguard.OpenAI(api_key="emulated", base_url=OPENAI_BASE_URL, max_retries=0,
                             budget=budget,
                             http_client=httpx2.Client(transport=emulator.transport()))


def _guarded_anthropic(emulator: Emulator, budget: spendguard.Budget) -> Any:
    return spendguard.Anthropic(api_key="emulated", base_url=ANTHROPIC_BASE_URL, max_retries=0,
                                budget=budget,
                                http_client=httpx2.Client(transport=emulator.transport()))


def agent_loop(emulator: Emulator, project: spendguard.Budget, echo: Echo) -> None:
    """An agent whose history grows each step, under a per-run budget: warn, then stop."""
    warnings_seen: list[ThresholdCrossed] = []
    run = project.child("run:research-1", limit_usd=RUN_LIMIT_USD,
                        on_warn=warnings_seen.append)
    client = _guarded_openai(emulator, project)
    echo(f"1. An agent loop ({AGENT_MODEL}) under a per-run budget of "
         f"{format_usd(RUN_LIMIT_USD, places=2)}; each step may write {STEP_OUTPUT_CAP} tokens")
    history: list[dict[str, str]] = [
        {"role": "system", "content": "You are a research agent. Find sources."}]
    step = 0
    with run:
        while step < 50:
            step += 1
            history.append({"role": "user", "content": f"Step {step}: find more sources."})
            sent_before = len(emulator.requests)
            try:
                reply = client.chat.completions.create(model=AGENT_MODEL, messages=history,
                                                       max_tokens=STEP_OUTPUT_CAP)
            except spendguard.BudgetExceeded as refused:
                sent = len(emulator.requests) - sent_before
                echo(f"   step {step:>2}  REFUSED before sending: worst case "
                     f"{format_usd(refused.estimate_usd)}, "
                     f"{format_usd(refused.remaining_usd)} left in {refused.scope!r}")
                echo(f"            requests that reached the provider for this step: {sent}")
                break
            history.append({"role": "assistant", "content": reply.choices[0].message.content
                            or ""})
            line = (f"   step {step:>2}  {format_usd(run.spent)} spent "
                    f"({run.spent / RUN_LIMIT_USD:.0%} of the run budget)")
            echo(line)
            for crossed in warnings_seen:
                echo(f"            WARNING: {crossed.scope!r} passed "
                     f"{crossed.warn_at:.0%} of its limit")
            warnings_seen.clear()


def run_demo(*, ledger_url: str | None = None, out_dir: Path | None = None,
             echo: Echo = print) -> dict[str, Any]:
    """Run the demo; returns what it showed (for tests)."""
    work = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="spendguard-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    url = ledger_url or f"sqlite:///{work / 'ledger.db'}"
    emulator = Emulator(seed=7, reply_tokens=350)
    echo("spendguard demo — against the offline provider EMULATOR (no API key, no network;")
    echo("                  token counts and prices are real, the replies are not)")
    echo(f"ledger: {url}")
    echo("")
    project = spendguard.Budget("5", ledger=url, scope="project:demo")
    agent_loop(emulator, project, echo)
    echo("")
    return {"ledger": url, "dir": str(work), "requests": len(emulator.requests)}
