"""Redis going away mid-run: refuse while it is down (or spend a capped local allowance), then
carry on — and reconcile — once it is back.

Each test starts a Redis of its own on a free port, kills it (SIGKILL) and starts it again on
the same port; the shared server on 6379 is never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from spendguard import Budget, LedgerUnavailable
from spendguard._budget.ledger.redis import RedisLedger
from spendguard._budget.ledger.redis.fallback import ALLOWANCE_SCOPE
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import call_info, settle, spend
from tests.redis_helpers import (
    ThrowawayRedis,
    fixture_open_redis,  # noqa: F401 - a fixture: pytest finds it here
    fixture_server,  # noqa: F401 - a fixture: pytest finds it here
    ledger_url,
    requires_redis_server_binary,
)

D = Decimal
pytestmark = [pytest.mark.redis, requires_redis_server_binary]


@pytest.fixture
def persistent_server(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    own = ThrowawayRedis(tmp_path, persistent=True)
    own.start()
    yield own
    if own.process is not None:
        own.kill()


def test_while_redis_is_down_calls_are_refused_and_after_it_returns_they_work(
        persistent_server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    ledger = open_redis(ledger_url("sg:", persistent_server.port, timeout="0.5"))
    budget = Budget("10", scope="p", warn_at=None, ledger=ledger)
    spend(budget, "1", "1")
    persistent_server.kill()
    with pytest.raises(LedgerUnavailable, match=f"127.0.0.1:{persistent_server.port}"):
        reserve_call(budget, D("1"), call=call_info())
    with pytest.raises(LedgerUnavailable):
        budget.remaining  # noqa: B018 - no guessing what is left either
    persistent_server.start()  # with its append-only file: the spending survived
    spend(budget, "1", "0.25")
    assert budget.spent == D("1.25")
    assert budget.ledger.verify() == []


def test_a_settlement_made_while_redis_is_down_is_applied_when_it_returns(
        persistent_server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger],
        caplog: pytest.LogCaptureFixture) -> None:
    ledger = open_redis(ledger_url("sg:", persistent_server.port, timeout="0.5"))
    budget = Budget("10", scope="p", warn_at=None, ledger=ledger)
    spend(budget, "1", "1")
    in_flight = reserve_call(budget, D("4"), call=call_info())
    persistent_server.kill()
    with caplog.at_level(logging.WARNING, logger="spendguard.ledger"):
        settle(in_flight, "2")  # the call ended while Redis was down: no error for the caller
    assert "kept in this process" in caplog.text
    persistent_server.start()  # with its append-only file: the spending survived
    assert (budget.spent, budget.reserved) == (D("3"), D(0))
    assert sorted(r.actual_usd for r in ledger.records()) == [D("1"), D("2")]
    assert ledger.verify() == []


def test_fail_open_spends_a_capped_local_allowance_and_replays_it_into_redis(
        persistent_server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    server = persistent_server
    url = ledger_url("sg:", server.port, timeout="0.5", fail_open="1", local_cap_usd="2",
                     retry_s="0")
    ledger = open_redis(url)
    budget = Budget("100", scope="p", warn_at=None, ledger=ledger)
    spend(budget, "1", "1")
    assert budget.remaining == D("99")  # guarded clients read this before every call
    server.kill()

    spend(budget, "0.75", "0.5")  # local: Redis is down
    spend(budget, "0.75", "0.5")
    still_open = reserve_call(budget, D("1"), call=call_info())  # 0.5 + 0.5 + 1 = the cap
    with pytest.raises(LedgerUnavailable, match="allowance is used up"):
        reserve_call(budget, D("0.01"), call=call_info())
    assert (budget.spent, budget.reserved) == (D("2"), D("1"))  # last seen + local

    server.start()  # with its append-only file: the local calls are added to what it has
    settle(still_open, "0.75")  # a local call ending after Redis returned: replayed too
    assert (budget.spent, budget.reserved) == (D("2.75"), D(0))
    records = list(ledger.records())
    assert sorted(r.actual_usd for r in records) == [D("0.5"), D("0.5"), D("0.75"), D("1")]
    assert all(r.scopes == ("p",) and ALLOWANCE_SCOPE not in r.scopes for r in records)
    assert ledger.verify() == []
    spend(budget, "2", "2")  # the allowance is free again; and Redis is used, not it
    assert budget.spent == D("4.75")
    assert ledger._fallback is not None and not ledger._fallback.has_unreplayed()


def test_replaying_the_same_local_calls_twice_records_them_once(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    url = ledger_url("sg:", server.port, timeout="0.5", fail_open="1", local_cap_usd="5",
                     retry_s="0")
    ledger = open_redis(url)
    budget = Budget("100", scope="p", warn_at=None, ledger=ledger)
    server.kill()
    spend(budget, "1", "1")
    assert ledger._fallback is not None
    rows = ledger._fallback.to_replay()
    server.start()
    from spendguard._budget.ledger.redis import _import_args

    for _ in range(2):  # as if a first replay's reply were lost and it were sent again
        for row in rows:
            ledger._session.run("import", _import_args(row))
    assert budget.spent == D("1")  # replaying on the next read adds nothing either
    assert len(list(ledger.records())) == 1
    assert ledger.verify() == []
