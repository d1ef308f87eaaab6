"""Many processes on one Redis budget: never an overspend; a killed worker's money recovered.

Eight worker processes of eight threads each (four of four on a local Redis Cluster) reserve
and settle on one scope at once while the test checks after every reservation that the scope
never holds more than its limit. At the end the totals must equal the sum of the records, with
nothing left reserved, and the rest of the budget must still be usable (no leaked
reservations).
"""

from __future__ import annotations

import json
import multiprocessing
import signal
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

import spendguard
from spendguard import Budget, BudgetExceeded
from spendguard._budget.ledger import ScopeClaim, Settlement
from spendguard._budget.ledger.redis import RedisLedger
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import FakeClock, call_info, spend, worker
from tests.redis_cluster_helpers import (
    cluster_url,
    drop_cluster_prefix,
)
from tests.redis_helpers import (
    fixture_open_redis,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_prefix,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_url,  # noqa: F401 - a fixture: pytest finds it here
    redis_worker,
    requires_redis,
)

D = Decimal
pytestmark = [pytest.mark.redis, requires_redis]
WORST, ACTUAL = D("0.5"), D("0.3")
PROCESSES, THREADS, CALLS = 8, 8, 40


def test_eight_processes_of_eight_threads_never_overspend_one_redis_budget(
        redis_url: str) -> None:
    # room for 1,000 calls of the 2,560 attempted: most runs hit the limit
    _contend(redis_url, D("300"), PROCESSES, THREADS, CALLS)


def test_four_processes_of_four_threads_never_overspend_one_budget_on_a_redis_cluster(
        redis_cluster: list[int]) -> None:
    prefix = f"sgtest:{uuid.uuid4().hex[:12]}:"
    try:  # room for 100 calls of the 400 attempted
        _contend(cluster_url(redis_cluster, prefix, timeout="2"), D("50"), 4, 4, 25)
    finally:
        drop_cluster_prefix(redis_cluster, prefix)


def _contend(redis_url: str, limit: Decimal, processes: int, threads: int, calls: int) -> None:
    """``processes`` workers of ``threads`` threads make ``calls`` calls each on one scope."""
    workers = [redis_worker("spend", redis_url, "shared", str(limit), str(WORST), str(ACTUAL),
                            str(calls), str(threads)) for _ in range(processes)]
    for process in workers:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    for process in workers:  # all go at once
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [process.communicate(timeout=300) for process in workers]
    for process, (_, errors) in zip(workers, outputs, strict=True):
        assert process.returncode == 0, errors
    summaries = [json.loads(out) for out, _ in outputs]
    assert sum(s["violations"] for s in summaries) == 0
    assert sum(s["refused"] for s in summaries) > 0  # the limit was really contended
    granted = sum(s["granted"] for s in summaries)

    budget = Budget(limit, scope="shared", ledger=redis_url, warn_at=None)
    while True:  # nothing leaked: calls fit until one more worst case does not
        try:
            spend(budget, str(WORST), str(ACTUAL))
        except BudgetExceeded:
            break
        granted += 1
    records = list(budget.ledger.records(scope="shared"))
    assert budget.reserved == 0
    assert budget.spent == sum((r.actual_usd for r in records), D(0)) == granted * ACTUAL
    assert limit - WORST < budget.spent <= limit
    assert budget.ledger.verify() == []


def test_a_killed_workers_reservation_counts_until_it_expires_then_is_charged_in_full(
        redis_url: str, open_redis: Callable[[str], RedisLedger]) -> None:
    reserved_at = FakeClock().now
    process = worker("hold", redis_url, "proj", "10", "4", reserved_at.isoformat())
    assert process.stdout is not None
    reservation_id = process.stdout.readline().strip()
    process.kill()  # SIGKILL mid-call: no settle, no release, no goodbye
    process.communicate()
    assert process.returncode == -signal.SIGKILL, reservation_id

    clock = FakeClock(reserved_at + timedelta(minutes=14))
    budget = Budget("10", scope="proj", ledger=open_redis(redis_url), clock=clock,
                    warn_at=None)
    assert (budget.spent, budget.reserved) == (D(0), D("4"))  # counted as spent until expiry
    with pytest.raises(BudgetExceeded):
        reserve_call(budget, D("6.5"), call=call_info())
    clock.advance(minutes=1)  # 15 minutes after the reservation: it has expired
    spend(budget, "6", "6")  # the next reservation recovers it first
    assert (budget.spent, budget.reserved) == (D("10"), D(0))
    recovered = next(r for r in budget.ledger.records() if r.id == reservation_id)
    assert (recovered.status, recovered.actual_usd, recovered.usage_estimated) == (
        "recovered", D("4"), True)
    assert recovered.note is not None and f"pid {process.pid}" in recovered.note
    assert budget.ledger.verify() == []


def _fork_reserves(ledger: RedisLedger, claims: list[ScopeClaim], calls: int,
                   ) -> tuple[int, int]:
    """``calls`` reservations (each settled when granted): (granted, refused)."""
    granted = refused = 0
    for _ in range(calls):
        now = datetime.now(UTC)
        try:
            reservation_id = ledger.reserve(claims, D("0.01"), call_info(), time=now,
                                            expires_at=now + timedelta(minutes=5), tags={})
        except BudgetExceeded:
            refused += 1
            continue
        ledger.settle(reservation_id, Settlement(now, D("0.01"), {"input": 10, "output": 1},
                                                 False, "ok", 0.0))
        granted += 1
    return granted, refused


def _forked_child(ledger: RedisLedger, answers: Any) -> None:
    answers.put(_fork_reserves(ledger, [ScopeClaim("child", "all", D("0"), D("0"))], 300))


def test_a_forked_process_gets_its_own_redis_connection_and_its_own_answers(
        redis_url: str) -> None:
    """A ledger used before ``fork()`` and then in both processes: each process reads the
    replies to its own commands (a shared socket would hand one process the other's), so
    the child's scope with no room refuses every call and the parent's grants every one."""
    ledger = spendguard.open_ledger(redis_url)
    assert isinstance(ledger, RedisLedger)
    try:
        _fork_and_reserve(ledger)
    finally:
        ledger.close()


def _fork_and_reserve(ledger: RedisLedger) -> None:
    roomy = [ScopeClaim("parent", "all", D("1000"), D("800"))]
    assert _fork_reserves(ledger, roomy, 1) == (1, 0)  # this thread's connection is open
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_forked_child, args=(ledger, answers))
    child.start()
    parent = _fork_reserves(ledger, roomy, 300)
    child_result = answers.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert (parent, child_result) == ((300, 0), (0, 300))
    assert ledger.totals("parent", "all").calls == 301
