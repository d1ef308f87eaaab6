"""Many processes on one PostgreSQL budget: never an overspend, and a kill -9 loses nothing.

32 forked processes of 4 threads reserve and settle on one scope while the test kills 8 of
them with SIGKILL mid-run: every reservation a worker was granted ends as exactly one record
(settled, or recovered at its worst case once expired), the scope never held more than its
limit, and ``verify`` finds the totals equal to the events. Four fresh interpreters contend
for a rolling window and a call cap the same way the SQLite and Redis tests do.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import signal
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

import spendguard
from spendguard import Budget, BudgetExceeded
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import FakeClock, call_info, settle, spend, start_together, worker
from tests.postgres_helpers import (
    fixture_postgres_ledger_url,  # noqa: F401 - a fixture: pytest finds it here
    fixture_postgres_schema,  # noqa: F401 - a fixture: pytest finds it here
    requires_postgres,
)

D = Decimal
pytestmark = [pytest.mark.postgres, requires_postgres]
WORST, ACTUAL = D("0.5"), D("0.3")
PROCESSES, THREADS, CALLS, KILLED = 32, 4, 3, 8


def _child(url: str, limit: str, report: int, go: Any) -> None:
    """A forked worker: THREADS threads of CALLS calls; each grant and settle is reported
    (``r <id>`` once reserved, ``s <id>`` once settled) on a pipe, one atomic write each."""
    budget = Budget(limit, scope="shared", ledger=url, warn_at=None)
    go.wait()

    def run() -> None:
        for _ in range(CALLS):
            try:
                reservation = reserve_call(budget, WORST, call=call_info())
            except BudgetExceeded:
                os.write(report, b"x -\n")
                continue
            over = budget.totals().committed_usd > budget.limit_usd
            os.write(report, f"r {reservation.id} {int(over)}\n".encode())
            settle(reservation, ACTUAL)
            os.write(report, f"s {reservation.id} 0\n".encode())

    threads = [threading.Thread(target=run) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    os._exit(0)


def _read_lines(fd: int, until: Any, seen: list[str]) -> None:
    """Read report lines from ``fd`` until ``until(seen)`` or every writer has closed it."""
    pending = b""
    while not until(seen):
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, "the workers went silent for a minute"
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        pending += chunk
        *lines, pending = pending.split(b"\n")
        seen.extend(line.decode() for line in lines)


def test_32_processes_of_4_threads_with_8_killed_lose_no_record_and_never_overspend(
        postgres_ledger_url: str) -> None:
    url = f"{postgres_ledger_url}&pool_size=1"  # 32 connections in all, one per process
    limit = D("60")  # 120 of the 384 attempted calls' worst cases fit
    spendguard.open_ledger(url).close()  # migrated once, before the workers race
    context = multiprocessing.get_context("fork")
    go = context.Event()
    read_end, write_end = os.pipe()
    children = [context.Process(target=_child, args=(url, str(limit), write_end, go))
                for _ in range(PROCESSES)]
    for child in children:
        child.start()
    os.close(write_end)
    go.set()
    lines: list[str] = []
    try:  # kill 8 once the budget is being spent, mid-call for most of them
        _read_lines(read_end, lambda seen: sum(line[0] == "r" for line in seen) >= 40, lines)
        # Among those still running (on a busy machine some are done by now), every other.
        running = [child for child in children if child.is_alive()]
        for child in running[::2][:KILLED]:
            assert child.pid is not None
            os.kill(child.pid, signal.SIGKILL)
        _read_lines(read_end, lambda seen: False, lines)
    finally:
        for child in children:
            child.join(timeout=120)
        os.close(read_end)
    exits = Counter(child.exitcode for child in children)
    assert set(exits) <= {-signal.SIGKILL, 0} and exits[-signal.SIGKILL] >= 1

    granted = {line.split()[1] for line in lines if line[0] == "r"}
    settled = {line.split()[1] for line in lines if line[0] == "s"}
    assert sum(int(line.split()[2]) for line in lines if line[0] == "r") == 0  # never over
    ledger = spendguard.open_ledger(url)
    # A killed worker's open reservations are charged at their worst case once expired.
    ledger.recover_expired(datetime.now(UTC) + timedelta(hours=1))
    records = list(ledger.records(scope="shared"))
    ids = Counter(record.id for record in records)
    assert max(ids.values()) == 1  # no duplicates
    assert granted <= set(ids)  # every granted reservation has its record
    by_id = {record.id: record for record in records}
    assert {by_id[rid].status for rid in settled} == {"ok"}
    # Killed before reporting a settle: settled all the same, or recovered at the worst case.
    unreported = [by_id[rid] for rid in set(ids) - settled]
    assert {record.status for record in unreported} <= {"ok", "recovered"}
    assert all(record.actual_usd == WORST for record in unreported
               if record.status == "recovered")
    assert any(record.status == "recovered" for record in unreported)  # the kills hit calls
    totals = ledger.totals("shared", "all")
    assert totals.reserved_usd == 0
    assert totals.spent_usd == sum((record.actual_usd for record in records), D(0)) <= limit
    assert ledger.verify() == []


def test_four_processes_never_exceed_a_call_cap_on_a_rolling_window_in_postgres(
        postgres_ledger_url: str) -> None:
    url = postgres_ledger_url
    spendguard.open_ledger(url)
    summaries = start_together([worker("spend", url, "shared", "1000", str(WORST), str(ACTUAL),
                                       "15", "41", "1h") for _ in range(4)])
    assert sum(s["violations"] for s in summaries) == 0
    budget = Budget("1000", scope="shared", ledger=url, period="1h", max_calls=41)
    records = [r for r in budget.ledger.records(scope="shared") if r.status == "ok"]
    assert sum(s["granted"] for s in summaries) == len(records) == budget.calls == 41
    assert budget.reserved == 0 and budget.ledger.verify() == []
    with pytest.raises(BudgetExceeded, match="max_calls"):
        reserve_call(budget, WORST, call=call_info())


def test_four_processes_never_overspend_a_rolling_window_in_postgres(
        postgres_ledger_url: str) -> None:
    url = postgres_ledger_url
    limit = D("12")  # 24 of the 60 calls' worst cases fit
    spendguard.open_ledger(url)
    summaries = start_together([worker("spend", url, "shared", str(limit), str(WORST),
                                       str(WORST), "15", "-", "1h") for _ in range(4)])
    assert sum(s["violations"] for s in summaries) == 0
    budget = Budget(limit, scope="shared", ledger=url, period="1h")
    assert sum(s["granted"] for s in summaries) == 24
    assert budget.spent == limit and budget.reserved == 0 and budget.ledger.verify() == []


def test_a_killed_workers_postgres_reservation_counts_until_it_expires_then_is_charged_in_full(
        postgres_ledger_url: str) -> None:
    reserved_at = FakeClock().now
    process = worker("hold", postgres_ledger_url, "proj", "10", "4", reserved_at.isoformat())
    assert process.stdout is not None
    reservation_id = process.stdout.readline().strip()
    process.kill()  # SIGKILL mid-call: no settle, no release, no goodbye
    process.communicate()
    assert process.returncode == -signal.SIGKILL, reservation_id

    clock = FakeClock(reserved_at + timedelta(minutes=14))
    budget = Budget("10", scope="proj", ledger=postgres_ledger_url, clock=clock, warn_at=None)
    assert (budget.spent, budget.reserved) == (D(0), D("4"))  # held until it expires
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
