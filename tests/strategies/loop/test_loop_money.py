"""The loop guard's money stop: decided with the worst case the guarded client reserves, and a
refusal inside a step ends the loop cleanly; findings that differ only in numbers are repeats."""

from __future__ import annotations

from decimal import Decimal

import pytest
import respx

import spendguard
from spendguard import StopReason, Usage, cost
from tests.cascade_helpers import IN_TOKENS, OPENAI_CHAT, Script

MODEL = "gpt-4o"
MAX_TOKENS = 1000
ONE_STEP = cost(MODEL, Usage(input_tokens=IN_TOKENS, output_tokens=5)).total


def ask(client: spendguard.OpenAI) -> object:
    return client.chat.completions.create(
        model=MODEL, max_tokens=MAX_TOKENS, messages=[{"role": "user", "content": "go on"}])


def guarded(limit_usd: Decimal) -> tuple[spendguard.Budget, spendguard.OpenAI]:
    budget = spendguard.Budget(limit_usd, ledger="memory://", warn_at=None)
    return budget, spendguard.OpenAI(api_key="test", max_retries=0, budget=budget)


def worst_case_of_one_call(budget: spendguard.Budget) -> Decimal:
    return max(record.estimated_usd for record in budget.ledger.records(scope=budget.scope))


@respx.mock
def test_the_guard_stops_before_a_step_whose_worst_case_the_budget_would_refuse() -> None:
    respx.post(OPENAI_CHAT).mock(side_effect=Script({MODEL: "still working"}).responder(
        OPENAI_CHAT))
    probe, probe_client = guarded(Decimal("1"))
    ask(probe_client)
    worst = worst_case_of_one_call(probe)
    assert worst > 10 * ONE_STEP  # output at its 1000-token cap, reply 5 tokens
    # Room for three steps' actual costs under one worst case: the fourth call would be
    # refused, though its actual cost would fit.
    budget, client = guarded(worst + ONE_STEP * 5 / 2)
    guard = spendguard.loop(budget=budget, max_steps=20)
    for step in guard:  # not entered: nothing may escape anyway
        step.record(ask(client))
    assert guard.steps == 3
    assert guard.stop_reason is StopReason.BUDGET
    assert guard.stopped is not None and guard.stopped.scope == budget.scope
    assert guard.stopped.spent_usd == budget.spent == 3 * ONE_STEP
    assert guard.stopped.left_usd == budget.remaining
    assert f"budget {budget.scope}" in guard.stop_detail
    assert "worst case projected" in guard.stop_detail
    assert guard.step_peaks_usd == [worst] * 3


@respx.mock
def test_a_refusal_inside_an_entered_loop_ends_it_with_the_budget_named() -> None:
    route = respx.post(OPENAI_CHAT).mock(
        side_effect=Script({MODEL: "still working"}).responder(OPENAI_CHAT))
    budget, client = guarded(ONE_STEP * 3)  # less than one call's worst case
    with spendguard.loop(budget=budget, max_steps=5) as guard:
        for step in guard:
            step.record(ask(client))
    assert route.call_count == 0  # refused before anything was sent
    assert guard.stop_reason is StopReason.BUDGET
    assert guard.steps == 1  # the refused step is counted, at no cost
    assert guard.spent_usd == 0
    stop = guard.stopped
    assert stop is not None and stop.scope == budget.scope
    assert stop.spent_usd == 0 and stop.left_usd == ONE_STEP * 3
    assert f"budget {budget.scope} refused a call needing $" in stop.detail
    assert list(budget.ledger.records(scope=budget.scope)) == []


@respx.mock
def test_a_refusal_inside_an_entered_step_ends_the_loop_after_that_step() -> None:
    respx.post(OPENAI_CHAT).mock(side_effect=Script({MODEL: "still working"}).responder(
        OPENAI_CHAT))
    budget, client = guarded(ONE_STEP * 3)
    guard = spendguard.loop(budget=budget, max_steps=5)
    reached_after_the_call = []
    for step in guard:
        with step:
            step.record(ask(client))
            reached_after_the_call.append(step.index)
    assert reached_after_the_call == []
    assert guard.stop_reason is StopReason.BUDGET and guard.steps == 1


def test_an_entered_loop_lets_other_exceptions_through() -> None:
    with pytest.raises(ValueError, match="not money"), spendguard.loop(max_steps=3) as guard:
        for _ in guard:
            raise ValueError("not money")
    assert guard.stop_reason is None


def test_findings_differing_only_in_times_numbers_and_ids_are_nothing_new() -> None:
    guard = spendguard.loop(patience=2, max_steps=10)
    reports = [
        "service X down (checked 10:01)",
        "Service X down (checked 10:02)",
        "service X  down (checked 10:03:17)",
        "service X down (checked 2026-05-01T10:04:00Z), trace 550e8400-e29b-41d4-a716-446655440000",
    ]
    new_counts = [step.found([reports[step.index]]) for step in guard]
    assert new_counts == [1, 0, 0]
    assert guard.stop_reason is StopReason.STALLED


def test_an_exact_key_counts_every_changed_timestamp_as_new() -> None:
    guard = spendguard.loop(patience=2, max_steps=4, key=spendguard.exact_finding)
    assert [step.found([f"service X down (checked 10:0{step.index})"]) for step in guard] == [
        1, 1, 1, 1]
    assert guard.stop_reason is StopReason.STEPS


def test_a_key_function_decides_what_makes_two_findings_the_same() -> None:
    guard = spendguard.loop(patience=1, max_steps=5, key=lambda item: item["service"])
    found = [step.found([{"service": "X", "checked": step.index}]) for step in guard]
    assert found == [1, 0]


def test_an_item_similarity_threshold_counts_reworded_findings_as_seen() -> None:
    texts = ["the payments service is down in eu-west",
             "the payments service is down in eu-west again",
             "the search service is slow", "the search service is slow"]
    guard = spendguard.loop(patience=2, max_steps=4, item_similarity=0.75)
    assert [step.found([texts[step.index]]) for step in guard] == [1, 0, 1, 0]
    by_key_only = spendguard.loop(patience=2, max_steps=4)
    assert [step.found([texts[step.index]]) for step in by_key_only] == [1, 1, 1, 0]


def test_repeated_outputs_with_new_timestamps_stall_the_loop() -> None:
    guard = spendguard.loop(patience=2, max_steps=10)
    for step in guard:
        step.observe(f"All 12 checks green at 10:0{step.index}, run id 8f3a9b2c1{step.index}")
    assert guard.steps == 3
    assert guard.stop_reason is StopReason.STALLED


def test_normalisation_keeps_digits_that_name_things() -> None:
    assert spendguard.normalise_finding("gpt-4o beats p10 (v1.2)") == "gpt-4o beats p10 (v1.2)"
    assert spendguard.normalise_finding("took 120ms, 3 retries") == "took <n>ms, <n> retries"


def test_bad_novelty_options_name_the_field() -> None:
    with pytest.raises(spendguard.ConfigError, match="item_similarity"):
        spendguard.loop(item_similarity=1.5)
    with pytest.raises(spendguard.ConfigError, match="key"):
        spendguard.loop(key="service")  # type: ignore[arg-type]
