"""The loop guard: caps on steps, dollars and time; stalls; budgets; sub-agent shares."""

from __future__ import annotations

from decimal import Decimal

import openai
import pytest
import respx

import spendguard
from spendguard import ConfigError, LoopGuard, StopReason, Usage, cost
from tests.cascade_helpers import OPENAI_CHAT, Script


class FakeClock:
    """Seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class DrainingBudget:
    """A budget whose ``remaining`` the test spends down (what a guarded client does)."""

    def __init__(self, remaining: str) -> None:
        self.remaining = Decimal(remaining)


def run(guard: LoopGuard, costs: list[str] | None = None) -> int:
    steps = 0
    for step in guard:
        if costs is not None:
            step.spend(costs[step.index] if step.index < len(costs) else costs[-1])
        steps += 1
    return steps


def test_stops_after_max_steps_and_says_so() -> None:
    guard = spendguard.loop(max_steps=3)
    assert run(guard) == 3
    assert guard.stop_reason is StopReason.STEPS
    assert guard.stop_detail == "ran 3 of 3 steps"


def test_stops_before_a_step_projected_to_overrun_the_dollar_cap() -> None:
    guard = spendguard.loop(max_usd="1.00")
    # Steps grow by $0.10: after 0.10 + 0.20 + 0.30 = 0.60, the next is projected at 0.40 —
    # it fits exactly; after 1.00 nothing more fits.
    assert run(guard, ["0.10", "0.20", "0.30", "0.40", "0.50"]) == 4
    assert guard.spent_usd == Decimal("1.00")
    assert guard.stop_reason is StopReason.USD

    growing = spendguard.loop(max_usd="0.50")
    assert run(growing, ["0.10", "0.20", "0.30"]) == 2  # 0.30 spent, next projected 0.30
    assert "next step projected at $0.30" in growing.stop_detail


def test_first_step_estimate_can_stop_the_loop_before_it_starts() -> None:
    guard = spendguard.loop(max_usd="0.05", first_step_usd="0.10")
    assert run(guard) == 0
    assert guard.stop_reason is StopReason.USD


def test_stops_after_max_seconds_on_the_injected_clock() -> None:
    clock = FakeClock()
    guard = spendguard.loop(max_seconds=30, clock=clock)
    steps = 0
    for _ in guard:
        clock.now += 10
        steps += 1
    assert steps == 3
    assert guard.stop_reason is StopReason.TIME
    assert guard.elapsed_s == 30


def test_stops_when_no_new_items_for_patience_steps() -> None:
    found = [["a", "b"], ["b"], ["c"], ["a"], [], ["c"], ["d"]]
    guard = spendguard.loop(patience=3, max_steps=20)
    for step in guard:
        step.found(found[step.index])
    assert guard.steps == 6
    assert guard.stop_reason is StopReason.STALLED
    assert "3 steps in a row" in guard.stop_detail


def test_found_returns_the_number_of_new_items_even_for_dicts() -> None:
    guard = spendguard.loop(max_steps=1)
    for step in guard:
        assert step.found([{"url": "x", "n": 1}, {"n": 1, "url": "x"}, "y"]) == 2


def test_repeated_or_near_identical_outputs_count_as_no_progress() -> None:
    outputs = ["Searching for flights to Oslo.",
               "searching for flights to  Oslo.",           # same words: a repeat
               "Searching for cheap flights to Oslo.",       # near-identical at 0.8
               "Found 3 flights; the cheapest is $120."]
    guard = spendguard.loop(patience=2, similarity=0.8, max_steps=10)
    novel = []
    for step in guard:
        novel.append(step.observe(outputs[min(step.index, 3)]))
    assert novel == [True, False, False]
    assert guard.stop_reason is StopReason.STALLED


def test_new_output_resets_the_stall_and_silent_steps_are_neutral() -> None:
    guard = spendguard.loop(patience=2, max_steps=6)
    script = ["same", "same", None, "new", "new", None]
    for step in guard:
        text = script[step.index]
        if text is not None:
            step.observe(text)
    assert guard.stop_reason is StopReason.STEPS


def test_breaking_out_leaves_no_stop_reason_and_still_counts_the_step() -> None:
    guard = spendguard.loop(max_steps=10)
    for step in guard:
        step.spend("0.25")
        break
    assert guard.stop_reason is None
    assert guard.steps == 1
    assert guard.spent_usd == Decimal("0.25")


def test_budget_spending_is_read_from_the_budget_and_stops_the_loop() -> None:
    budget = DrainingBudget("1.00")
    guard = spendguard.loop(budget=budget)
    steps = 0
    for _ in guard:
        budget.remaining -= Decimal("0.30")  # what the guarded client charged this step
        steps += 1
    assert steps == 3
    assert guard.step_costs_usd == [Decimal("0.30")] * 3
    assert guard.stop_reason is StopReason.BUDGET
    assert "$0.10 left" in guard.stop_detail


def test_share_gives_a_sub_agent_a_fraction_of_what_is_left_and_charges_the_parent() -> None:
    parent = spendguard.loop(max_usd="1.00")
    for step in parent:
        step.spend("0.20")
        child = parent.share(0.5)
        assert child.max_usd == Decimal("0.40")
        for sub in child:
            sub.spend("0.15")
        assert child.stop_reason is StopReason.USD
        assert child.spent_usd == Decimal("0.30")
        break
    assert parent.spent_usd == Decimal("0.50")


def test_share_passes_on_the_time_left() -> None:
    clock = FakeClock()
    parent = spendguard.loop(max_seconds=60, clock=clock)
    for _ in parent:
        clock.now += 45
        child = parent.share("1")
        assert child.max_seconds == 15
        break


def test_policies_compose_with_or_and_and() -> None:
    either = spendguard.stop_after_steps(5) | spendguard.stop_when_stalled(2)
    guard = spendguard.loop(either)
    for step in guard:
        step.found(["same"])
    assert guard.stop_reason is StopReason.STALLED
    assert guard.steps == 3

    both = spendguard.stop_after_steps(2) & spendguard.stop_after_usd("0.15")
    guard = spendguard.loop(both, max_steps=10)
    assert run(guard, ["0.05"]) == 3  # 2 steps alone is not enough: $0.15 must be reached too
    assert guard.stop_reason is StopReason.STEPS
    assert "and" in guard.stop_detail


def test_a_plain_function_is_a_policy_and_stop_never_never_stops() -> None:
    guard = spendguard.loop(lambda state: state.steps >= 2)
    assert run(guard) == 2
    assert guard.stop_reason is StopReason.CUSTOM
    assert spendguard.stop_never(guard.state()) is None


def test_should_stop_serves_hand_written_loops() -> None:
    guard = spendguard.loop(max_steps=0)
    stop = guard.should_stop()
    assert stop is not None and stop.reason is StopReason.STEPS


@respx.mock
def test_record_observes_the_reply_and_charges_its_cost() -> None:
    script = Script({"gpt-4o-mini": "thinking about it"})
    respx.post(OPENAI_CHAT).mock(side_effect=script.responder(OPENAI_CHAT))
    client = openai.OpenAI(api_key="test", max_retries=0)
    guard = spendguard.loop(patience=2, max_steps=10)
    for step in guard:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "go on"}])
        step.record(reply)
    one = cost("gpt-4o-mini", Usage(input_tokens=20, output_tokens=5)).total
    assert guard.stop_reason is StopReason.STALLED
    assert guard.step_costs_usd == [one] * 3


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"max_steps": -1}, "max_steps"),
    ({"max_usd": 1.5}, "max_usd"),
    ({"max_seconds": "10"}, "max_seconds"),
    ({"patience": 0}, "patience"),
    ({"similarity": 0.0}, "similarity"),
    ({"budget": object()}, "budget"),
])
def test_bad_arguments_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        spendguard.loop(**kwargs)  # type: ignore[arg-type]


def test_share_needs_a_fraction_between_zero_and_one() -> None:
    with pytest.raises(ConfigError, match="fraction"):
        spendguard.loop(max_usd="1").share(1.5)


@respx.mock
def test_a_guarded_clients_budget_meters_each_step_and_stops_the_loop() -> None:
    script = Script({"gpt-4o": "still working on it, step"})
    respx.post(OPENAI_CHAT).mock(side_effect=script.responder(OPENAI_CHAT))
    one = cost("gpt-4o", Usage(input_tokens=20, output_tokens=5)).total
    budget = spendguard.Budget(one * 3 + one / 2, ledger="memory://", warn_at=None)
    client = spendguard.OpenAI(api_key="test", max_retries=0, budget=budget)
    guard = spendguard.loop(budget=budget, max_steps=10)
    for step in guard:
        reply = client.chat.completions.create(
            model="gpt-4o", max_tokens=5, messages=[{"role": "user", "content": "go on"}])
        assert step.record(reply) == one  # priced, but charged through the budget only
    assert guard.step_costs_usd == [one] * 3
    assert guard.spent_usd == budget.spent
    assert guard.stop_reason is StopReason.BUDGET


def test_money_charged_between_steps_counts_but_is_not_a_step() -> None:
    parent = spendguard.loop(max_usd="1.00", max_steps=1)
    run(parent, ["0.10"])
    child = parent.share(1)
    assert child.max_usd == Decimal("0.90")
    for sub in child:
        sub.spend("0.30")
        break
    assert parent.steps == 1
    assert parent.spent_usd == Decimal("0.40")


def test_a_share_taken_mid_step_sees_the_budget_spent_so_far() -> None:
    budget = DrainingBudget("1.00")
    guard = spendguard.loop(budget=budget, max_usd="0.50")
    for _ in guard:
        budget.remaining -= Decimal("0.20")
        assert guard.spent_usd == Decimal("0.20")
        assert guard.share(0.5).max_usd == Decimal("0.15")
        break
