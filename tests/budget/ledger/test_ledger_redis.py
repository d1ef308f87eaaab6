"""The Redis ledger: its URL, exact money, namespaced keys, budgets on it, failing closed."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from decimal import Context, Decimal, localcontext
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spendguard import (
    Budget,
    BudgetExceeded,
    ConfigError,
    LedgerError,
    LedgerUnavailable,
    ThresholdCrossed,
    open_ledger,
)
from spendguard._budget.ledger import ScopeClaim
from spendguard._budget.ledger.redis import RedisLedger
from spendguard._budget.ledger.redis.codec import MAX_WHOLE_USD, scaled
from spendguard._budget.ledger.redis.options import parse_redis_url
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import START, FakeClock, call_info, settle, spend
from tests.redis_helpers import (
    drop_prefix,
    fixture_open_redis,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_prefix,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_url,  # noqa: F401 - a fixture: pytest finds it here
    free_port,
    ledger_url,
    requires_redis,
)

D = Decimal
EXPIRY = START + timedelta(minutes=15)


# -- the URL ------------------------------------------------------------------------------

def test_the_url_sets_server_database_prefix_timeouts_and_fail_open() -> None:
    options = parse_redis_url("redis://:s3cret@cache.internal:6380/2?prefix=acme:&timeout=0.5"
                              "&fail_open=1&local_cap_usd=5&retry_s=0")
    assert (options.host, options.port, options.db, options.password) == (
        "cache.internal", 6380, 2, "s3cret")
    assert (options.prefix, options.connect_timeout_s, options.reply_timeout_s) == (
        "acme:", 0.5, 0.5)
    assert (options.fail_open, options.local_cap_usd, options.retry_s) == (True, D("5"), 0.0)
    assert options.url == ("redis://:***@cache.internal:6380/2?prefix=acme:&timeout=0.5"
                           "&fail_open=1&local_cap_usd=5&retry_s=0")


def test_by_default_the_ledger_fails_closed_with_short_timeouts_under_spendguard() -> None:
    options = parse_redis_url("rediss://user@cache:6379")
    assert (options.fail_open, options.prefix, options.db, options.tls) == (
        False, "spendguard:", 0, True)
    assert options.connect_timeout_s <= 2 and options.reply_timeout_s <= 2


@pytest.mark.parametrize(("url", "says"), [
    ("redis://h/0?fail_opne=1", "unknown option"),
    ("redis://h/0?timeout=-1", "timeout"),
    ("redis://h/0?timeout=soon", "timeout"),
    ("redis://h/zero", "database"),
    ("redis://h:port/0", "port"),
    ("redis://h/0?fail_open=1", "local_cap_usd"),
    ("redis://h/0?fail_open=maybe", "fail_open"),
    ("redis://h/0?fail_open=1&local_cap_usd=0.5x", "local_cap_usd"),
    ("redis://h/0?prefix=a%20b", "prefix"),
])
def test_a_bad_url_is_a_config_error_naming_the_part(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        open_ledger(url)


def test_the_password_never_appears_in_errors_or_reprs(
        open_redis: Callable[[str], RedisLedger]) -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0?timeout=0.5&bogus=1"
    with pytest.raises(ConfigError) as bad:
        open_ledger(url)
    assert "hunter2" not in str(bad.value) and "***" in str(bad.value)
    ledger = open_redis(url.removesuffix("&bogus=1"))
    with pytest.raises(LedgerUnavailable) as down:
        ledger.reserve([], D("1"), call_info(), time=START, expires_at=EXPIRY, tags={})
    assert "hunter2" not in str(down.value) + repr(ledger) + down.value.url
    assert "127.0.0.1" in down.value.url


def test_an_unreachable_server_refuses_calls_naming_the_url(caplog: pytest.LogCaptureFixture
                                                            ) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0?timeout=0.5"
    budget = Budget("10", scope="p", ledger=url, warn_at=None)
    with pytest.raises(LedgerUnavailable, match=r"unreachable.*fail_open") as refused:
        reserve_call(budget, D("1"), call=call_info())
    assert refused.value.url == url
    with pytest.raises(LedgerUnavailable):
        budget.remaining  # noqa: B018 - a read fails closed too
    assert isinstance(refused.value, LedgerError)


def test_a_server_that_never_answers_is_given_up_on_after_the_timeout(
        open_redis: Callable[[str], RedisLedger]) -> None:
    with socket.socket() as silent:  # accepts connections (the backlog), never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        ledger = open_redis(f"redis://127.0.0.1:{silent.getsockname()[1]}/0?timeout=0.2")
        started = time.monotonic()
        with pytest.raises(LedgerUnavailable, match="Timeout"):
            ledger.reserve([], D("1"), call_info(), time=START, expires_at=EXPIRY, tags={})
        assert time.monotonic() - started < 1.5  # one timeout, not a retry loop


# -- money: exact to 1e-15 USD, never rounded toward less spending -------------------------

femto = st.decimals(min_value=-MAX_WHOLE_USD, max_value=MAX_WHOLE_USD, places=15,
                    allow_nan=False, allow_infinity=False)
finer = st.decimals(min_value=-10**6, max_value=10**6, places=20, allow_nan=False,
                    allow_infinity=False)


@given(femto)
def test_an_amount_on_the_scale_is_kept_exactly(amount: Decimal) -> None:
    charged, text = scaled(amount, rounding="up", field="x")
    assert charged == amount == D(text)
    assert len(text.partition(".")[2]) == 15


@given(finer)
def test_a_finer_amount_rounds_up_for_spending_and_down_for_limits(amount: Decimal) -> None:
    up, _ = scaled(amount, rounding="up", field="x")
    down, _ = scaled(amount, rounding="down", field="x")
    assert down <= amount <= up and up - down <= D("1e-15")


def test_an_amount_beyond_exact_range_is_refused() -> None:
    with pytest.raises(ConfigError, match="limit_usd"):
        scaled(D(MAX_WHOLE_USD + 1), rounding="down", field="limit_usd")


@pytest.mark.redis
@requires_redis
@settings(max_examples=25, deadline=None)
@given(amounts=st.lists(st.decimals(min_value=-10**14, max_value=10**14, places=15,
                                    allow_nan=False, allow_infinity=False),
                        min_size=1, max_size=12))
def test_lua_adds_any_amounts_exactly(amounts: list[Decimal]) -> None:
    prefix = f"sgtest:{uuid.uuid4().hex[:12]}:"
    ledger = RedisLedger(ledger_url(prefix))
    try:
        for amount in amounts:
            ledger.adjust([ScopeClaim("p", "all")], amount, time=START, note="n")
        with localcontext(Context(prec=60)):
            exact = sum(amounts, D(0))
        assert ledger.totals("p", "all").spent_usd == exact
        assert ledger.verify() == []
    finally:
        ledger.close()
        drop_prefix(prefix)


@pytest.mark.redis
@requires_redis
def test_a_reservation_finer_than_the_scale_is_held_rounded_up(
        redis_url: str, open_redis: Callable[[str], RedisLedger]) -> None:
    ledger = open_redis(redis_url)
    tight = [ScopeClaim("p", "all", D("1e-15"))]
    rid = ledger.reserve(tight, D("3e-16"), call_info(), time=START, expires_at=EXPIRY, tags={})
    assert ledger.totals("p", "all").reserved_usd == D("1e-15")
    with pytest.raises(BudgetExceeded):
        ledger.reserve(tight, D("1e-18"), call_info(), time=START, expires_at=EXPIRY, tags={})
    ledger.release(rid, reason="test", time=START)
    (record,) = ledger.records()
    assert record.estimated_usd == D("1e-15")  # the record holds what was held


# -- namespacing and opening --------------------------------------------------------------

@pytest.mark.redis
@requires_redis
def test_every_key_lives_under_the_prefix_and_prefixes_do_not_meet(redis_prefix: str) -> None:
    import redis

    other = f"{redis_prefix}other:"
    first = Budget("10", scope="team", ledger=ledger_url(redis_prefix), warn_at=None)
    second = Budget("10", scope="team", ledger=ledger_url(other), warn_at=None)
    spend(first, "2", "2")
    assert (first.spent, second.spent) == (D("2"), D(0))
    client = redis.Redis(decode_responses=True)
    keys = set(client.scan_iter(match=f"{redis_prefix}*"))
    client.close()
    assert {key.removeprefix(redis_prefix) for key in keys} >= {
        "meta", "totals", "records", "events"}
    assert all(key.startswith(redis_prefix) for key in keys)


@pytest.mark.redis
@requires_redis
def test_spendguard_ledger_can_name_a_redis_ledger(redis_url: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPENDGUARD_LEDGER", redis_url)
    ledger = open_ledger()
    assert isinstance(ledger, RedisLedger) and ledger is open_ledger(redis_url)
    spend(None, "1", "0.5")
    assert [r.actual_usd for r in ledger.records()] == [D("0.5")]


# -- budgets on Redis ---------------------------------------------------------------------

@pytest.mark.redis
@requires_redis
def test_nested_budgets_and_periods_behave_as_on_sqlite(redis_url: str) -> None:
    clock = FakeClock()
    project = Budget("10", scope="project", period="daily", ledger=redis_url, clock=clock,
                     warn_at=None)
    run = project.child("run:1", limit_usd="3")
    spend(run, "2", "2")
    with pytest.raises(BudgetExceeded) as refused:
        reserve_call(run, D("1.5"), call=call_info())
    assert refused.value.scope == "project/run:1"
    clock.advance(hours=1)  # 00:00 UTC: a new day
    assert (project.spent, run.remaining) == (D(0), D("3"))
    assert project.ledger.totals("project", "2031-01-31").spent_usd == D("2")


@pytest.mark.redis
@requires_redis
def test_a_warning_is_given_once_across_processes_sharing_redis(
        redis_url: str, open_redis: Callable[[str], RedisLedger]) -> None:
    events: list[ThresholdCrossed] = []
    here = Budget("10", scope="shared", on_warn=events.append, ledger=open_redis(redis_url))
    there = Budget("10", scope="shared", on_warn=events.append,
                   ledger=open_redis(redis_url))  # a second instance, like another process
    spend(here, "9", "9")
    spend(there, "0.5", "0.5")
    (event,) = events
    assert (event.scope, event.spent_usd, event.fraction) == ("shared", D("9"), D("0.9"))


@pytest.mark.redis
@requires_redis
def test_a_settle_that_cannot_reach_redis_is_sent_with_the_next_operation(
        redis_url: str, open_redis: Callable[[str], RedisLedger],
        caplog: pytest.LogCaptureFixture) -> None:
    ledger = open_redis(redis_url)
    budget = Budget("10", scope="p", ledger=ledger, warn_at=None)
    reservation = reserve_call(budget, D("4"), call=call_info())
    session = ledger._session
    working = session.client
    session.client = open_redis(f"redis://127.0.0.1:{free_port()}/0?timeout=0.5"
                                )._session.client  # as if the network dropped
    with caplog.at_level(logging.WARNING, logger="spendguard.ledger"):
        settle(reservation, "1")
    assert "kept in this process" in caplog.text
    session.client = working
    assert (budget.spent, budget.reserved) == (D("1"), D(0))  # sent before this read
    assert ledger.verify() == []


@pytest.mark.redis
@requires_redis
def test_records_page_through_many_calls_in_time_order(
        redis_url: str, open_redis: Callable[[str], RedisLedger]) -> None:
    ledger = open_redis(redis_url)
    for minute in range(1200):
        moment = START + timedelta(minutes=minute % 600)  # two calls at every minute
        rid = ledger.reserve([], D("0.001"), call_info(), time=moment, expires_at=EXPIRY,
                             tags={})
        ledger.release(rid, reason="r", time=moment)
    records = list(ledger.records())
    assert len(records) == len({r.id for r in records}) == 1200
    assert [(r.time, r.id) for r in records] == sorted((r.time, r.id) for r in records)
    assert len(list(ledger.records(since=START + timedelta(minutes=599)))) == 2


def test_redis_is_imported_only_when_a_redis_ledger_is_opened(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys, spendguard; from spendguard._budget.ledger import open_ledger; "
            "open_ledger('memory://'); import spendguard._budget.budget; "
            "print('redis' in sys.modules)")
    from tests.redis_helpers import REPO_ROOT

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=tmp_path, env={"PYTHONPATH": str(REPO_ROOT)})
    assert result.stdout.strip() == "False"
