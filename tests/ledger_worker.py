"""A separate process sharing a SQLite ledger with the tests (run by ``ledger_helpers.worker``).

``hold URL SCOPE LIMIT WORST NOW``: reserve WORST at time NOW, print the reservation id, then
wait on stdin — the test kills it with SIGKILL mid-call.

``spend URL SCOPE LIMIT WORST ACTUAL N [MAX_CALLS [PERIOD]]``: print ``ready``, wait for a line
on stdin (so all workers start together), then make N calls (reserve WORST, settle ACTUAL),
checking after each reservation that the scope never holds more than LIMIT (nor counts more
than MAX_CALLS calls, when given; ``-`` for none); print a JSON summary.

``users URL SCOPE LIMIT USER_LIMIT WORST N USERS``: the same with a per-user template on the
scope, each call made for one of USERS users in turn (comma-separated), checking that no user's
scope ever holds more than USER_LIMIT.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from decimal import Decimal

from spendguard._budget.budget import Budget, CallInfo
from spendguard._budget.reservations import reserve_call
from spendguard._core.errors import BudgetExceeded

CALL = CallInfo(provider="openai", model="gpt-test", endpoint="chat")


def hold(*args: str) -> None:
    url, scope, limit, worst, now = args
    moment = datetime.fromisoformat(now)
    budget = Budget(limit, scope=scope, ledger=url, clock=lambda: moment)
    reservation = reserve_call(budget, Decimal(worst), call=CALL)
    print(reservation.id, flush=True)
    sys.stdin.readline()  # killed here


def spend(*args: str) -> None:
    url, scope, limit, worst, actual, calls, *shape = args
    max_calls = int(shape[0]) if shape and shape[0] != "-" else None
    budget = Budget(limit, scope=scope, ledger=url, warn_at=None, max_calls=max_calls,
                    period=shape[1] if len(shape) > 1 else None)
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
        totals = budget.totals()
        if totals.committed_usd > budget.limit_usd or (
                max_calls is not None and totals.calls > max_calls):
            violations += 1
        reservation.settle(actual_usd=Decimal(actual), tokens={"output": 1},
                           usage_estimated=False, table_version="t", latency_s=0.0)
    print(json.dumps({"granted": granted, "refused": refused, "violations": violations}),
          flush=True)


def users(*args: str) -> None:
    url, scope, limit, user_limit, worst, calls, names = args
    budget = Budget(limit, scope=scope, ledger=url, warn_at=None)
    template = budget.per("user", limit_usd=user_limit)
    people = names.split(",")
    print("ready", flush=True)
    sys.stdin.readline()
    granted: dict[str, int] = dict.fromkeys(people, 0)
    refused = violations = 0
    for index in range(int(calls)):
        person = people[index % len(people)]
        info = CallInfo(provider="openai", model="gpt-test", endpoint="chat", end_user=person)
        try:
            reservation = reserve_call(budget, Decimal(worst), call=info)
        except BudgetExceeded:
            refused += 1
            continue
        granted[person] += 1
        mine = template.budget_for(person)
        if mine.totals().committed_usd > mine.limit_usd or (
                budget.totals().committed_usd > budget.limit_usd):
            violations += 1
        reservation.settle(actual_usd=Decimal(worst), tokens={"output": 1},
                           usage_estimated=False, table_version="t", latency_s=0.0)
    print(json.dumps({"granted": granted, "refused": refused, "violations": violations}),
          flush=True)


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"hold": hold, "spend": spend, "users": users}[mode](*args)
