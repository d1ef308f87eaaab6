"""A Redis that loses calls in flight (a failover to a replica that had not received them yet):
the calls the provider billed are still recorded, and the caller never gets an error for it
after the fact. (A Redis that loses everything, its identity included, is refused: see
test_ledger_redis_reset.py.)"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal

import pytest

from spendguard import Budget
from spendguard._budget.ledger.redis import LOST_RESERVATION_NOTE, RedisLedger
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import call_info, settle
from tests.redis_helpers import (
    drop_prefix,
    fixture_open_redis,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_prefix,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_url,  # noqa: F401 - a fixture: pytest finds it here
    requires_redis,
)

D = Decimal
pytestmark = [pytest.mark.redis, requires_redis]


def test_a_settle_after_redis_lost_the_reservation_is_recorded_and_flagged(
        redis_url: str, redis_prefix: str, open_redis: Callable[[str], RedisLedger],
        caplog: pytest.LogCaptureFixture) -> None:
    ledger = open_redis(redis_url)
    budget = Budget("10", scope="team", ledger=ledger, warn_at=None)
    in_flight = reserve_call(budget, D("4"), call=call_info("gpt-lost"))
    drop_prefix(redis_prefix, keep_identity=True)  # the calls lost mid-call
    with caplog.at_level(logging.WARNING, logger="spendguard.ledger"):
        settle(in_flight, "1.25")  # the provider billed it: this must not raise
    assert "lost reservation" in caplog.text
    (record,) = list(ledger.records())
    assert (record.id, record.model, record.actual_usd) == (in_flight.id, "gpt-lost", D("1.25"))
    assert record.note == LOST_RESERVATION_NOTE and record.scopes == ("team",)
    assert (budget.spent, budget.reserved) == (D("1.25"), D(0))
    assert ledger.verify() == []


def test_a_release_after_redis_lost_the_reservation_is_a_logged_no_op(
        redis_url: str, redis_prefix: str, open_redis: Callable[[str], RedisLedger],
        caplog: pytest.LogCaptureFixture) -> None:
    ledger = open_redis(redis_url)
    budget = Budget("10", scope="team", ledger=ledger, warn_at=None)
    in_flight = reserve_call(budget, D("4"), call=call_info())
    drop_prefix(redis_prefix, keep_identity=True)
    with caplog.at_level(logging.WARNING, logger="spendguard.ledger"):
        in_flight.release("connect error")
    assert "no longer has reservation" in caplog.text
    assert list(ledger.records()) == []
    assert (budget.spent, budget.reserved) == (D(0), D(0))
