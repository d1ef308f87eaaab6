"""A separate process sharing a SQLite ledger with the tests (run by ``ledger_helpers.worker``).

``hold URL SCOPE LIMIT WORST NOW``: reserve WORST at time NOW, print the reservation id, then
wait on stdin — the test kills it with SIGKILL mid-call.

``spend URL SCOPE LIMIT WORST ACTUAL N``: print ``ready``, wait for a line on stdin (so all
workers start together), then make N calls (reserve WORST, settle ACTUAL), checking after each
reservation that the scope never holds more than LIMIT; print a JSON summary.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from decimal import Decimal

from spendguard.budget import Budget, CallInfo, reserve_call
from spendguard.errors import BudgetExceeded

CALL = CallInfo(provider="openai", model="gpt-test", endpoint="chat")


def hold(*args: str) -> None:
    url, scope, limit, worst, now = args
    moment = datetime.fromisoformat(now)
    budget = Budget(limit, scope=scope, ledger=url, clock=lambda: moment)
    reservation = reserve_call(budget, Decimal(worst), call=CALL)
    print(reservation.id, flush=True)
    sys.stdin.readline()  # killed here


def spend(*args: str) -> None:
    url, scope, limit, worst, actual, calls = args
    budget = Budget(limit, scope=scope, ledger=url, warn_at=None)
    print("ready", flush=True)
    sys.stdin.readline()
    granted = refused = violations = 0
    for _ in range(int(calls)):
        try:
            reservation = reserve_call(budget, Decimal(worst), call=CALL)
        except BudgetExceeded:
            refused += 1
            continue
        granted += 1
        if budget.totals().committed_usd > budget.limit_usd:
            violations += 1
        reservation.settle(actual_usd=Decimal(actual), tokens={"output": 1},
                           usage_estimated=False, table_version="t", latency_s=0.0)
    print(json.dumps({"granted": granted, "refused": refused, "violations": violations}),
          flush=True)


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "hold":
        hold(*args)
    else:
        spend(*args)
