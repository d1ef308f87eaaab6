"""Per-task learning: the skip rule, its floor, and the stores (memory, ledger)."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from spendguard import (
    ConfigError,
    Learning,
    LedgerStats,
    MemoryStats,
    Savings,
    TierStats,
    open_ledger,
)


def fill(store: MemoryStats, task: str, model: str, passes: int, fails: int) -> None:
    for index in range(passes + fails):
        store.record_attempt(task, model, passed=index < passes, cost_usd=Decimal("0.001"))


def test_a_tier_is_tried_until_it_has_enough_tries() -> None:
    store = MemoryStats()
    fill(store, "t", "small", passes=0, fails=19)
    learning = Learning(store, min_tries=20, explore=0.0)
    assert learning.decide("t", "small").attempt
    fill(store, "t", "small", passes=0, fails=1)
    decision = learning.decide("t", "small")
    assert not decision.attempt
    assert decision.reason == "learned: passed 0 of 20 tries on task 't' (below 10%)"


def test_a_tier_passing_often_enough_is_always_tried() -> None:
    store = MemoryStats()
    fill(store, "t", "small", passes=2, fails=18)
    assert Learning(store, min_tries=20, skip_below=0.1, explore=0.0).decide("t", "small").attempt
    assert not Learning(store, min_tries=20, skip_below=0.11,
                        explore=0.0).decide("t", "small").attempt


def test_the_explore_floor_re_tests_a_skipped_tier_at_the_given_rate() -> None:
    store = MemoryStats()
    fill(store, "t", "small", passes=0, fails=30)
    learning = Learning(store, explore=0.25, rng=random.Random(3))
    tried = [learning.decide("t", "small") for _ in range(4000)]
    share = sum(d.attempt for d in tried) / len(tried)
    assert 0.22 < share < 0.28
    assert next(d for d in tried if d.attempt).reason == "re-testing a tier that rarely passes"


def test_the_rng_is_not_drawn_while_nothing_is_skipped() -> None:
    rng = random.Random(5)
    state = rng.getstate()
    Learning(MemoryStats(), rng=rng).decide("t", "small")
    assert rng.getstate() == state


def test_savings_add_up_per_task_and_overall() -> None:
    store = MemoryStats()
    store.record_run("a", cost_usd=Decimal("1"), baseline_usd=Decimal("4"))
    store.record_run("a", cost_usd=Decimal("3"), baseline_usd=Decimal("4"))
    store.record_run("b", cost_usd=Decimal("2"), baseline_usd=Decimal("2"))
    assert store.savings("a") == Savings(2, Decimal(4), Decimal(8))
    assert store.savings("a").saved_fraction == 0.5
    assert store.savings() == Savings(3, Decimal(6), Decimal(10))
    assert store.savings("none").saved_usd == 0
    assert TierStats().pass_rate == 0.0


def test_ledger_stats_survive_a_new_store_on_the_same_ledger() -> None:
    first = LedgerStats("memory://cascade-learning")
    first.record_attempt("quiz", "small", passed=False, cost_usd=Decimal("0.01"))
    first.record_attempt("quiz", "small", passed=True, cost_usd=Decimal("0.01"))
    first.record_attempt("quiz", "large", passed=True, cost_usd=Decimal("0.10"))
    first.record_run("quiz", cost_usd=Decimal("0.12"), baseline_usd=Decimal("0.10"))
    first.record_attempt("other", "small", passed=True, cost_usd=Decimal("0.01"))

    second = LedgerStats("memory://cascade-learning")
    assert second.tier_stats("quiz", "small") == TierStats(tries=2, passes=1)
    assert second.tier_stats("quiz", "large") == TierStats(tries=1, passes=1)
    assert second.savings("quiz") == Savings(1, Decimal("0.12"), Decimal("0.10"))
    assert second.savings().runs == 1


def test_ledger_outcomes_are_zero_dollar_markers_that_charge_nothing() -> None:
    ledger = open_ledger("memory://")
    stats = LedgerStats(ledger)
    stats.record_attempt("quiz", "small", passed=False, cost_usd=Decimal("0.5"))
    (record,) = ledger.records(tag="cascade.task=quiz")
    assert record.actual_usd == 0
    assert record.scopes == ()
    assert record.tags == {"cascade.task": "quiz", "cascade.model": "small",
                           "cascade.outcome": "fail"}
    assert ledger.verify() == []


def test_refresh_sees_outcomes_written_by_another_store() -> None:
    ledger = open_ledger("memory://")
    mine, theirs = LedgerStats(ledger), LedgerStats(ledger)
    assert mine.tier_stats("quiz", "small").tries == 0
    theirs.record_attempt("quiz", "small", passed=True, cost_usd=Decimal(0))
    assert mine.tier_stats("quiz", "small").tries == 0  # read once, then kept in memory
    mine.refresh()
    assert mine.tier_stats("quiz", "small").tries == 1


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"skip_below": 1.5}, "skip_below"),
    ({"explore": -0.1}, "explore"),
    ({"min_tries": 0}, "min_tries"),
])
def test_bad_learning_settings_name_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        Learning(**kwargs)  # type: ignore[arg-type]
