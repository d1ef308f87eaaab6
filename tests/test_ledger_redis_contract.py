"""The Ledger contract on Redis: the same tests as SQLite and memory, against real servers.

The contract tests of ``test_ledger.py`` are imported here, so pytest runs them once more with
this module's ``ledger`` fixture, a Redis ledger under a prefix of the test's own — on the
shared Redis server and on a local 3-primary Redis Cluster. Those that build their own backend
(a SQLite file, a fresh ledger per hypothesis example) have Redis versions below.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings

from spendguard.ledger import Ledger, ScopeClaim, Settlement
from spendguard.ledger.redis import RedisLedger
from tests.ledger_helpers import START, call_info
from tests.redis_cluster_helpers import (
    Deployment,
    fixture_redis_cluster,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_deployment,  # noqa: F401 - a fixture: pytest finds it here
)
from tests.redis_helpers import requires_redis
from tests.test_ledger import (
    EXPIRY,
    check_operations,
    operations,
    reserve,
    settlement,
    test_a_call_exactly_filling_the_limit_is_allowed,
    test_a_call_that_does_not_fit_is_refused_in_all_scopes_naming_the_tightest,
    test_a_late_release_after_recovery_refunds_the_worst_case,
    test_a_late_settle_after_recovery_corrects_the_charge_to_the_actual_cost,
    test_a_reservation_in_flight_counts_until_it_expires,
    test_a_scope_named_twice_is_charged_once_against_its_tightest_limit,
    test_a_warning_level_is_reported_once_per_scope_and_period,
    test_an_adjustment_corrects_every_scope_and_is_a_record,
    test_an_expired_reservation_is_recovered_by_the_next_reservation,
    test_an_unknown_reservation_is_a_ledger_error,
    test_records_filter_by_time_scope_tag_and_model,
    test_release_frees_the_reservation_and_keeps_a_released_record,
    test_reserve_holds_the_worst_case_in_every_scope,
    test_settle_replaces_the_worst_case_by_the_actual_cost,
    test_settling_twice_is_an_error_and_releasing_a_closed_call_does_nothing,
    test_unlimited_scopes_and_no_scopes_are_recorded_without_limit,
)

D = Decimal
pytestmark = [pytest.mark.redis, requires_redis]

CONTRACT = [
    test_a_call_exactly_filling_the_limit_is_allowed,
    test_a_call_that_does_not_fit_is_refused_in_all_scopes_naming_the_tightest,
    test_a_late_release_after_recovery_refunds_the_worst_case,
    test_a_late_settle_after_recovery_corrects_the_charge_to_the_actual_cost,
    test_a_reservation_in_flight_counts_until_it_expires,
    test_a_scope_named_twice_is_charged_once_against_its_tightest_limit,
    test_a_warning_level_is_reported_once_per_scope_and_period,
    test_an_adjustment_corrects_every_scope_and_is_a_record,
    test_an_expired_reservation_is_recovered_by_the_next_reservation,
    test_an_unknown_reservation_is_a_ledger_error,
    test_records_filter_by_time_scope_tag_and_model,
    test_release_frees_the_reservation_and_keeps_a_released_record,
    test_reserve_holds_the_worst_case_in_every_scope,
    test_settle_replaces_the_worst_case_by_the_actual_cost,
    test_settling_twice_is_an_error_and_releasing_a_closed_call_does_nothing,
    test_unlimited_scopes_and_no_scopes_are_recorded_without_limit,
]


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


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=operations)
def test_totals_always_equal_what_the_records_and_open_reservations_add_up_to(
        redis_deployment: Deployment, steps: list[tuple[str, set[str], Decimal, int]]) -> None:
    prefix = f"sgtest:{uuid.uuid4().hex[:12]}:"  # one namespace per example
    fresh = RedisLedger(redis_deployment.url(prefix))
    try:
        check_operations(fresh, steps)
    finally:
        fresh.close()
        redis_deployment.drop(prefix)

