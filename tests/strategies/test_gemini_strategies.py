"""Plans, cascades and the loop guard with Gemini clients (google-genai), against the
emulator: requests written as generate_content's arguments or as the REST body."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from google.genai import types

import spendguard
from spendguard.testing import Emulator, Reply

NO_THINKING: dict[str, Any] = {"max_output_tokens": 60,
                               "thinking_config": {"thinking_budget": 0}}


def _client(emulator: Emulator, budget: spendguard.Budget) -> spendguard.Gemini:
    return spendguard.Gemini(api_key="emulated", http_options=emulator.gemini_http_options(),
                             budget=budget)


def _requests() -> list[dict[str, Any]]:
    sdk_style = [{"model": "gemini-2.5-flash", "contents": f"Summarise ticket {n}.",
                  "config": {**NO_THINKING, "system_instruction": "You triage tickets."}}
                 for n in range(2)]
    rest_style = {"model": "gemini-2.5-flash",
                  "contents": [{"role": "user", "parts": [{"text": "Summarise ticket 2."}]}],
                  "systemInstruction": {"parts": [{"text": "You triage tickets."}]},
                  "generationConfig": {"maxOutputTokens": 60,
                                       "thinkingConfig": {"thinkingBudget": 0}}}
    return [*sdk_style, rest_style]


def test_a_plan_of_gemini_requests_is_estimated_run_and_priced_like_the_ledger() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    plan = spendguard.plan(_requests(), cache_order=True)
    assert {row.provider for row in plan.rows} == {"gemini"}
    assert plan.worst_usd >= plan.expected_usd > 0
    result = plan.run(_client(emulator, budget))
    records = [r for r in budget.ledger.records() if r.status == "ok"]
    assert len(emulator.requests) == 3 and len(records) == 3
    assert result.cost_usd == sum((r.actual_usd for r in records), Decimal(0))
    assert all(r.provider == "gemini" and r.model == "gemini-2.5-flash" for r in records)
    # Each was sent as the REST body the SDK builds: the system instruction and the cap.
    assert all(sent.body["generationConfig"]["maxOutputTokens"] == 60
               for sent in emulator.requests)


def test_a_cascade_escalates_across_gemini_models_and_reads_their_replies() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    failed_once: list[str] = []

    def second_tier_passes(text: str) -> bool:
        failed_once.append(text)
        return len(failed_once) > 1

    result = spendguard.cascade(
        _client(emulator, budget), {"contents": "Classify: refund", "config": NO_THINKING},
        models=["gemini-2.5-pro", "gemini-2.5-flash"], check=second_tier_passes)
    assert [a.model for a in result.attempts] == ["gemini-2.5-flash", "gemini-2.5-pro"]
    assert all(text for text in failed_once)  # the reply's text was read
    records = list(budget.ledger.records())
    assert [r.model for r in records] == ["gemini-2.5-flash", "gemini-2.5-pro"]
    assert [a.cost_usd for a in result.attempts] == [r.actual_usd for r in records]


def test_the_loop_guard_records_a_gemini_reply_at_its_ledger_cost() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    client = _client(emulator, budget)
    guard = spendguard.loop(max_steps=2)
    spent = []
    for step in guard:
        spent.append(step.record(client.models.generate_content(
            model="gemini-2.5-flash", contents=f"Step {step.index}",
            config=types.GenerateContentConfig(**NO_THINKING))))
    assert guard.stop_reason is not None
    assert spent == [r.actual_usd for r in budget.ledger.records()]


def test_a_gemini_judge_checks_a_cascades_reply() -> None:
    emulator = Emulator(respond=lambda prompt: Reply(text="PASS: it is a refund."))
    budget = spendguard.Budget("1", ledger="memory://")
    judge = spendguard.check_judge("names the ticket's category", model="gemini-2.5-flash")
    result = spendguard.cascade(
        _client(emulator, budget), {"contents": "Classify: refund", "config": NO_THINKING},
        models=["gemini-2.5-flash"], check=judge)
    [attempt] = result.attempts
    assert attempt.verdict is not None and attempt.verdict.passed
    assert "names the ticket's category" in str(emulator.requests[1].body["contents"])
    answer, verdict = budget.ledger.records()
    assert attempt.verdict.cost_usd == verdict.actual_usd
    assert attempt.cost_usd == answer.actual_usd + verdict.actual_usd
