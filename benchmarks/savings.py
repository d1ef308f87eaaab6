"""Savings on a reference workload: naive use, spendguard's strategies, and a cost floor.

Usage::

    .venv/bin/python benchmarks/savings.py [--quick]

The workload, run against the offline emulator (billed by its usage, priced by spendguard's
table), has five parts:

- an agent loop: 12 turns on claude-sonnet-4-6, each resending a 2,000-token system prompt
  and the growing conversation (naive: a plain guarded client; spendguard: ``cache_order=True``,
  which marks cache breakpoints);
- support tickets with a volatile system prompt: 10 tickets whose ~2,000-token system prompt
  starts with the current time and a trace id, in the same paragraph as the instructions
  (naive: a plain guarded client; spendguard: ``cache_order=True``, whose default splits the
  volatile sentence out and places it after the stable text, still in the system prompt);
- a fan-out with shared context: 40 questions about one ~5,000-token document, written
  question-first (naive: sent one by one; spendguard: ``spendguard.plan`` with
  ``CacheOrder(reorder_content=True)`` then ``Plan.run``, which puts the document first — an
  opt-in move, reported in the plan's notes — and warms the cache before fanning out);
- deferrable work: 30 summaries nobody waits for (naive: ordinary calls; spendguard:
  ``spendguard.batch``, at the batch discount);
- a cascade: 30 questions (naive: always the strong model, claude-opus-4-6; spendguard:
  ``spendguard.cascade`` from claude-haiku-4-5 with a regex check; the emulated weak model
  fails it on a fixed 30% of questions, so this part is a simulation; see cascade_mmlu.py for
  real correctness labels).

The floor is what no plan can go below with the same tokens: for the cached parts, the
spendguard run's tokens with cache writes priced as plain input (no write premium); for the
deferrable part, the naive tokens at batch prices; for the cascade, an oracle that asks the
weak model only where it passes. A part whose feature is missing from this checkout prints
"not built".
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx2
from corpus import text
from harness import add_quick, markdown_table

import spendguard
from spendguard._costing.usage import Usage
from spendguard.testing import ANTHROPIC_BASE_URL, Emulator, ManualClock, Prompt

AGENT_MODEL = "claude-sonnet-4-6"
WEAK, STRONG = "claude-haiku-4-5", "claude-opus-4-6"
DOCUMENT = text(3800, seed=11)
TOOLS = [{"name": f"tool_{i}", "description": text(60, seed=200 + i),
          "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}
         for i in range(6)]
AGENT_SYSTEM = "You are an operations agent. Use the tools. " + text(1200, seed=12)


@dataclass(frozen=True, slots=True)
class Part:
    """One part's cost three ways (USD); None where the strategy is not built."""

    name: str
    naive_usd: Decimal
    spendguard_usd: Decimal | None
    floor_usd: Decimal | None
    how: str


def weak_fails(prompt: Prompt) -> bool:
    digest = hashlib.sha256(prompt.last_user_text.encode()).digest()
    return prompt.model == WEAK and digest[0] % 10 < 3


def respond(prompt: Prompt) -> str:
    if prompt.model in (WEAK, STRONG):
        return "I am not sure." if weak_fails(prompt) else "ANSWER: approved."
    return "Done: " + text(40, seed=len(prompt.last_user_text))


