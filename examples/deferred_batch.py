"""Deferrable work through the batch APIs: half price, budgeted, nothing lost.

    .venv/bin/python examples/deferred_batch.py

Offline (no API key set) it runs against the emulator on an emulated clock, so the batches'
hours pass at once; with OPENAI_API_KEY, ANTHROPIC_API_KEY and GEMINI_API_KEY set it uses the
real APIs (real money, within the $1 budget, and real waiting: batches take minutes to hours).
"""

from __future__ import annotations

import os
from datetime import timedelta
from decimal import Decimal
from typing import Any

import _client
import httpx2

import spendguard
from spendguard import Polling, format_usd
from spendguard.testing import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Emulator, ManualClock

TICKETS = [
    "My invoice shows two charges for the same month.",
    "The export button does nothing in Firefox.",
    "How do I move my account to another email address?",
    "The mobile app logs me out every few minutes.",
    "Can I get a refund for an annual plan after two weeks?",
    "Search results ignore the date filter.",
    "Two-factor codes arrive after they have expired.",
    "The API returns 429 although we are under our quota.",
]


def clients(budget: spendguard.Budget) -> tuple[Any, Any, Any, Polling]:
    """Real clients when every key is set; else the emulator on a clock that runs at will."""
    if all(os.environ.get(key) for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                           "GEMINI_API_KEY")):
        return (spendguard.OpenAI(budget=budget), spendguard.Anthropic(budget=budget),
                spendguard.Gemini(budget=budget), Polling())
    clock = ManualClock()
    # A batch takes three emulated hours here, so the deadline rescue below has work to do.
    emulator = Emulator(clock=clock, seed=1, reply_tokens=120, batch_completion_s=3 * 3600)
    http = httpx2.Client(transport=emulator.transport())
    return (spendguard.OpenAI(api_key="emulated", base_url=OPENAI_BASE_URL, http_client=http,
                              budget=budget),
            spendguard.Anthropic(api_key="emulated", base_url=ANTHROPIC_BASE_URL,
                                 http_client=http, budget=budget),
            spendguard.Gemini(api_key="emulated", http_options=emulator.gemini_http_options(),
                              budget=budget),
            Polling.manual(clock, progress=None))


def ticket(text: str) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "max_tokens": 200,
            "messages": [{"role": "system", "content": "Summarise the ticket in one line and "
                                                       "name the team that should own it."},
                         {"role": "user", "content": text}]}


def main() -> None:
    print(f"calls go to: {_client.where()}")
    budget = spendguard.Budget("1.00", scope="example:batch", ledger=_client.ledger_url())
    openai_client, anthropic_client, gemini_client, polling = clients(budget)

    # 1. Many requests at once: reserved at batch prices, submitted as one OpenAI batch.
    run = spendguard.batch([ticket(t) for t in TICKETS * 5], client=openai_client,
                           polling=polling)
    print(f"submitted {len(TICKETS) * 5} requests as {len(run.job_ids)} batch job(s); "
          f"worst case reserved {format_usd(run.worst_usd)}")
    results = run.results()
    paid = sum((r.cost_usd for r in results), Decimal(0))
    ordinary = sum((r.standard_usd for r in results), Decimal(0))
    first = results[0].response.choices[0].message.content
    print(f"first summary: {first[:70]}...")
    print(f"batch cost {format_usd(paid)}; the same tokens as ordinary calls "
          f"{format_usd(ordinary)}; saved {format_usd(ordinary - paid)} "
          f"({(ordinary - paid) / ordinary:.0%}), "
          f"{format_usd((ordinary - paid) / len(results) * 1000)} per 1,000 tickets")

    # 2. The ordinary call, marked deferrable: handles now, results when someone waits.
    deferred = anthropic_client.deferred(polling=polling)
    handles = [deferred.messages.create(model="claude-haiku-4-5", max_tokens=150,
                                        messages=[{"role": "user", "content": f"Reply to: {t}"}])
               for t in TICKETS[:3]]
    replies = [h.result() for h in handles]  # anthropic.types.Message, as messages.create gives
    outcomes = [h.outcome() for h in handles]  # the same results, with route and cost
    saved = sum((o.savings_usd for o in outcomes), Decimal(0))
    print(f"{len(replies)} deferred Anthropic replies, e.g. {replies[0].content[0].text[:50]}...;"
          f" saved {format_usd(saved)} of "
          f"{format_usd(sum((o.standard_usd for o in outcomes), Decimal(0)))}")

    # 3. A deadline the batch would miss: at the deadline minus 10 minutes, what the batch has
    #    not finished is cancelled and sent as ordinary calls (full price, still budgeted).
    urgent = spendguard.batch([ticket(t) for t in TICKETS[:4]], client=openai_client,
                              deadline=timedelta(hours=1), fallback=True, polling=polling)
    rescued = urgent.results()
    print(f"deadline in 1 hour: routes {[r.route for r in rescued]}, cost "
          f"{format_usd(sum((r.cost_usd for r in rescued), Decimal(0)))} at full price")

    # 4. Gemini Batch Mode: the generate_content arguments, half price, one batch per model.
    gemini = spendguard.batch(
        [{"model": "gemini-2.5-flash", "contents": f"Summarise in one line: {t}",
          "config": {"max_output_tokens": 120, "thinking_config": {"thinking_budget": 0}}}
         for t in TICKETS], client=gemini_client, polling=polling)
    answers = gemini.results()
    paid = sum((r.cost_usd for r in answers), Decimal(0))
    ordinary = sum((r.standard_usd for r in answers), Decimal(0))
    print(f"Gemini batch of {len(answers)}: e.g. {answers[0].response.text[:50]}...; cost "
          f"{format_usd(paid)} instead of {format_usd(ordinary)} "
          f"({(ordinary - paid) / ordinary:.0%} saved)")
    print(f"budget: {format_usd(budget.spent)} spent of $1.00, "
          f"{format_usd(budget.reserved)} still reserved")
    print("jobs stay in the ledger: `spendguard batches list --ledger <url>` shows them")


if __name__ == "__main__":
    main()
