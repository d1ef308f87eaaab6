"""What the Redis ledger sends and stores on its hot path: the record written at reservation,
the scripts or functions sent again to a server that forgot them, EVALSHA where functions
cannot be used, a dropped connection reconnected.

The server tests start a Redis of their own, so flushing its scripts or killing its clients
never touches the shared server on 6379.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from spendguard import Budget, SpendRecord
from spendguard._budget.ledger import CallInfo, ScopeClaim
from spendguard._budget.ledger.base import Settlement
from spendguard._budget.ledger.redis import RedisLedger
from spendguard._budget.ledger.redis.codec import (
    changes_from_json,
    open_record_json,
    record_from_json,
    record_json,
    settlement_json,
)
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import START, call_info, settle, spend
from tests.redis_helpers import (
    ThrowawayRedis,
    fixture_open_redis,  # noqa: F401 - a fixture: pytest finds it here
    fixture_server,  # noqa: F401 - a fixture: pytest finds it here
    ledger_url,
    requires_redis_server_binary,
)

D = Decimal


def test_the_record_stored_at_reservation_is_the_open_calls_record() -> None:
    claims = (ScopeClaim("team", "2031-01", D("10"), D("8")), ScopeClaim("run:ü", "all"))
    call = CallInfo(provider="openai", model="gpt-4o-mini", endpoint="chat", attempt=2,
                    request_id="req-1", prompt_hash="abc", prompt_text="hé",
                    estimated_input_tokens=12, estimated_output_tokens=34, input_exact=False)
    text = open_record_json("c1", claims, D("0.25"), call, START, {"user": "ana"})
    expected = SpendRecord(
        id="c1", time=START, scopes=("team", "run:ü"), tags={"user": "ana"},
        provider="openai", model="gpt-4o-mini", endpoint="chat", tokens={},
        estimated_usd=D("0.25"), actual_usd=D(0), usage_estimated=False, table_version="",
        latency_s=None, request_id="req-1", attempt=2, status="open", prompt_hash="abc",
        prompt_text="hé", estimated_input_tokens=12, estimated_output_tokens=34,
        input_exact=False, period_keys=("2031-01", "all"), limits_usd=(D("10"), None))
    assert text == record_json(expected)  # byte for byte what readers already decode
    assert record_from_json(text) == expected


def test_a_settlement_is_stored_as_the_fields_it_changes() -> None:
    opened = open_record_json("c1", (ScopeClaim("team", "all"),), D("1"), call_info(), START, {})
    settled = Settlement(START, D("0.125"), {"input": 3}, True, "v1", 0.5, request_id="r",
                         status="error", note="why")
    assert record_from_json(opened, **changes_from_json(settlement_json(settled))) == replace(
        record_from_json(opened), actual_usd=D("0.125"), tokens={"input": 3},
        usage_estimated=True, table_version="v1", latency_s=0.5, request_id="r",
        status="error", note="why")
    plain = settlement_json(Settlement(START, D("1"), {}, False, "v1", 0.0))
    assert "request_id" not in plain and "note" not in plain


def _admin(port: int) -> Any:
    import redis

    return redis.Redis(port=port, decode_responses=True)


@pytest.mark.redis
@requires_redis_server_binary
def test_a_server_that_forgot_the_scripts_is_sent_them_again(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    ledger = open_redis(ledger_url("sg:", server.port))
    budget = Budget("10", scope="p", warn_at=None, ledger=ledger)
    spend(budget, "1", "0.5")
    admin = _admin(server.port)
    admin.script_flush()
    spend(budget, "1", "0.25")
    assert (budget.spent, budget.reserved) == (D("0.75"), D(0))
    assert ledger.verify() == []


@pytest.mark.redis
@requires_redis_server_binary
def test_a_server_that_forgot_the_functions_is_sent_them_again(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    ledger = open_redis(ledger_url("sg:", server.port))
    budget = Budget("10", scope="p", warn_at=None, ledger=ledger)
    spend(budget, "1", "0.5")
    admin = _admin(server.port)
    assert len(admin.function_list()) == 1
    admin.function_flush()
    spend(budget, "1", "0.25")
    assert (budget.spent, budget.reserved) == (D("0.75"), D(0))
    assert len(admin.function_list()) == 1
    assert ledger.verify() == []


@pytest.mark.redis
@requires_redis_server_binary
@pytest.mark.parametrize("denied", [["-fcall", "-function"], ["-function"]],
                         ids=["may-not-call", "may-not-load"])
def test_a_user_who_may_not_use_functions_is_served_by_evalsha(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger],
        denied: list[str]) -> None:
    admin = _admin(server.port)
    admin.acl_setuser("sg", enabled=True, passwords=["+pw"], keys=["*"], channels=["*"],
                      commands=["+@all", *denied])
    ledger = open_redis(ledger_url("sg:", server.port).replace("redis://", "redis://sg:pw@"))
    budget = Budget("10", scope="p", warn_at=None, ledger=ledger)
    spend(budget, "1", "0.5")
    admin.script_flush()  # and the EVALSHA way sends a forgotten script again
    spend(budget, "1", "0.25")
    assert (budget.spent, budget.reserved) == (D("0.75"), D(0))
    assert admin.function_list() == []
    assert len(list(ledger.records())) == 2
    assert ledger.verify() == []


@pytest.mark.redis
@requires_redis_server_binary
def test_a_dropped_connection_is_reconnected_and_the_call_goes_through(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    ledger = open_redis(ledger_url("sg:", server.port))
    budget = Budget("10", scope="p", warn_at=None, ledger=ledger)
    spend(budget, "1", "0.5")
    in_flight = reserve_call(budget, D("2"), call=call_info())
    admin = _admin(server.port)
    assert admin.client_kill_filter(_type="normal", skipme=True) >= 1
    settle(in_flight, "1")  # the settle finds its connection gone: reconnected, sent once
    assert admin.client_kill_filter(_type="normal", skipme=True) >= 1
    spend(budget, "1", "0.25")  # and so does the next reservation
    assert (budget.spent, budget.reserved) == (D("1.75"), D(0))
    assert len(list(ledger.records())) == 3
    assert ledger.verify() == []


@pytest.mark.redis
@requires_redis_server_binary
def test_a_warning_crossed_by_a_settle_names_the_claim_it_was_reached_in(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    ledger = open_redis(ledger_url("sg:", server.port))
    claims = [ScopeClaim("team", "all", D("10"), D("8")), ScopeClaim("run", "all", D("4"),
                                                                     D("3"))]
    first = ledger.reserve(claims, D("4"), call_info(), time=START,
                           expires_at=START + timedelta(minutes=15), tags={})
    assert ledger.settle(first, Settlement(START, D("2"), {}, False, "t", 0.0)) == []
    second = ledger.reserve(claims, D("2"), call_info(), time=START,
                            expires_at=START + timedelta(minutes=15), tags={})
    (crossing,) = ledger.settle(second, Settlement(START, D("1.5"), {}, False, "t", 0.0))
    assert (crossing.scope, crossing.spent_usd, crossing.warn_usd) == ("run", D("3.5"), D("3"))
