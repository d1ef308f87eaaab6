"""Budgets: limits, scopes (nested, enclosing, deduplicated), reservations as the transport
sees them, and the checks on what a user may pass."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import spendguard
from spendguard import Budget, BudgetConfigError, BudgetExceeded, LedgerError, open_ledger
from spendguard._budget.reservations import remaining_for_call, reserve_call
from tests.ledger_helpers import FakeClock, call_info, settle, spend

D = Decimal


def memory_budget(limit: str = "10", **options: Any) -> Budget:
    options.setdefault("ledger", "memory://")
    options.setdefault("warn_at", None)
    return Budget(limit, **options)


@pytest.mark.parametrize(("limit", "usd"), [(D("12.5"), D("12.5")), ("12.5", D("12.5")),
                                           ("$12.50", D("12.5")), (12, D(12)), (0, D(0))])
def test_a_limit_is_decimal_str_or_int_usd(limit: Decimal | str | int, usd: Decimal) -> None:
    assert Budget(limit, ledger="memory://").limit_usd == usd


@pytest.mark.parametrize(("options", "field"), [
    ({"limit_usd": -1}, "limit_usd"),
    ({"limit_usd": "NaN"}, "limit_usd"),
    ({"limit_usd": "inf"}, "limit_usd"),
    ({"limit_usd": 0.5}, "limit_usd"),
    ({"limit_usd": "ten"}, "limit_usd"),
    ({"limit_usd": True}, "limit_usd"),
    ({"warn_at": 0}, "warn_at"),
    ({"warn_at": 1.5}, "warn_at"),
    ({"warn_at": "nan"}, "warn_at"),
    ({"warn_at": "most"}, "warn_at"),
    ({"period": "weekly"}, "period"),
    ({"scope": ""}, "scope"),
    ({"scope": "a\nb"}, "scope"),
    ({"clock": "now"}, "clock"),
    ({"on_warn": 3}, "on_warn"),
    ({"ledger": "ledger.db"}, "ledger"),
    ({"ledger": 42}, "ledger"),
    ({"reservation_ttl_s": 0}, "reservation_ttl_s"),
    ({"reservation_ttl_s": float("inf")}, "reservation_ttl_s"),
])
def test_nonsense_is_a_budget_config_error_naming_the_field(options: dict[str, Any],
                                                            field: str) -> None:
    arguments: dict[str, Any] = {"limit_usd": "10", **options}
    limit = arguments.pop("limit_usd")
    with pytest.raises(BudgetConfigError, match=field) as error:
        Budget(limit, **arguments)
    assert error.value.field == field


def test_a_naive_clock_is_refused_when_it_is_read() -> None:
    from datetime import datetime

    budget = memory_budget(clock=lambda: datetime(2031, 1, 1))  # noqa: DTZ001
    with pytest.raises(BudgetConfigError, match="aware") as error:
        budget.period_key  # noqa: B018
    assert error.value.field == "clock"


def test_spent_reserved_and_remaining_follow_a_call() -> None:
    budget = memory_budget("10")
    reservation = reserve_call(budget, D("4"), call=call_info())
    assert (budget.spent, budget.reserved, budget.remaining) == (D(0), D("4"), D("6"))
    settle(reservation, "1.5")
    assert (budget.spent, budget.reserved, budget.remaining) == (D("1.5"), D(0), D("8.5"))


def test_a_refused_call_reports_the_scope_and_its_money() -> None:
    budget = memory_budget("1", scope="project:acme")
    spend(budget, "0.5", "0.5")
    with pytest.raises(BudgetExceeded) as refused:
        reserve_call(budget, D("0.75"), call=call_info())
    error = refused.value
    assert (error.scope, error.limit_usd, error.spent_usd, error.reserved_usd,
            error.estimate_usd) == ("project:acme", D("1"), D("0.5"), D(0), D("0.75"))


def test_a_call_is_charged_to_every_enclosing_budget_and_the_clients() -> None:
    ledger = open_ledger("memory://")
    project = memory_budget("100", scope="project", ledger=ledger)
    user = memory_budget("20", scope="user", ledger=ledger)
    client = memory_budget("5", scope="client", ledger=ledger)
    with project, user:
        spend(client, "1", "1")
    spend(client, "1", "1")  # outside the blocks: the client's budget only
    assert (project.spent, user.spent, client.spent) == (D("1"), D("1"), D("2"))


async def test_async_with_makes_an_enclosing_scope() -> None:
    project = memory_budget("100")
    async with project:
        spend(None, "1", "0.5")
    spend(None, "1", "0.5")
    assert project.spent == D("0.5")


def test_the_tightest_enclosing_scope_refuses_the_call() -> None:
    ledger = open_ledger("memory://")
    project = memory_budget("100", scope="project", ledger=ledger)
    with (project, memory_budget("2", scope="run", ledger=ledger),
          pytest.raises(BudgetExceeded) as refused):
        reserve_call(None, D("3"), call=call_info())
    assert refused.value.scope == "run"
    assert project.reserved == 0  # all or none


def test_a_budget_entered_and_also_the_clients_is_charged_once() -> None:
    budget = memory_budget("10")
    with budget, budget:
        spend(budget, "1", "1")
    assert budget.spent == D("1")


def test_budgets_sharing_a_scope_and_ledger_share_their_spending() -> None:
    ledger = open_ledger("memory://")
    first = memory_budget("10", scope="team", ledger=ledger)
    second = memory_budget("3", scope="team", ledger=ledger)
    with first:
        spend(second, "2", "2")  # one scope named twice: charged once, tightest limit applies
    assert first.spent == second.spent == D("2")
    with first, pytest.raises(BudgetExceeded) as refused:
        reserve_call(second, D("1.5"), call=call_info())
    assert refused.value.limit_usd == D("3")


def test_a_child_budget_charges_its_parents_even_when_they_are_not_entered() -> None:
    project = memory_budget("100", scope="project", period="monthly")
    run = project.child("user:7", limit_usd="10").child("run:42", limit_usd="5")
    assert run.scope == "project/user:7/run:42"
    assert run.period == "monthly" and run.ledger is project.ledger
    spend(run, "2", "1.25")
    assert project.spent == run.parent.spent == run.spent == D("1.25")  # type: ignore[union-attr]
    with pytest.raises(BudgetExceeded) as refused:
        reserve_call(run, D("4"), call=call_info())
    assert refused.value.scope == "project/user:7/run:42"


def test_a_child_name_cannot_contain_the_separator() -> None:
    with pytest.raises(BudgetConfigError, match="'/'"):
        memory_budget().child("a/b", limit_usd=1)


def test_an_unnamed_budget_is_private_to_its_object() -> None:
    ledger = open_ledger("memory://")
    first, second = memory_budget(ledger=ledger), memory_budget(ledger=ledger)
    spend(first, "1", "1")
    assert first.scope != second.scope and second.spent == 0


def test_without_any_budget_a_call_is_recorded_unlimited_in_the_default_ledger() -> None:
    reservation = reserve_call(None, D("1000000"), call=call_info("gpt-huge"))
    settle(reservation, "999")
    (record,) = open_ledger().records()
    assert (record.id, record.model, record.scopes, record.actual_usd) == (
        reservation.id, "gpt-huge", (), D("999"))


def test_remaining_for_call_is_the_least_left_in_any_scope() -> None:
    assert remaining_for_call(None) is None
    project = memory_budget("10")
    run = project.child("run", limit_usd="3")
    spend(run, "1", "1")
    assert remaining_for_call(run) == D("2")
    with project:
        assert remaining_for_call(None) == D("9")
        assert remaining_for_call(run) == D("2")


def test_settling_twice_is_an_error_and_release_after_the_end_does_nothing() -> None:
    budget = memory_budget("10")
    reservation = reserve_call(budget, D("1"), call=call_info())
    settle(reservation, "0.5")
    with pytest.raises(LedgerError, match="already settled"):
        settle(reservation, "0.5")
    reservation.release("cleanup")
    assert reservation.closed and budget.spent == D("0.5")


def test_settling_a_released_call_is_an_error() -> None:
    reservation = reserve_call(memory_budget(), D("1"), call=call_info())
    reservation.release("http 500")
    with pytest.raises(LedgerError, match="already released"):
        settle(reservation, "1")


@pytest.mark.parametrize(("change", "field"), [
    ({"actual_usd": D("-1")}, "actual_usd"),
    ({"tokens": {"input": -1}}, "tokens"),
    ({"status": "Not OK"}, "status"),
    ({"latency_s": float("nan")}, "latency_s"),
])
def test_a_malformed_settlement_is_refused_and_the_call_stays_open(change: dict[str, Any],
                                                                   field: str) -> None:
    budget = memory_budget()
    reservation = reserve_call(budget, D("1"), call=call_info())
    values: dict[str, Any] = {"actual_usd": D("1"), "tokens": {}, "usage_estimated": False,
                              "table_version": "t", "latency_s": 0.1, **change}
    with pytest.raises(spendguard.ConfigError, match=field):
        reservation.settle(**values)
    assert not reservation.closed and budget.reserved == D("1")


def test_budgets_in_two_ledgers_are_reserved_all_or_none() -> None:
    roomy = memory_budget("100", ledger="memory://")
    tight = memory_budget("1", ledger="memory://")
    with roomy, pytest.raises(BudgetExceeded):
        reserve_call(tight, D("2"), call=call_info())
    assert roomy.reserved == 0
    with roomy:
        spend(tight, "1", "1")
    assert roomy.spent == tight.spent == D("1")


def test_reservations_expire_after_the_budgets_ttl() -> None:
    clock = FakeClock()
    budget = memory_budget("10", clock=clock, reservation_ttl_s=60)
    reserve_call(budget, D("3"), call=call_info())
    clock.advance(seconds=60)
    spend(budget, "1", "1")
    assert (budget.spent, budget.reserved) == (D("4"), D(0))


def test_repr_names_the_scope_limit_and_period() -> None:
    budget = memory_budget("10", scope="p", period="daily")
    assert repr(budget) == "Budget('10', scope='p', period='daily')"
