"""Budget periods, warning levels, tags, and scopes that follow threads and asyncio tasks."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

import spendguard
from spendguard import (
    Budget,
    BudgetExceeded,
    BudgetWarning,
    ConfigError,
    ThresholdCrossed,
    open_ledger,
)
from spendguard._budget.reservations import reserve_call
from spendguard._core.periods import period_key
from tests.ledger_helpers import FakeClock, call_info, settle, spend

D = Decimal


@pytest.mark.parametrize(("period", "key"), [(None, "all"), ("daily", "2031-01-31"),
                                             ("monthly", "2031-01")])
def test_a_period_key_names_the_utc_day_or_month(period: str | None, key: str) -> None:
    from datetime import timedelta, timezone

    tokyo = timezone(timedelta(hours=9))
    assert period_key(period, datetime(2031, 2, 1, 8, 59, tzinfo=tokyo)) == key


def test_a_daily_budget_starts_afresh_at_midnight_utc() -> None:
    clock = FakeClock(datetime(2031, 1, 31, 23, 0, tzinfo=UTC))
    budget = Budget("1", scope="daily", period="daily", clock=clock, ledger="memory://",
                    warn_at=None)
    spend(budget, "1", "1")
    with pytest.raises(BudgetExceeded):
        reserve_call(budget, D("0.01"), call=call_info())
    clock.advance(hours=1)
    assert (budget.period_key, budget.spent) == ("2031-02-01", D(0))
    spend(budget, "1", "0.5")
    assert budget.ledger.totals("daily", "2031-01-31").spent_usd == D("1")


def test_a_monthly_budget_rolls_over_with_the_month() -> None:
    clock = FakeClock(datetime(2031, 1, 31, 23, 0, tzinfo=UTC))
    budget = Budget("5", period="monthly", clock=clock, ledger="memory://", warn_at=None)
    spend(budget, "5", "5")
    clock.advance(days=1)
    assert (budget.period_key, budget.remaining) == ("2031-02", D("5"))


def test_a_call_in_flight_at_midnight_settles_into_the_day_it_was_reserved() -> None:
    clock = FakeClock(datetime(2031, 1, 31, 23, 59, tzinfo=UTC))
    budget = Budget("10", period="daily", clock=clock, ledger="memory://", warn_at=None)
    reservation = reserve_call(budget, D("2"), call=call_info())
    clock.advance(minutes=2)
    settle(reservation, "1")
    assert budget.ledger.totals(budget.scope, "2031-01-31").spent_usd == D("1")
    assert budget.spent == 0


def test_reaching_warn_at_warns_once_per_period() -> None:
    clock = FakeClock()
    budget = Budget("10", scope="team", period="daily", clock=clock, ledger="memory://")
    spend(budget, "7", "7")
    with pytest.warns(BudgetWarning, match=r"'team'.*\$8\.00 of \$10\.00 \(80%\)"):
        spend(budget, "1", "1")
    spend(budget, "1", "1")  # no second warning: pytest's warnings-as-errors would raise
    clock.advance(days=1)
    spend(budget, "7", "7")
    with pytest.warns(BudgetWarning):
        spend(budget, "2", "2")


def test_on_warn_receives_the_crossing_instead_of_a_python_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    events: list[ThresholdCrossed] = []
    budget = Budget("10", scope="team", warn_at="0.5", on_warn=events.append,
                    ledger="memory://")
    with caplog.at_level(logging.INFO, logger="spendguard.budget"):
        spend(budget, "6", "6")
    (event,) = events
    assert (event.scope, event.spent_usd, event.limit_usd, event.fraction, event.warn_at) == (
        "team", D("6"), D("10"), D("0.6"), D("0.5"))
    assert "'team'" in caplog.text


def test_children_inherit_on_warn_and_warn_for_their_own_scope() -> None:
    events: list[ThresholdCrossed] = []
    project = Budget("100", scope="p", on_warn=events.append, ledger="memory://")
    spend(project.child("run", limit_usd="1"), "1", "0.9")
    assert [event.scope for event in events] == ["p/run"]


def test_another_process_does_not_warn_again_for_the_same_crossing(tmp_path: Path) -> None:
    from spendguard._budget.ledger.sqlite import SqliteLedger

    events: list[ThresholdCrossed] = []
    here = Budget("10", scope="shared", on_warn=events.append,
                  ledger=SqliteLedger(tmp_path / "l.db"))
    there = Budget("10", scope="shared", on_warn=events.append,
                   ledger=SqliteLedger(tmp_path / "l.db"))  # a second instance, like a process
    spend(here, "9", "9")
    spend(there, "0.5", "0.5")
    assert len(events) == 1


def test_warn_at_none_never_warns() -> None:
    spend(Budget("1", warn_at=None, ledger="memory://"), "1", "1")


def test_tags_are_recorded_on_each_call_and_nest() -> None:
    budget = Budget("10", ledger="memory://", warn_at=None)
    with spendguard.tags(team="search", feature="rerank"):
        spend(budget, "1", "1")
        with spendguard.tags(feature="summary", customer="c-9") as inner:
            assert dict(inner) == {"team": "search", "feature": "summary", "customer": "c-9"}
            spend(budget, "1", "1")
    spend(budget, "1", "1")
    assert [dict(r.tags) for r in sorted(budget.ledger.records(), key=lambda r: len(r.tags))] \
        == [{}, {"team": "search", "feature": "rerank"},
            {"team": "search", "feature": "summary", "customer": "c-9"}]
    assert len(list(budget.ledger.records(tag="customer=c-9"))) == 1


@pytest.mark.parametrize("bad", [{"bad key": "x"}, {"n": 3}, {"long": "x" * 201}])
def test_a_bad_tag_is_a_config_error(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="tags"), spendguard.tags(**bad):  # type: ignore[arg-type]
        pass


def test_a_scope_entered_in_one_thread_does_not_charge_calls_of_another() -> None:
    budget = Budget("10", ledger="memory://", warn_at=None)
    entered, done = threading.Event(), threading.Event()

    def inside() -> None:
        with budget:
            entered.set()
            done.wait(timeout=10)

    thread = threading.Thread(target=inside)
    thread.start()
    entered.wait(timeout=10)
    spend(None, "1", "1")  # this thread has no enclosing scope
    done.set()
    thread.join()
    assert budget.spent == 0


def test_a_copied_context_carries_the_scopes_into_a_thread() -> None:
    budget = Budget("10", ledger="memory://", warn_at=None)
    with budget:
        context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(spend, None, "1", "1"))
    thread.start()
    thread.join()
    assert budget.spent == D("1")


async def test_asyncio_tasks_keep_their_own_scopes_and_inherit_their_creators() -> None:
    ledger = open_ledger("memory://")
    first = Budget("10", ledger=ledger, warn_at=None)
    second = Budget("10", ledger=ledger, warn_at=None)
    ready = asyncio.Event()

    async def under(budget: Budget, amount: str) -> None:
        async with budget:
            await ready.wait()  # both tasks are inside their blocks at once
            spend(None, amount, amount)
            await asyncio.create_task(asyncio.to_thread(spend, None, amount, amount))

    tasks = [asyncio.create_task(under(first, "1")), asyncio.create_task(under(second, "2"))]
    await asyncio.sleep(0)
    ready.set()
    await asyncio.gather(*tasks)
    assert (first.spent, second.spent) == (D("2"), D("4"))
