"""The Ledger interface, on every backend: reserve, settle, release, adjust, recover, verify.

``ledger`` and ``ledger_backend`` (``tests/ledger_backends.py``) run each test on memory, a
SQLite file and the local Redis.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spendguard import BudgetExceeded, ConfigError, LedgerError
from spendguard._budget.ledger import Ledger, ScopeClaim, Settlement
from spendguard._budget.ledger.sqlite import SqliteLedger
from tests.ledger_backends import LedgerBackend
from tests.ledger_helpers import START, call_info

D = Decimal
LATER = START + timedelta(minutes=1)
EXPIRY = START + timedelta(minutes=15)


def claims(**limits: str | None) -> list[ScopeClaim]:
    """Claims in the all-time period: ``claims(project="10", run=None)``."""
    return [ScopeClaim(scope, "all", None if limit is None else D(limit),
                       None if limit is None else D(limit) * D("0.8"))
            for scope, limit in limits.items()]


def reserve(ledger: Ledger, amount: str, **limits: str | None) -> str:
    return ledger.reserve(claims(**limits), D(amount), call_info(), time=START,
                          expires_at=EXPIRY, tags={"team": "search"})


def settlement(actual: str, status: str = "ok") -> Settlement:
    return Settlement(LATER, D(actual), {"input": 100, "output": 20}, False, "t-1", 0.5,
                      "req_9", status)


def test_reserve_holds_the_worst_case_in_every_scope(ledger: Ledger) -> None:
    reserve(ledger, "2.5", project="10", run="5")
    for scope in ("project", "run"):
        assert ledger.totals(scope, "all").reserved_usd == D("2.5")
        assert ledger.totals(scope, "all").spent_usd == 0
    assert list(ledger.records()) == []  # a call in flight is not a record yet


def test_settle_replaces_the_worst_case_by_the_actual_cost(ledger: Ledger) -> None:
    reservation_id = reserve(ledger, "2.5", project="10", run="5")
    assert ledger.settle(reservation_id, settlement("0.75")) == []
    assert ledger.totals("project", "all").spent_usd == D("0.75")
    assert ledger.totals("run", "all").reserved_usd == 0
    (record,) = ledger.records()
    assert (record.id, record.scopes, record.status) == (reservation_id, ("project", "run"), "ok")
    assert (record.estimated_usd, record.actual_usd) == (D("2.5"), D("0.75"))
    assert record.tokens == {"input": 100, "output": 20}
    assert (record.request_id, record.table_version, record.latency_s) == ("req_9", "t-1", 0.5)
    assert record.tags == {"team": "search"}
    assert record.time == START


def test_release_frees_the_reservation_and_keeps_a_released_record(ledger: Ledger) -> None:
    reservation_id = reserve(ledger, "2.5", project="10")
    assert ledger.release(reservation_id, reason="http 429", time=LATER) is True
    assert ledger.totals("project", "all").committed_usd == 0
    (record,) = ledger.records()
    assert (record.status, record.actual_usd, record.note) == ("released", D(0), "http 429")


def test_a_call_that_does_not_fit_is_refused_in_all_scopes_naming_the_tightest(
        ledger: Ledger) -> None:
    reserve(ledger, "3", project="10", user="4", run="5")
    with pytest.raises(BudgetExceeded) as refused:
        reserve(ledger, "2", project="10", user="4", run="5")
    error = refused.value
    assert (error.scope, error.limit_usd, error.reserved_usd, error.estimate_usd) == (
        "user", D("4"), D("3"), D("2"))
    assert error.remaining_usd == D("1")
    assert "'user'" in str(error) and "max_tokens" in str(error)
    assert ledger.totals("project", "all").reserved_usd == D("3")  # nothing of the refused call
    assert ledger.verify() == []


def test_a_call_exactly_filling_the_limit_is_allowed(ledger: Ledger) -> None:
    reserve(ledger, "6", project="10")
    reserve(ledger, "4", project="10")
    with pytest.raises(BudgetExceeded):
        reserve(ledger, "0.000001", project="10")


def test_unlimited_scopes_and_no_scopes_are_recorded_without_limit(ledger: Ledger) -> None:
    ledger.settle(reserve(ledger, "1000", everyone=None), settlement("999"))
    ledger.settle(reserve(ledger, "1"), settlement("1"))
    assert ledger.totals("everyone", "all").spent_usd == D("999")
    assert sorted(record.scopes for record in ledger.records()) == [(), ("everyone",)]


def test_a_scope_named_twice_is_charged_once_against_its_tightest_limit(ledger: Ledger) -> None:
    twice = [*claims(project="10"), *claims(project="3")]
    ledger.reserve(twice, D("2"), call_info(), time=START, expires_at=EXPIRY, tags={})
    assert ledger.totals("project", "all").reserved_usd == D("2")
    with pytest.raises(BudgetExceeded) as refused:
        ledger.reserve(twice, D("2"), call_info(), time=START, expires_at=EXPIRY, tags={})
    assert refused.value.limit_usd == D("3")


def test_settling_twice_is_an_error_and_releasing_a_closed_call_does_nothing(
        ledger: Ledger) -> None:
    reservation_id = reserve(ledger, "1", project="10")
    ledger.settle(reservation_id, settlement("0.5"))
    with pytest.raises(LedgerError, match="already settled"):
        ledger.settle(reservation_id, settlement("0.5"))
    assert ledger.release(reservation_id, reason="late", time=LATER) is False
    assert ledger.totals("project", "all").spent_usd == D("0.5")


def test_an_unknown_reservation_is_a_ledger_error(ledger: Ledger) -> None:
    with pytest.raises(LedgerError, match="no reservation"):
        ledger.settle("nope", settlement("1"))


def test_a_reservation_in_flight_counts_until_it_expires(ledger: Ledger) -> None:
    reservation_id = reserve(ledger, "4", project="10")
    assert ledger.recover_expired(EXPIRY - timedelta(microseconds=1)) == []
    assert ledger.totals("project", "all").reserved_usd == D("4")
    assert ledger.recover_expired(EXPIRY) == [reservation_id]
    assert ledger.totals("project", "all").spent_usd == D("4")
    assert ledger.totals("project", "all").reserved_usd == 0
    (record,) = ledger.records()
    assert (record.status, record.actual_usd, record.usage_estimated) == ("recovered", D("4"),
                                                                          True)
    assert record.note is not None and "worst case" in record.note
    assert ledger.verify() == []


def test_an_expired_reservation_is_recovered_by_the_next_reservation(ledger: Ledger) -> None:
    reserve(ledger, "9", project="10")
    with pytest.raises(BudgetExceeded):
        reserve(ledger, "2", project="10")
    later = ledger.reserve(claims(project="20"), D("2"), call_info(), time=EXPIRY,
                           expires_at=EXPIRY + timedelta(minutes=15), tags={})
    assert ledger.totals("project", "all").spent_usd == D("9")
    assert ledger.totals("project", "all").reserved_usd == D("2")
    assert later


def test_a_late_settle_after_recovery_corrects_the_charge_to_the_actual_cost(
        ledger: Ledger) -> None:
    reservation_id = reserve(ledger, "4", project="10")
    ledger.recover_expired(EXPIRY)
    ledger.settle(reservation_id, settlement("1.5"))
    assert ledger.totals("project", "all").spent_usd == D("1.5")
    recovered, correction = ledger.records()
    assert (recovered.status, recovered.actual_usd) == ("recovered", D("4"))
    assert (correction.status, correction.actual_usd) == ("adjustment", D("-2.5"))
    assert correction.tokens == {"input": 100, "output": 20}
    assert correction.note is not None and reservation_id in correction.note
    assert ledger.verify() == []


def test_a_late_release_after_recovery_refunds_the_worst_case(ledger: Ledger) -> None:
    reservation_id = reserve(ledger, "4", project="10")
    ledger.recover_expired(EXPIRY)
    assert ledger.release(reservation_id, reason="http 500", time=LATER) is True
    assert ledger.totals("project", "all").spent_usd == 0
    assert [r.actual_usd for r in ledger.records()] == [D("4"), D("-4")]


def test_an_adjustment_corrects_every_scope_and_is_a_record(ledger: Ledger) -> None:
    ledger.settle(reserve(ledger, "2", project="10", run="5"), settlement("2"))
    ledger.adjust(claims(project="10", run="5"), D("-0.5"), time=LATER,
                  note="provider invoice credit", tags={"source": "invoice"})
    assert ledger.totals("run", "all").spent_usd == D("1.5")
    correction = list(ledger.records())[-1]
    assert (correction.status, correction.actual_usd, correction.note) == (
        "adjustment", D("-0.5"), "provider invoice credit")
    assert ledger.verify() == []


def test_a_warning_level_is_reported_once_per_scope_and_period(ledger: Ledger) -> None:
    ledger.settle(reserve(ledger, "5", project="10", run="100"), settlement("7"))
    first = ledger.settle(reserve(ledger, "1", project="10", run="100"), settlement("1"))
    assert [(c.scope, c.spent_usd, c.limit_usd, c.warn_usd) for c in first] == [
        ("project", D("8"), D("10"), D("8"))]
    assert ledger.settle(reserve(ledger, "1", project="10", run="100"), settlement("1")) == []


def test_records_filter_by_time_scope_tag_and_model(ledger: Ledger) -> None:
    for minute, model, scope, team in [(0, "a", "p", "search"), (1, "b", "p", "ads"),
                                       (2, "a", "q", "ads")]:
        moment = START + timedelta(minutes=minute)
        reservation_id = ledger.reserve(claims(**{scope: "10"}), D("1"), call_info(model),
                                        time=moment, expires_at=EXPIRY, tags={"team": team})
        ledger.settle(reservation_id, settlement("1"))

    def models(**filters: object) -> list[str]:
        return [record.model for record in ledger.records(**filters)]  # type: ignore[arg-type]

    assert models() == ["a", "b", "a"]
    assert models(since=START + timedelta(minutes=1)) == ["b", "a"]
    assert models(until=START + timedelta(minutes=1)) == ["a"]
    assert models(scope="q") == ["a"]
    assert models(model="b") == ["b"]
    assert models(tag="team=ads") == ["b", "a"]
    assert models(tag="team") == ["a", "b", "a"]
    assert models(tag="team=none") == []
    assert models(tag="owner") == []
    with pytest.raises(ConfigError, match="tag"):
        list(ledger.records(tag="bad key'=x"))


def test_verify_finds_totals_that_disagree_with_the_events(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.db")
    ledger.settle(reserve(ledger, "2", project="10"), settlement("1"))
    assert ledger.verify() == []
    db = ledger._connection()
    db.execute("UPDATE totals SET spent_usd = '0.5' WHERE scope = 'project'")
    (problem,) = ledger.verify()
    assert "'project'" in problem and "0.5" in problem


amounts = st.decimals(min_value=0, max_value=3, places=4, allow_nan=False, allow_infinity=False)
operations = st.lists(st.tuples(st.sampled_from(["reserve", "settle", "release", "adjust",
                                                 "expire"]),
                                st.sets(st.sampled_from(["p", "q", "r"]), max_size=3),
                                amounts, st.integers(min_value=0, max_value=50)),
                      max_size=40)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=operations)
def test_totals_always_equal_what_the_records_and_open_reservations_add_up_to(
        ledger_backend: LedgerBackend, steps: list[tuple[str, set[str], Decimal, int]]) -> None:
    fresh = ledger_backend.open()  # a fresh ledger per example
    try:
        check_operations(fresh, steps)
    finally:
        fresh.close()  # its connections now, not after the 60th example (a server's cap)


def check_operations(fresh: Ledger, steps: list[tuple[str, set[str], Decimal, int]]) -> None:
    """Apply random ledger operations; limits always hold, totals equal records + open ones."""
    limits = {"p": D("5"), "q": D("8"), "r": None}
    now = START
    open_ids: list[tuple[str, Decimal, set[str]]] = []
    for kind, scopes, amount, pick in steps:
        chosen = [ScopeClaim(s, "all", limits[s]) for s in sorted(scopes)]
        if kind == "reserve":
            try:
                rid = fresh.reserve(chosen, amount, call_info(), time=now,
                                    expires_at=now + timedelta(minutes=15), tags={})
            except BudgetExceeded:
                continue
            open_ids.append((rid, amount, scopes))
        elif kind in ("settle", "release") and open_ids:
            rid, worst, _ = open_ids.pop(pick % len(open_ids))
            if kind == "settle":
                fresh.settle(rid, settlement(str(min(amount, worst))))
            else:
                fresh.release(rid, reason="test", time=now)
        elif kind == "adjust":
            fresh.adjust(chosen, -amount, time=now, note="credit")
        elif kind == "expire":
            now += timedelta(minutes=pick)
            fresh.recover_expired(now)
        for scope, limit in limits.items():
            totals = fresh.totals(scope, "all")
            assert limit is None or totals.committed_usd <= limit
    assert fresh.verify() == []
    records = list(fresh.records())
    for scope in limits:
        totals = fresh.totals(scope, "all")
        assert totals.spent_usd == sum((r.actual_usd for r in records if scope in r.scopes),
                                       D(0))
        still_open = {rid for rid, _, _ in open_ids} - {r.id for r in records}
        assert totals.reserved_usd == sum((w for rid, w, s in open_ids
                                           if rid in still_open and scope in s), D(0))
