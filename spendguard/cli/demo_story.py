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
from spendguard._budget.thresholds import ThresholdCrossed
from spendguard._core.money import format_usd
from spendguard._core.private_files import make_private_dir
from spendguard.testing import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Emulator

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
         f"{format_usd(RUN_LIMIT_USD)}; each step may write {STEP_OUTPUT_CAP} tokens")
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


FANOUT_MODEL = "claude-sonnet-4-5"
FANOUT_REQUESTS = 20


def _document() -> str:
    """A ~3,000-token shared document (the same text every run)."""
    clauses = [f"Clause {n}: the supplier shall deliver batch {n} within {n % 9 + 2} business "
               f"days, at the unit price agreed in schedule {n % 5 + 1}, subject to the "
               "inspection terms of section 4." for n in range(1, 121)]
    return "CONTRACT\n" + "\n".join(clauses)


def fanout(emulator: Emulator, project: spendguard.Budget, echo: Echo) -> None:
    """Many questions over one shared document: planned, approved, then sent in order."""
    document = _document()
    requests = [{"model": FANOUT_MODEL, "max_tokens": 200,
                 "system": [{"type": "text", "text": "Answer from the contract below.\n\n"
                             + document}],
                 "messages": [{"role": "user", "content": f"Summarise clause {n}."}]}
                for n in range(1, FANOUT_REQUESTS + 1)]
    naive = spendguard.plan(requests, provider="anthropic")
    ordered = spendguard.plan(requests, provider="anthropic", cache_order=True)
    echo(f"2. A fan-out of {FANOUT_REQUESTS} questions over one "
         f"{naive.rows[0].input_tokens:,}-token contract ({FANOUT_MODEL}), estimated "
         "before anything is sent")
    echo(f"   as written:            expected {format_usd(naive.expected_usd)}, worst "
         f"{format_usd(naive.worst_usd)}")
    echo(f"   ordered for the cache: expected {format_usd(ordered.expected_usd)}, worst "
         f"{format_usd(ordered.worst_usd)} ({ordered.expected_hit_rate:.0%} of input from "
         "the cache)")
    savings = ordered.batch_savings_usd
    if savings is not None:
        echo(f"   deferred to the batch API it would cost {format_usd(savings)} less")
    fan_budget = project.child("fanout:contract", limit_usd=ordered.expected_usd * 2)
    client = _guarded_anthropic(emulator, fan_budget)

    def approve(plan: Any) -> bool:
        echo(f"   approval asked: worst case {format_usd(plan.worst_usd)} > "
             f"{format_usd(fan_budget.remaining)} left in its budget -> approved (expected "
             "cost fits)")
        return bool(plan.expected_usd <= fan_budget.remaining)

    result = ordered.run(client, concurrency=4, approve=approve, progress=False)
    cache = result.cache
    echo(f"   sent: {len(result.outcomes) - len(result.failures)} answered, "
         f"{len(result.failures)} failed; actual {format_usd(result.cost_usd)} against "
         f"{format_usd(ordered.expected_usd)} expected; cache hit {cache.hit_rate:.0%}")


def spend_report(url: str, echo: Echo) -> None:
    from spendguard._reporting.report.table import render_text  # noqa: PLC0415

    echo("3. Spend by model, budgets by scope, and estimates against actuals, from the ledger")
    text = render_text(spendguard.report_spend(url, by="model"))
    table = [line for line in text.splitlines()[2:] if line.strip()]
    echo("\n".join(f"   {line}" for line in table))
    echo("")


def export(url: str, work: Path, echo: Echo) -> Path:
    path = work / "spend-focus.csv"
    written = spendguard.export_spend(path, format="focus", ledger=url)
    ledger_total = spendguard.report_spend(url).total_usd
    same = "equals" if written.total_usd == ledger_total else "DIFFERS FROM"
    echo(f"4. FinOps FOCUS export written: {path}")
    echo(f"   {written.rows} rows, billed total {format_usd(written.total_usd)} {same} the "
         f"ledger's {format_usd(ledger_total)}")
    return path


def run_demo(*, ledger_url: str | None = None, out_dir: Path | None = None,
             echo: Echo = print) -> dict[str, Any]:
    """Run the demo; returns what it showed (for tests)."""
    work = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="spendguard-demo-"))
    make_private_dir(work)
    url = ledger_url or f"sqlite:///{work / 'ledger.db'}"
    emulator = Emulator(seed=7, reply_tokens=350)
    echo("spendguard demo — against the offline provider EMULATOR (no API key, no network;")
    echo("                  token counts and prices are real, the replies are not)")
    echo(f"ledger: {url}")
    echo("")
    project = spendguard.Budget("5", ledger=url, scope="project:demo")
    agent_loop(emulator, project, echo)
    echo("")
    fanout(emulator, project, echo)
    echo("")
    spend_report(url, echo)
    path = export(url, work, echo)
    return {"ledger": url, "dir": str(work), "requests": len(emulator.requests),
            "export": str(path)}