class World:
    """A fresh emulator on a manual clock, and guarded clients with one budget each."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.emulator = Emulator(clock=self.clock, respond=respond, batch_completion_s=600.0)

    def client(self, **options: Any) -> tuple[Any, spendguard.Budget]:
        budget = spendguard.Budget("1000", ledger="memory://", warn_at=None)
        client = spendguard.Anthropic(
            api_key="k", base_url=ANTHROPIC_BASE_URL, max_retries=0, budget=budget,
            http_client=httpx2.Client(transport=self.emulator.transport()), **options)
        return client, budget


def _records_usage(budget: spendguard.Budget) -> list[tuple[str, dict[str, int]]]:
    return [(r.model, dict(r.tokens)) for r in budget.ledger.records() if r.status == "ok"]


def _floor_cached(budget: spendguard.Budget) -> Decimal:
    total = Decimal(0)
    for model, tokens in _records_usage(budget):
        writes = sum(n for k, n in tokens.items() if k.startswith("cache_write"))
        usage = Usage(input_tokens=tokens.get("input", 0) + writes,
                      cache_read_tokens=tokens.get("cache_read", 0),
                      output_tokens=tokens.get("output", 0))
        total += spendguard.cost(model, usage).total
    return total


def agent_loop(turns: int) -> Part:
    def run(**options: Any) -> spendguard.Budget:
        client, budget = World().client(**options)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Reconcile the invoices."}]
        for turn in range(turns):
            reply = client.messages.create(model=AGENT_MODEL, max_tokens=300,
                                           system=AGENT_SYSTEM, tools=TOOLS, messages=messages)
            messages += [{"role": "assistant", "content": reply.content[0].text},
                         {"role": "user",
                          "content": f"Tool result {turn}: " + text(150, seed=300 + turn)}]
        return budget

    naive = run()
    try:
        guarded = run(cache_order=True)
    except TypeError:
        return Part("agent loop", naive.spent, None, None, "not built (cache_order=)")
    return Part("agent loop", naive.spent, guarded.spent, _floor_cached(guarded),
                f"{turns} turns; cache_order=True")


def ticket_system(n: int) -> str:
    return (f"Current time: 2026-11-30T09:{n:02d}:41Z, trace req_{n:04d}c0ffee11. You are the "
            f"support agent. " + AGENT_SYSTEM)


def tickets(count: int) -> Part:
    def run(**options: Any) -> spendguard.Budget:
        client, budget = World().client(**options)
        for n in range(count):
            client.messages.create(model=AGENT_MODEL, max_tokens=200, system=ticket_system(n),
                                   messages=[{"role": "user", "content": f"Ticket {n}: "
                                              + text(80, seed=600 + n)}])
        return budget

    naive = run()
    guarded = run(cache_order=True)
    return Part("tickets, volatile system", naive.spent, guarded.spent, _floor_cached(guarded),
                f"{count} tickets; cache_order=True")


def fanout_bodies(count: int) -> list[dict[str, Any]]:
    return [{"model": AGENT_MODEL, "max_tokens": 200,
             "system": "You are a contracts analyst. Answer in one sentence.",
             "messages": [{"role": "user", "content": [
                 {"type": "text", "text": f"Question {i}: who delivers item {i}?"},
                 {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                 "data": DOCUMENT}}]}]}
            for i in range(count)]


def fanout(count: int) -> Part:
    naive_client, naive = World().client()
    for body in fanout_bodies(count):
        naive_client.messages.create(**body)
    if not hasattr(spendguard, "plan"):
        return Part("fan-out, shared context", naive.spent, None, None, "not built (plan)")
    client, guarded = World().client()
    plan = spendguard.plan(fanout_bodies(count),
                           cache_order=spendguard.CacheOrder(reorder_content=True))
    plan.run(client, concurrency=8, progress=False)
    return Part("fan-out, shared context", naive.spent, guarded.spent, _floor_cached(guarded),
                f"{count} requests; plan(CacheOrder(reorder_content=True)).run")


def deferrable_requests(count: int) -> list[dict[str, Any]]:
    return [{"model": AGENT_MODEL, "max_tokens": 150, "messages": [
        {"role": "user", "content": f"Summarise report {i}: " + text(600, seed=400 + i)}]}
            for i in range(count)]


def deferrable(count: int) -> Part:
    naive_client, naive = World().client()
    for body in deferrable_requests(count):
        naive_client.messages.create(**body)
    floor = sum((spendguard.cost(model, Usage(input_tokens=t.get("input", 0),
                                              output_tokens=t.get("output", 0)),
                                 batch=True).total
                 for model, t in _records_usage(naive)), Decimal(0))
    batch: Callable[..., Any] | None = getattr(spendguard, "batch", None)
    if batch is None:
        return Part("deferrable work", naive.spent, None, floor, "not built (batch)")
    from spendguard._strategies.batch import Polling

    world = World()
    client, guarded = world.client()
    run = batch(deferrable_requests(count), client=client,
                polling=Polling.manual(world.clock, progress=None))
    run.results()
    return Part("deferrable work", naive.spent, guarded.spent, floor,
                f"{count} requests; spendguard.batch")


def cascade(count: int) -> Part:
    questions = [f"Should invoice {i} be approved? " + text(120, seed=500 + i)
                 for i in range(count)]
    naive_client, naive = World().client()
    for question in questions:
        naive_client.messages.create(model=STRONG, max_tokens=100,
                                     messages=[{"role": "user", "content": question}])
    client, guarded = World().client()
    floor = Decimal(0)
    for question in questions:
        result = spendguard.cascade(client, {"max_tokens": 100, "messages": [
            {"role": "user", "content": question}]}, models=[WEAK, STRONG],
            check=spendguard.check_matches(r"^ANSWER:"), keep_order=True)
        floor += result.attempts[-1].call_usd  # the oracle pays only for the tier that passes
    return Part("cascade", naive.spent, guarded.spent, floor,
                f"{count} questions; {WEAK} → {STRONG}, ~30% escalate")


def _usd(value: Decimal | None) -> str:
    return "not built" if value is None else f"${value:.4f}"


def _saving(naive: Decimal, value: Decimal | None) -> str:
    return "—" if value is None or not naive else f"{1 - value / naive:.0%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add_quick(parser)
    args = parser.parse_args(argv)
    turns, fan, deferred, questions = (3, 4, 3, 4) if args.quick else (12, 40, 30, 30)
    parts = [agent_loop(turns), tickets(3 if args.quick else 10), fanout(fan),
             deferrable(deferred), cascade(questions)]
    rows = [[p.name, p.how, _usd(p.naive_usd), _usd(p.spendguard_usd), _usd(p.floor_usd),
             _saving(p.naive_usd, p.spendguard_usd), _saving(p.naive_usd, p.floor_usd)]
            for p in parts]
    if all(p.spendguard_usd is not None and p.floor_usd is not None for p in parts):
        naive = sum((p.naive_usd for p in parts), Decimal(0))
        guarded = sum((p.spendguard_usd or Decimal(0) for p in parts), Decimal(0))
        floor = sum((p.floor_usd or Decimal(0) for p in parts), Decimal(0))
        rows.append(["whole workload", "", _usd(naive), _usd(guarded), _usd(floor),
                     _saving(naive, guarded), _saving(naive, floor)])
    print("Savings on the reference workload (emulator bills, spendguard's prices)\n")
    print(markdown_table(["part", "spendguard strategy", "naive", "spendguard", "floor",
                          "spendguard saves", "floor saves"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
