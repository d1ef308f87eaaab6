"""One budget under contention — asyncio tasks, threads and processes at once — never overspends.

Each simulated call reserves its worst case, checks that the scope never holds more than its
limit, then settles at an actual cost at most the worst case. The ledger's totals must end equal
to the sum of its records, and once all calls have ended the rest of the budget must still be
usable (no leaked reservations).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

from spendguard import Budget, BudgetExceeded
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import call_info, settle, worker

D = Decimal
WORST, ACTUAL = D("0.5"), D("0.3")


def one_call(budget: Budget) -> tuple[int, int]:
    """(granted, violations) of one simulated call."""
    try:
        reservation = reserve_call(budget, WORST, call=call_info())
    except BudgetExceeded:
        return 0, 0
    violations = int(budget.totals().committed_usd > budget.limit_usd)
    settle(reservation, ACTUAL)
    return 1, violations


def assert_sound(budget: Budget, granted: int) -> None:
    # Nothing leaked: once every call has ended, calls fit until one more worst case does not.
    while one_call(budget)[0]:
        granted += 1
    assert budget.spent > budget.limit_usd - WORST
    records = list(budget.ledger.records(scope=budget.scope))
    assert budget.ledger.verify() == []
    assert budget.reserved == 0
    assert budget.spent == sum((r.actual_usd for r in records), D(0)) == granted * ACTUAL
    assert budget.spent <= budget.limit_usd


async def test_200_tasks_and_4_processes_never_overspend_one_sqlite_budget(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    limit = D("40")
    processes = [worker("spend", url, "shared", str(limit), str(WORST), str(ACTUAL), "60")
                 for _ in range(4)]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    budget = Budget(limit, scope="shared", ledger=url, warn_at=None)

    async def task() -> tuple[int, int]:
        granted = violations = 0
        for _ in range(3):
            try:
                reservation = reserve_call(budget, WORST, call=call_info())
            except BudgetExceeded:
                continue
            granted += 1
            violations += budget.totals().committed_usd > limit
            await asyncio.sleep(0)  # let the other tasks reserve while this call is in flight
            settle(reservation, ACTUAL)
        return granted, violations

    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    results = await asyncio.gather(*(task() for _ in range(200)))
    summaries = [json.loads(process.communicate(timeout=120)[0]) for process in processes]
    granted = sum(g for g, _ in results) + sum(s["granted"] for s in summaries)
    assert sum(v for _, v in results) + sum(s["violations"] for s in summaries) == 0
    assert_sound(budget, granted)


def test_threads_never_overspend_one_sqlite_budget(tmp_path: Path) -> None:
    budget = Budget("20", scope="threads", ledger=f"sqlite:///{tmp_path}/ledger.db",
                    warn_at=None)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one_call, [budget] * 400))
    assert sum(v for _, v in results) == 0
    assert_sound(budget, sum(g for g, _ in results))


def test_threads_never_overspend_one_memory_budget() -> None:
    budget = Budget("20", ledger="memory://", warn_at=None)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one_call, [budget] * 400))
    assert sum(v for _, v in results) == 0
    assert_sound(budget, sum(g for g, _ in results))


async def test_tasks_filling_a_budget_exactly_are_granted_exactly_the_limit() -> None:
    budget = Budget("10", ledger="memory://", warn_at=None)
    in_flight = asyncio.Event()

    async def task() -> int:
        try:
            reservation = reserve_call(budget, WORST, call=call_info())
        except BudgetExceeded:
            return 0
        await in_flight.wait()  # every granted call is in flight before any settles
        settle(reservation, WORST)
        return 1

    tasks = [asyncio.create_task(task()) for _ in range(200)]
    await asyncio.sleep(0)
    in_flight.set()
    assert sum(await asyncio.gather(*tasks)) == 20
    assert budget.spent == D("10")


def test_threads_first_using_one_memory_budget_share_one_ledger() -> None:
    # memory:// is a new ledger per open: if the lazy open raced, each thread that won the race
    # would get its own ledger and spend against its own $0.30.
    budget = Budget("0.30", ledger="memory://", warn_at=None)
    barrier = threading.Barrier(24)

    def first_use() -> int:
        barrier.wait()
        try:
            reservation = reserve_call(budget, D("0.03"), call=call_info())
        except BudgetExceeded:
            return 0
        settle(reservation, D("0.03"))
        return 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: widen any race
    try:
        with ThreadPoolExecutor(24) as pool:
            granted = sum(pool.map(lambda _: first_use(), range(24)))
    finally:
        sys.setswitchinterval(interval)
    assert granted == 10
    assert budget.spent == D("0.30")
    assert budget.ledger.verify() == []
