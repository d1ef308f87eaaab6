"""``wait_replicas``: a settle returns once that many replicas hold it, or is kept in the
process and sent again when they cannot acknowledge it in time.

Each test starts its own primary and replica on free ports."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import pytest
import redis

from spendguard import Budget, ConfigError
from spendguard._budget.ledger.redis import RedisLedger
from spendguard._budget.ledger.redis.options import parse_redis_url
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import call_info, settle, spend
from tests.redis_cluster_helpers import (
    HOST,
    kill_server,
    requires_redis_cluster_tools,
    start_primary,
    start_replica,
    stop_servers,
)
from tests.redis_helpers import fixture_open_redis  # noqa: F401 - a fixture: pytest finds it here

D = Decimal
pytestmark = [pytest.mark.redis, requires_redis_cluster_tools]


@pytest.fixture(name="replicated")
def fixture_replicated(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """A primary and a replica in sync with it: their ports."""
    primary = start_primary(tmp_path)
    replica = 0
    try:
        replica = start_replica(tmp_path, primary)
        yield primary, replica
    finally:
        stop_servers([port for port in (primary, replica) if port])


def test_with_wait_replicas_a_settle_returns_once_the_replica_holds_it(
        replicated: tuple[int, int], open_redis: Callable[[str], RedisLedger]) -> None:
    primary, replica = replicated
    ledger = open_redis(f"redis://{HOST}:{primary}/0?prefix=sg:&wait_replicas=1&timeout=2")
    budget = Budget("10", scope="team", warn_at=None, ledger=ledger)
    made = spend(budget, "1", "0.75")
    copy = redis.Redis(host=HOST, port=replica, decode_responses=True)
    try:  # read at once from the replica: WAIT returned only after it had the settle
        assert copy.hget(f"sg:call:{made.id}", "state") == "settled"
        assert copy.hget(f"sg:call:{made.id}", "actual") == f"{D('0.75'):.15f}"
    finally:
        copy.close()
    assert budget.spent == D("0.75")


def test_a_settle_no_replica_acknowledges_is_kept_and_sent_again(
        replicated: tuple[int, int], open_redis: Callable[[str], RedisLedger],
        caplog: pytest.LogCaptureFixture) -> None:
    primary, replica = replicated
    # A wait long enough for a live replica on a loaded machine; the dead one costs it once.
    ledger = open_redis(f"redis://{HOST}:{primary}/0?prefix=sg:&wait_replicas=1&timeout=3")
    budget = Budget("10", scope="team", warn_at=None, ledger=ledger)
    spend(budget, "1", "0.5")
    in_flight = reserve_call(budget, D("1"), call=call_info())
    kill_server(replica)
    with caplog.at_level(logging.WARNING, logger="spendguard.ledger"):
        settle(in_flight, "0.25")  # no error for the caller: kept, and sent again later
    assert "only 0 of 1 replica(s) acknowledged the settle" in caplog.text
    assert "kept in this process" in caplog.text


def test_wait_replicas_must_be_a_small_count() -> None:
    assert parse_redis_url("redis://h/0?wait_replicas=2").wait_replicas == 2
    assert parse_redis_url("redis://h/0").wait_replicas == 0
    for bad in ("-1", "one", "101"):
        with pytest.raises(ConfigError, match="wait_replicas"):
            parse_redis_url(f"redis://h/0?wait_replicas={bad}")
