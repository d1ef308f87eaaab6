"""Escalate model size only on failure: try the cheap model, check its JSON, escalate if bad.

Runs offline: ``make_client()`` answers from spendguard's provider emulator (or, when that is
not installed, a tiny mock transport written below), so no key and no network are needed.
Swap in ``spendguard.OpenAI(budget=budget)`` to run it against the real API.

    .venv/bin/python examples/cascade.py
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pydantic

import spendguard
from spendguard.testing import Emulator

MODELS = ["gpt-4o", "gpt-4o-mini"]  # any order: the cascade tries the cheapest first
BASE_URL = "https://api.openai.com/v1"
TICKETS = [
    "Refund please",
    "I was charged twice for my March invoice and the second charge is still pending.",
    "Our SSO login fails for every user since this morning; the error says 'invalid issuer'.",
    "Please cancel the add-on seats we bought by mistake last week and credit the account.",
    "The export to CSV drops every row after the first 10,000; we need the full data today.",
    "Can you move our workspace to the EU region before the audit at the end of the month?",
]


class Triage(pydantic.BaseModel):
    """What a passing reply must parse into."""

    team: str
    priority: int


def answer(model: str, ticket: str) -> str:
    """The offline stand-in for the models: the small one drops the priority on long tickets."""
    if model == "gpt-4o-mini" and len(ticket) > 20:
        return '{"team": "billing"}'
    return json.dumps({"team": "billing" if "charge" in ticket else "support", "priority": 2})


def _last_user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"]).removeprefix("Triage as JSON: ")


def _offline_transport() -> httpx2.BaseTransport:
    """spendguard's provider emulator (offline, labelled), answering with the stand-in."""
    return Emulator(respond=lambda prompt: answer(prompt.model, _last_user_text(
        dict(prompt.body)))).transport()


def make_client(budget: spendguard.Budget | None = None) -> openai.OpenAI:
    """An OpenAI client answered offline; guarded by ``budget`` when spendguard has clients."""
    options: dict[str, Any] = {"api_key": "offline", "base_url": BASE_URL, "max_retries": 0,
                               "http_client": httpx2.Client(transport=_offline_transport())}
    guarded = getattr(spendguard, "OpenAI", None) if budget is not None else None
    if guarded is not None:
        return guarded(budget=budget, **options)  # type: ignore[no-any-return]
    return openai.OpenAI(**options)


def main() -> None:
    budget = spendguard.Budget("0.05", ledger="memory://")
    client = make_client(budget)
    # Learning per task: once the small model has failed most triage tickets, skip it.
    learning = spendguard.Learning(min_tries=3, skip_below=0.5, explore=0.0)
    for ticket in TICKETS:
        request = {"messages": [{"role": "user", "content": f"Triage as JSON: {ticket}"}],
                   "max_tokens": 60}
        result = spendguard.cascade(client, request, models=MODELS, check=Triage,
                                    task="triage", learning=learning, budget=budget)
        print(f"{ticket[:50]!r:54} -> {result.value} by {result.model}")
        print(result.report())
    savings = learning.savings("triage")
    print(f"\n{savings.runs} tickets: ${savings.cost_usd:.6f} spent, "
          f"${savings.baseline_usd:.6f} if always {MODELS[0]}, saved {savings.saved_fraction:.0%}")


if __name__ == "__main__":
    main()
