"""Rolling windows and call caps under contention: threads, and 4 processes on one SQLite file
or one Redis, never count more than the limit allows."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

import pytest

from spendguard import Budget, BudgetExceeded
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import call_info, settle, start_together, worker
from tests.redis_helpers import (
    fixture_redis_prefix,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_url,  # noqa: F401 - a fixture: pytest finds it here
    redis_worker,
    requires_redis,
)

D = Decimal
WORST, ACTUAL = D("0.5"), D("0.3")



def assert_capped(budget: Budget, granted: int, max_calls: int) -> None:
    records = [r for r in budget.ledger.records(scope=budget.scope) if r.status == "ok"]
    assert granted == len(records) == budget.calls == max_calls  # contended: filled exactly
    assert budget.reserved == 0 and budget.ledger.verify() == []
    with pytest.raises(BudgetExceeded, match="max_calls"):
        reserve_call(budget, WORST, call=call_info())


def one_call(budget: Budget) -> tuple[int, int]:
    try:
        reservation = reserve_call(budget, WORST, call=call_info())
    except BudgetExceeded:
        return 0, 0
    totals = budget.totals()
    over = totals.committed_usd > budget.limit_usd or (
        budget.max_calls is not None and totals.calls > budget.max_calls)
    settle(reservation, ACTUAL)
    return 1, int(over)


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_threads_never_exceed_a_call_cap_on_a_rolling_window(backend: str,
                                                             tmp_path: Path) -> None:
    url = "memory://" if backend == "memory" else f"sqlite:///{tmp_path / 'ledger.db'}"
    budget = Budget("1000", scope="threads", ledger=url, warn_at=None, period="1h",
                    max_calls=37)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one_call, [budget] * 120))
    assert sum(v for _, v in results) == 0
    assert_capped(budget, sum(g for g, _ in results), 37)


def test_four_processes_never_exceed_a_call_cap_on_one_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    summaries = start_together([worker("spend", url, "shared", "1000", str(WORST), str(ACTUAL),
                                       "25", "53") for _ in range(4)])
    assert sum(s["violations"] for s in summaries) == 0
    assert sum(s["refused"] for s in summaries) == 100 - 53
    assert_capped(Budget("1000", scope="shared", ledger=url, max_calls=53),
                  sum(s["granted"] for s in summaries), 53)


def test_four_processes_never_overspend_a_rolling_window_on_one_sqlite_file(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    limit = D("12")  # 40 of the 100 calls' worst cases fit
    summaries = start_together([worker("spend", url, "shared", str(limit), str(WORST),
                                       str(WORST), "25", "-", "1h") for _ in range(4)])
    assert sum(s["violations"] for s in summaries) == 0
    budget = Budget(limit, scope="shared", ledger=url, period="1h")
    assert sum(s["granted"] for s in summaries) == 24
    assert budget.spent == limit and budget.reserved == 0 and budget.ledger.verify() == []


@pytest.mark.redis
@requires_redis
def test_four_processes_never_exceed_a_call_cap_on_a_rolling_window_in_redis(
        redis_url: str) -> None:
    summaries = start_together([redis_worker("spend", redis_url, "shared", "1000", str(WORST),
                                             str(ACTUAL), "10", "2", "41", "1h")
                                for _ in range(4)])
    assert sum(s["violations"] for s in summaries) == 0
    assert_capped(Budget("1000", scope="shared", ledger=redis_url, period="1h", max_calls=41),
                  sum(s["granted"] for s in summaries), 41)


@pytest.mark.redis
@requires_redis
def test_four_processes_never_overspend_a_rolling_window_in_redis(redis_url: str) -> None:
    limit = D("12")
    summaries = start_together([redis_worker("spend", redis_url, "shared", str(limit),
                                             str(WORST), str(WORST), "10", "2", "-", "1h")
                                for _ in range(4)])
    assert sum(s["violations"] for s in summaries) == 0
    budget = Budget(limit, scope="shared", ledger=redis_url, period="1h")
    assert sum(s["granted"] for s in summaries) == 24
    assert budget.spent == limit and budget.reserved == 0 and budget.ledger.verify() == []
