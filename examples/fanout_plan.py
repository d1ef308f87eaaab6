"""Plan before fan-out: 50 questions about one 5,000-token contract, with and without ordering.

Runs offline against spendguard's provider emulator (``spendguard.testing``): no key, no
network. The emulator counts tokens with spendguard's own counters and simulates Anthropic's
prompt cache, so the hit rates below are measured from the usage it returns, not assumed.
Swap ``emulated_client`` for ``spendguard.Anthropic(budget=budget)`` to run it for real.

    .venv/bin/python examples/fanout_plan.py
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx2

import spendguard
from spendguard.testing import ANTHROPIC_BASE_URL, Emulator, ManualClock

MODEL = "claude-sonnet-4-6"
CONTRACT = " ".join(f"Clause {i}: the supplier delivers item {i} to site {i % 7} within "
                    f"{i % 30 + 1} days." for i in range(330))


def requests() -> list[dict[str, Any]]:
    """How people write it: the question first, then the document it is about."""
    return [{"model": MODEL, "max_tokens": 150, "system": "You are a contracts analyst.",
             "messages": [{"role": "user", "content": [
                 {"type": "text", "text": f"Within how many days is item {n} delivered?"},
                 {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                 "data": CONTRACT}}]}]}
            for n in range(50)]


def emulated_client(budget: spendguard.Budget) -> spendguard.Anthropic:
    emulator = Emulator(clock=ManualClock())
    return spendguard.Anthropic(api_key="emulated", base_url=ANTHROPIC_BASE_URL,
                                http_client=httpx2.Client(transport=emulator.transport()),
                                budget=budget)


def usd(amount: Decimal) -> str:
    return f"${amount:.4f}"


def approve(plan: spendguard.Plan) -> bool:
    """Asked only when the worst case exceeds what is left; here: go if the expected fits."""
    left = plan.budget_left_usd or Decimal(0)
    verdict = plan.expected_usd <= left
    print(f"  approval asked: worst case ${plan.worst_usd:.4f} > ${left:.4f} left; expected "
          f"${plan.expected_usd:.4f} -> {'approved' if verdict else 'declined'}")
    return verdict


def main() -> None:
    budget = spendguard.Budget("2.50", ledger="memory://fanout-example")
    rows = []
    for ordered in (False, True):
        print(f"\n== {'with' if ordered else 'without'} cache ordering ==")
        # Moving the document before the question changes the order of what was written,
        # so it is opt-in (reorder_content=True) and the plan's notes say it was done.
        order = spendguard.CacheOrder(reorder_content=True) if ordered else False
        plan = spendguard.plan(requests(), cache_order=order, concurrency=8)
        print(plan.summary())
        result = plan.run(emulated_client(budget), approve=approve, progress=False)
        print(result.report())
        rows.append((ordered, plan, result))
    print(f"\n{'':<12}{'planned':>10}{'worst':>10}{'measured':>10}{'hit rate':>10}")
    for ordered, plan, result in rows:
        print(f"{'ordered' if ordered else 'as written':<12}{usd(plan.expected_usd):>10}"
              f"{usd(plan.worst_usd):>10}{usd(result.cost_usd):>10}"
              f"{result.cache.hit_rate:>10.1%}")
    print(f"budget: ${budget.spent:.4f} spent of ${budget.limit_usd}")
    stats = spendguard.cache_stats(budget.ledger, tag=f"plan.id={rows[1][1].id}")
    print(f"ledger, ordered plan: {stats}")


if __name__ == "__main__":
    main()
