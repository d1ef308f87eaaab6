"""A rolling window counts a call from its reservation until it settles or is released, however
long it runs, on every ledger backend; a settled call counts at its reservation time."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import respx

import spendguard
from spendguard import Budget, BudgetExceeded
from spendguard._budget.ledger.sqlite import SqliteLedger
from spendguard._budget.reservations import reserve_call
from tests.ledger_backends import LedgerBackend
from tests.ledger_helpers import FakeClock, call_info, settle
from tests.provider_bodies import chat_stream_events, sse
from tests.redis_helpers import drop_prefix, ledger_url, requires_redis

D = Decimal
NOON = datetime(2031, 1, 31, 12, 0, tzinfo=UTC)
OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]


@pytest.fixture
def url(ledger_backend: LedgerBackend) -> str:
    """A fresh ledger URL of each backend (``tests/ledger_backends.py``)."""
    return ledger_backend.url(timeout="2")


def window_budget(url: str | SqliteLedger, limit: str, clock: FakeClock, period: str,
                  **options: object) -> Budget:
    # Calls here run for hours: their reservations must not expire (and be recovered) first.
    return Budget(limit, scope="window", ledger=url, clock=clock, warn_at=None, period=period,
                  reservation_ttl_s=6 * 3600, **options)  # type: ignore[arg-type]


def test_a_call_running_past_a_one_minute_window_still_counts_until_it_settles(
        url: str) -> None:
    clock = FakeClock(NOON)
    minute = window_budget(url, "0.15", clock, "1m")
    running = reserve_call(minute, D("0.10"), call=call_info())
    clock.advance(seconds=70)  # the call's step is out of the window; the call is not over
    assert (minute.spent, minute.reserved, minute.calls) == (D(0), D("0.10"), 1)
    with pytest.raises(BudgetExceeded, match="rolling 1m window"):
        reserve_call(minute, D("0.10"), call=call_info())
    settle(running, "0.10")
    # Settled, it counts at its reservation time: a window ago, so no longer.
    assert (minute.spent, minute.reserved, minute.calls) == (D(0), D(0), 0)
    settle(reserve_call(minute, D("0.10"), call=call_info()), "0.10")
    assert minute.spent == D("0.10")
    assert minute.ledger.verify() == []


@respx.mock
def test_a_guarded_stream_still_open_past_a_one_minute_window_keeps_the_next_call_out(
        url: str) -> None:
    respx.post(OPENAI_CHAT).respond(200, content=sse(chat_stream_events(words=5)),
                                    headers={"content-type": "text/event-stream"})

    def stream(client: spendguard.OpenAI) -> Any:
        return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES,
                                              max_tokens=50, stream=True,
                                              stream_options={"include_usage": True})

    probe = spendguard.Budget("1", ledger="memory://", warn_at=None)
    with stream(spendguard.OpenAI(api_key="k", budget=probe, max_retries=0)) as held:
        worst = probe.reserved  # what one call holds while it streams
        list(held)
    clock = FakeClock(NOON)
    minute = window_budget(url, str(worst * D("1.5")), clock, "1m")
    client = spendguard.OpenAI(api_key="k", budget=minute, max_retries=0)
    first = stream(client)  # reserved at 12:00:00, its body not read yet
    clock.advance(seconds=70)
    assert minute.reserved == worst
    with pytest.raises(BudgetExceeded, match="rolling 1m window"):
        stream(client)
    list(first)  # the stream ends: settled, charged at 12:00:00
    with stream(client) as second:
        list(second)
    assert minute.ledger.verify() == []


def test_a_call_open_for_two_hours_counts_in_a_one_hour_window_until_it_is_released(
        url: str) -> None:
    clock = FakeClock(NOON - timedelta(hours=2))
    hourly = window_budget(url, "1", clock, "1h", max_calls=2)
    long_call = reserve_call(hourly, D("0.6"), call=call_info())
    settle(reserve_call(hourly, D("0.2"), call=call_info()), "0.2")
    clock.advance(hours=2)
    # The settled call has aged out; the open one has not, in money or in calls.
    assert (hourly.spent, hourly.reserved, hourly.calls) == (D(0), D("0.6"), 1)
    with pytest.raises(BudgetExceeded, match="rolling 1h window"):
        reserve_call(hourly, D("0.5"), call=call_info())
    settle(reserve_call(hourly, D("0.3"), call=call_info()), "0.3")
    with pytest.raises(BudgetExceeded, match="max_calls=2"):
        reserve_call(hourly, D("0.01"), call=call_info())
    long_call.release("http 500")
    assert (hourly.spent, hourly.reserved, hourly.calls) == (D("0.3"), D(0), 1)
    settle(reserve_call(hourly, D("0.5"), call=call_info()), "0.5")
    assert hourly.ledger.verify() == []


def test_a_window_and_a_calendar_period_on_one_call_each_count_it_while_open(
        url: str) -> None:
    clock = FakeClock(NOON)
    daily = Budget("5", scope="day", ledger=url, clock=clock, warn_at=None, period="daily",
                   reservation_ttl_s=6 * 3600)
    hourly = daily.child("hour", limit_usd="1", period="1h")
    running = reserve_call(hourly, D("0.9"), call=call_info())
    clock.advance(minutes=90)
    assert (hourly.reserved, daily.reserved) == (D("0.9"), D("0.9"))
    settle(running, "0.4")
    assert (hourly.spent, daily.spent) == (D(0), D("0.4"))  # the day still holds it
    assert hourly.ledger.verify() == []


def test_a_sqlite_ledger_holding_open_window_calls_in_their_steps_moves_them_on_upgrade(
        tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    clock = FakeClock(NOON)
    old = window_budget(SqliteLedger(path), "1", clock, "1h")
    running = reserve_call(old, D("0.7"), call=call_info())
    step = old.period_key
    old.ledger.close()
    db = sqlite3.connect(path)  # as the file was when open calls stayed in their step
    db.execute("INSERT INTO totals (scope, period_key, spent_usd, reserved_usd, calls) "
               "VALUES ('window', ?, '0', '0.7', 1)", (step,))
    db.execute("DELETE FROM totals WHERE period_key = '1h@open'")
    db.execute("DELETE FROM _migrations WHERE name = 'm005_open_calls_held_apart'")
    db.execute("PRAGMA user_version = 4")
    db.commit()
    db.close()
    clock.advance(hours=2)
    upgraded = window_budget(SqliteLedger(path), "1", clock, "1h")
    assert (upgraded.reserved, upgraded.calls) == (D("0.7"), 1)
    assert upgraded.ledger.verify() == []
    settle(running, "0.5")
    assert (upgraded.spent, upgraded.reserved) == (D(0), D(0))
    assert SqliteLedger(path).verify() == []


@requires_redis
@pytest.mark.redis
def test_a_schema_1_redis_ledger_holding_open_window_calls_in_their_steps_is_migrated(
        tmp_path: Path) -> None:
    import redis

    prefix = f"sgtest:schema1:{tmp_path.name[-12:]}:"
    client = redis.Redis(host="127.0.0.1", port=6379, decode_responses=True)
    try:
        clock = FakeClock(NOON)
        before = window_budget(ledger_url(prefix), "1", clock, "1h")
        running = reserve_call(before, D("0.7"), call=call_info())
        step = before.period_key
        before.ledger.close()
        # As schema 1 kept it: the open call held in its own step.
        client.hset(f"{prefix}totals", f"{step} window", "0.000000000000000 "
                    "0.700000000000000 1")
        client.hdel(f"{prefix}totals", "1h@open window")
        client.hset(f"{prefix}meta", "schema", "1")
        clock.advance(hours=2)
        # Another URL of the same ledger: another process, in effect, opening it afresh.
        after = window_budget(ledger_url(prefix, timeout="3"), "1", clock, "1h")
        assert (after.reserved, after.calls) == (D("0.7"), 1)
        assert client.hget(f"{prefix}meta", "schema") == "2"
        settle(running, "0.5")
        assert (after.spent, after.reserved) == (D(0), D(0))
        assert after.ledger.verify() == []
    finally:
        client.close()
        drop_prefix(prefix)
