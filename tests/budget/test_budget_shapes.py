"""Budget shapes: rolling windows and call-count caps, alone and with money limits, on every
ledger backend (memory, SQLite, Redis)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import respx
from hypothesis import given
from hypothesis import strategies as st

import spendguard
from spendguard import Budget, BudgetConfigError, BudgetExceeded, ThresholdCrossed
from spendguard._budget.ledger.sqlite import SqliteLedger
from spendguard._budget.reservations import Reservation, reserve_call
from spendguard._core.periods import (
    WINDOW_STEPS,
    check_period,
    period_key,
    warning_key,
    window_keys,
)
from tests.ledger_backends import LedgerBackend
from tests.ledger_helpers import FakeClock, call_info, settle, spend
from tests.redis_helpers import drop_prefix, ledger_url, requires_redis

D = Decimal
HOUR_START = datetime(2031, 1, 31, 12, 0, tzinfo=UTC)


@pytest.fixture
def url(ledger_backend: LedgerBackend) -> str:
    """A fresh ledger URL of each backend (``tests/ledger_backends.py``)."""
    return ledger_backend.url(timeout="2")


def budget(url: str, limit: str, clock: FakeClock, **options: object) -> Budget:
    return Budget(limit, scope="shape", ledger=url, clock=clock, warn_at=None,
                  **options)  # type: ignore[arg-type]


# -- windows as keys ------------------------------------------------------------------------

@pytest.mark.parametrize(("given_period", "label"), [
    ("1h", "1h"), ("60m", "1h"), ("24h", "1d"), ("7d", "7d"), ("90m", "90m"), ("1m", "1m"),
    ("120s", "2m")])
def test_a_rolling_window_is_named_in_its_largest_exact_unit(given_period: str,
                                                              label: str) -> None:
    assert check_period(given_period) == label


@pytest.mark.parametrize("bad", ["90s", "0h", "1w", "1.5h", "h", "400d", " 1h", 3600])
def test_a_window_that_is_not_whole_minutes_of_s_m_h_or_d_is_refused_naming_the_field(
        bad: object) -> None:
    with pytest.raises(BudgetConfigError, match="rolling window such as") as caught:
        Budget("1", period=bad)  # type: ignore[arg-type]
    assert caught.value.field == "period"


def test_a_windows_key_names_its_one_minute_step_and_a_limit_reads_sixty_steps_back() -> None:
    key = period_key("1h", HOUR_START + timedelta(seconds=59))
    assert key == f"1h@{int(HOUR_START.timestamp())}"
    keys = window_keys(key)
    assert len(keys) == WINDOW_STEPS + 2 + 2 and keys[0] == key
    assert keys[WINDOW_STEPS] == f"1h@{int(HOUR_START.timestamp()) - 3600}"
    # the two steps after (a process whose clock read later charged them), then the open calls
    assert keys[-3:-1] == (f"1h@{int(HOUR_START.timestamp()) + 60}",
                           f"1h@{int(HOUR_START.timestamp()) + 120}")
    assert keys[-1] == "1h@open"  # the calls still open, however old
    assert window_keys("2031-01") == ("2031-01",)


@given(st.lists(st.integers(min_value=0, max_value=4 * 3600), max_size=30),
       st.integers(min_value=3600, max_value=4 * 3600))
def test_a_window_sum_never_misses_spend_of_the_last_window_and_forgets_it_one_step_later(
        call_offsets_s: list[int], now_offset_s: int) -> None:
    now = HOUR_START + timedelta(seconds=now_offset_s)
    counted_keys = set(window_keys(period_key("1h", now)))
    for offset_s in call_offsets_s:
        made = HOUR_START + timedelta(seconds=offset_s)
        if made > now:
            continue
        age_s = (now - made).total_seconds()
        counted = period_key("1h", made) in counted_keys
        if age_s <= 3600:
            assert counted  # never undercounts the last hour
        if age_s >= 3600 + 60:
            assert not counted  # and forgets a call at most one step (a minute) late


# -- rolling windows on every backend ---------------------------------------------------------

def test_spend_leaves_a_rolling_window_an_hour_later_not_at_a_calendar_boundary(
        url: str) -> None:
    clock = FakeClock(HOUR_START + timedelta(minutes=50))
    hourly = budget(url, "1", clock, period="1h")
    spend(hourly, "0.6", "0.6")
    clock.advance(minutes=20)  # a new calendar hour: a rolling window still counts the spend
    assert hourly.spent == D("0.6")
    with pytest.raises(BudgetExceeded, match="rolling 1h window") as caught:
        reserve_call(hourly, D("0.5"), call=call_info())
    assert caught.value.refused_by == "limit_usd"
    assert "calls leave the rolling 1h window as they age" in str(caught.value)
    clock.advance(minutes=41)  # 61 minutes after the call: out of the window
    assert hourly.spent == 0
    spend(hourly, "0.9", "0.9")
    assert hourly.ledger.verify() == []


def test_a_reservation_in_flight_counts_in_the_window_and_settles_into_its_own_step(
        url: str) -> None:
    clock = FakeClock(HOUR_START)
    hourly = budget(url, "1", clock, period="1h")
    held = reserve_call(hourly, D("0.7"), call=call_info())
    clock.advance(minutes=30)
    assert (hourly.spent, hourly.reserved) == (D(0), D("0.7"))
    with pytest.raises(BudgetExceeded):
        reserve_call(hourly, D("0.4"), call=call_info())
    settle(held, "0.2")
    assert (hourly.spent, hourly.reserved) == (D("0.2"), D(0))
    clock.advance(minutes=31)  # the settled cost aged with the reservation's time
    assert hourly.spent == 0
    assert hourly.ledger.verify() == []


def test_a_rolling_window_warns_once_per_window_length_not_once_per_step(url: str) -> None:
    clock = FakeClock(HOUR_START)
    events: list[ThresholdCrossed] = []
    hourly = Budget("1", scope="shape", ledger=url, clock=clock, period="1h", warn_at="0.5",
                    on_warn=events.append)
    spend(hourly, "0.6", "0.6")
    clock.advance(minutes=5)
    spend(hourly, "0.1", "0.1")  # still above the level, in another step: no second warning
    assert [(e.scope, e.spent_usd) for e in events] == [("shape", D("0.6"))]
    assert events[0].period_key == warning_key(period_key("1h", HOUR_START))


# -- call-count caps on every backend ---------------------------------------------------------

def test_a_call_cap_refuses_the_call_after_the_last_naming_max_calls(url: str) -> None:
    capped = budget(url, "100", FakeClock(), max_calls=3)
    for _ in range(3):
        spend(capped, "0.01", "0.01")
    assert (capped.calls, capped.calls_left) == (3, 0)
    with pytest.raises(BudgetExceeded, match="3 of its max_calls=3 calls") as caught:
        reserve_call(capped, D("0.01"), call=call_info())
    refusal = caught.value
    assert (refusal.refused_by, refusal.max_calls, refusal.calls, refusal.scope) == (
        "max_calls", 3, 3, "shape")
    assert "raise max_calls" in str(refusal)
    assert capped.ledger.verify() == []


def test_calls_in_flight_count_toward_the_cap_and_a_released_call_is_given_back(
        url: str) -> None:
    capped = budget(url, "100", FakeClock(), max_calls=2)
    first = reserve_call(capped, D("0.01"), call=call_info())
    reserve_call(capped, D("0.01"), call=call_info())
    with pytest.raises(BudgetExceeded):
        reserve_call(capped, D("0.01"), call=call_info())
    first.release("http 429")  # not billed: not counted
    assert capped.calls == 1
    reserve_call(capped, D("0.01"), call=call_info())
    assert capped.calls == 2 and capped.ledger.verify() == []


def test_money_and_calls_compose_and_the_stricter_refuses(url: str) -> None:
    both = budget(url, "1", FakeClock(), max_calls=5)
    spend(both, "0.6", "0.6")
    with pytest.raises(BudgetExceeded) as by_money:  # 4 calls left, but not the money
        reserve_call(both, D("0.5"), call=call_info())
    assert by_money.value.refused_by == "limit_usd" and by_money.value.calls == 1
    for _ in range(4):
        spend(both, "0.01", "0.01")
    with pytest.raises(BudgetExceeded) as by_calls:  # money left, but no calls
        reserve_call(both, D("0.01"), call=call_info())
    assert by_calls.value.refused_by == "max_calls"


def test_a_call_cap_in_a_child_scope_refuses_without_charging_the_parent(url: str) -> None:
    clock = FakeClock()
    parent = budget(url, "10", clock)
    child = parent.child("agent:1", limit_usd="10", max_calls=1)
    spend(child, "0.1", "0.1")
    with pytest.raises(BudgetExceeded) as caught:
        reserve_call(child, D("0.1"), call=call_info())
    assert caught.value.scope == "shape/agent:1"
    assert (parent.calls, parent.spent) == (1, D("0.1"))
    spend(parent, "0.1", "0.1")  # the parent has no cap of its own


def test_a_call_cap_per_rolling_window_frees_calls_as_they_age(url: str) -> None:
    clock = FakeClock(HOUR_START)
    capped = budget(url, "100", clock, period="1h", max_calls=2)
    spend(capped, "0.01", "0.01")
    clock.advance(minutes=30)
    spend(capped, "0.01", "0.01")
    with pytest.raises(BudgetExceeded, match="rolling 1h window"):
        reserve_call(capped, D("0.01"), call=call_info())
    clock.advance(minutes=31)  # the first call left the window
    assert capped.calls_left == 1
    spend(capped, "0.01", "0.01")
    assert capped.ledger.verify() == []


@pytest.mark.parametrize("bad", [-1, True, 1.5, "3"])
def test_a_call_cap_that_is_not_a_whole_number_is_refused_naming_max_calls(
        bad: object) -> None:
    with pytest.raises(BudgetConfigError, match="max_calls") as caught:
        Budget("1", max_calls=bad)  # type: ignore[arg-type]
    assert caught.value.field == "max_calls"


def test_a_zero_call_cap_refuses_every_call() -> None:
    with pytest.raises(BudgetExceeded, match="max_calls=0"):
        reserve_call(Budget("1", ledger="memory://", max_calls=0), D("0"), call=call_info())


def test_an_existing_sqlite_ledger_counts_its_earlier_calls_when_upgraded(
        tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    old = Budget("10", scope="shape", ledger=SqliteLedger(path), warn_at=None)
    spend(old, "0.1", "0.1")
    spend(old, "0.1", "0.1")
    reserve_call(old, D("0.1"), call=call_info()).release("http 500")
    old.ledger.close()
    db = sqlite3.connect(path)  # as the file was before call counts existed
    db.execute("ALTER TABLE totals DROP COLUMN calls")
    db.execute("DELETE FROM _migrations WHERE name = 'm003_call_counts'")
    db.commit()
    db.close()
    upgraded = Budget("10", scope="shape", ledger=SqliteLedger(path, url=url), max_calls=3)
    assert upgraded.calls == 2  # the released attempt is not counted
    assert upgraded.ledger.verify() == []


def test_a_per_user_template_with_a_window_and_a_cap_holds_on_every_backend(url: str) -> None:
    from spendguard._budget.ledger.base import CallInfo

    clock = FakeClock(HOUR_START)
    app = budget(url, "10", clock)
    users = app.per("user", limit_usd="1", period="1h", max_calls=2)

    def call_for(person: str) -> CallInfo:
        return CallInfo(provider="openai", model="gpt-test", endpoint="chat", end_user=person)

    settle(reserve_call(app, D("0.4"), call=call_for("ann")), "0.4")
    settle(reserve_call(app, D("0.4"), call=call_for("ann")), "0.4")
    with pytest.raises(BudgetExceeded) as capped:
        reserve_call(app, D("0.1"), call=call_for("ann"))
    assert (capped.value.scope, capped.value.refused_by) == ("shape/user:ann", "max_calls")
    with pytest.raises(BudgetExceeded) as short:
        reserve_call(app, D("1.5"), call=call_for("ben"))
    assert (short.value.scope, short.value.refused_by) == ("shape/user:ben", "limit_usd")
    clock.advance(minutes=61)
    settle(reserve_call(app, D("0.9"), call=call_for("ann")), "0.9")  # a new hour for ann
    assert (users.budget_for("ann").calls, users.budget_for("ann").spent) == (1, D("0.9"))
    assert (app.calls, app.spent) == (3, D("1.7")) and app.ledger.verify() == []


@pytest.mark.redis
@requires_redis
def test_a_redis_total_written_before_call_counts_reads_as_zero_calls(tmp_path: Path) -> None:
    import redis

    prefix = f"sgtest:oldtotals:{tmp_path.name[-12:]}:"
    client = redis.Redis(host="127.0.0.1", port=6379, decode_responses=True)
    try:
        client.hset(f"{prefix}totals", "all shape",
                    "1.000000000000000 0.000000000000000")  # "<spent> <reserved>" only
        capped = budget(ledger_url(prefix), "10", FakeClock(), max_calls=1)
        assert (capped.spent, capped.calls) == (D("1"), 0)
        spend(capped, "0.5", "0.5")
        with pytest.raises(BudgetExceeded, match="max_calls=1"):
            reserve_call(capped, D("0.5"), call=call_info())
        assert client.hget(f"{prefix}totals", "all shape") == (
            "1.500000000000000 0.000000000000000 1")
    finally:
        client.close()
        drop_prefix(prefix)


@given(st.lists(st.one_of(
    st.tuples(st.just("reserve"), st.sampled_from(["0.1", "0.3", "0.7"])),
    st.tuples(st.just("settle"), st.sampled_from(["0", "0.05", "0.1"])),
    st.tuples(st.just("release"), st.just("")),
    st.tuples(st.just("wait"), st.sampled_from(["1", "15", "59", "61"]))), max_size=40))
def test_whatever_happens_a_window_and_a_cap_are_never_exceeded_and_the_totals_agree(
        steps: list[tuple[str, str]]) -> None:
    clock = FakeClock(HOUR_START)
    shaped = Budget("1", ledger="memory://", clock=clock, period="1h", max_calls=3,
                    warn_at=None)
    held: list[tuple[Reservation, D]] = []
    for kind, value in steps:
        if kind == "reserve":
            try:
                held.append((reserve_call(shaped, D(value), call=call_info()), D(value)))
            except BudgetExceeded as refused:
                assert refused.refused_by in ("limit_usd", "max_calls")
            totals = shaped.totals()
            assert totals.committed_usd <= shaped.limit_usd and totals.calls <= 3
        elif kind == "wait":
            clock.advance(minutes=int(value))
        elif held:
            reservation, worst = held.pop(0)
            if kind == "settle":
                settle(reservation, min(D(value), worst))
            else:
                reservation.release("not billed")
    assert shaped.ledger.verify() == []


@respx.mock
def test_a_guarded_client_under_an_hourly_call_cap_sends_nothing_once_it_is_reached() -> None:
    from tests.provider_bodies import chat_completion

    route = respx.post("https://api.openai.com/v1/chat/completions").respond(
        200, json=chat_completion(prompt_tokens=9, completion_tokens=20))
    clock = FakeClock(HOUR_START)
    hourly = Budget("1", ledger="memory://", clock=clock, period="1h", max_calls=2)
    client = spendguard.OpenAI(api_key="sk-test", budget=hourly, max_retries=0)

    def ask() -> None:
        client.chat.completions.create(model="gpt-4o-mini", max_tokens=50,
                                       messages=[{"role": "user", "content": "Say hi"}])

    ask()
    clock.advance(minutes=30)
    ask()
    with pytest.raises(spendguard.BudgetExceeded) as refused:
        ask()
    assert refused.value.refused_by == "max_calls" and route.call_count == 2
    clock.advance(minutes=31)  # the first call has left the window
    ask()
    assert route.call_count == 3 and hourly.calls == 2
    assert next(r.period_keys for r in hourly.ledger.records()) == (
        period_key("1h", HOUR_START),)
