"""The Ledger on Redis: the checks that are Redis's own, on the shared server and a cluster.

The contract shared by every backend lives in ``test_ledger.py`` and runs on the shared Redis
server and on a local 3-primary Redis Cluster through the ``ledger`` fixture of
``tests/ledger_backends.py``. Left here: a total tampered with through the Redis client, and
what a Redis record keeps of each scope's limit and an adjustment.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal

import pytest

from spendguard._budget.ledger import Ledger, ScopeClaim, Settlement
from spendguard._budget.ledger.redis import RedisLedger
from tests.budget.ledger.test_ledger import EXPIRY, reserve, settlement
from tests.ledger_helpers import START, call_info
from tests.redis_cluster_helpers import (
    Deployment,
    fixture_redis_deployment,  # noqa: F401 - a fixture: pytest finds it here
)
from tests.redis_helpers import requires_redis

D = Decimal
pytestmark = [pytest.mark.redis, requires_redis]


@pytest.fixture
def ledger(redis_deployment: Deployment) -> Iterator[Ledger]:
    prefix = f"sgtest:{uuid.uuid4().hex[:12]}:"
    opened = RedisLedger(redis_deployment.url(prefix))
    yield opened
    opened.close()
    redis_deployment.drop(prefix)


def test_verify_finds_totals_that_disagree_with_the_events(ledger: RedisLedger) -> None:
    ledger.settle(reserve(ledger, "2", project="10"), settlement("1"))
    assert ledger.verify() == []
    client = ledger._session.client
    client.hset(f"{ledger.options.key_prefix}totals", "all project",
                "0.500000000000000 0.000000000000000")
    (problem,) = ledger.verify()
    assert "'project'" in problem and "0.5" in problem


def test_a_record_carries_each_scopes_limit_and_an_adjustment_its_model(
        ledger: RedisLedger) -> None:
    both = [ScopeClaim("project", "all", D("10"), D("8")), ScopeClaim("run", "2031-01-31")]
    reservation_id = ledger.reserve(both, D("1"), call_info(), time=START, expires_at=EXPIRY,
                                    tags={})
    ledger.settle(reservation_id, Settlement(START, D("0.5"), {"input": 1}, False, "t", 0.1))
    ledger.adjust(both[:1], D("-0.25"), time=START, note="reconciled", provider="openai",
                  model="gpt-4o-mini")
    call, correction = sorted(ledger.records(), key=lambda r: r.status != "ok")
    assert (call.period_keys, call.limits_usd) == (("all", "2031-01-31"), (D("10"), None))
    assert (correction.provider, correction.model, correction.limits_usd) == (
        "openai", "gpt-4o-mini", (D("10"),))
    assert [r.id for r in ledger.records(model="gpt-4o-mini")] == [correction.id]
