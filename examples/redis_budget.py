"""One budget shared by four worker processes through Redis, then drained to SQLite for keeps.

Each worker makes guarded calls until the shared budget refuses one; together they never
spend more than the limit, because every reservation is checked and held atomically in Redis.
Then the spend records are drained into a SQLite archive (twice: the second adds nothing).

    .venv/bin/python examples/redis_budget.py

Uses ``$SPENDGUARD_REDIS_URL`` if set, else the Redis on 127.0.0.1:6379, under a key prefix
of its own that it deletes at the end. Without a reachable Redis it says how to start one.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import uuid
from decimal import Decimal

import _client

import spendguard
from spendguard import drain_ledger

LIMIT_USD = Decimal("0.01")


def worker(url: str, name: str) -> tuple[str, int]:
    """Make calls until the shared budget refuses one; returns how many were allowed."""
    team = spendguard.Budget(LIMIT_USD, scope="team:search", period="daily", ledger=url,
                             warn_at=None)
    client = _client.openai_client(budget=team)
    calls = 0
    while True:
        try:
            with spendguard.tags(worker=name):
                client.chat.completions.create(
                    model="gpt-4o-mini", max_tokens=300,
                    messages=[{"role": "user", "content": "Rank these 20 search results."}])
        except spendguard.BudgetExceeded:
            return name, calls
        calls += 1


def main() -> None:
    print(f"calls go to: {_client.where()}")
    base = os.environ.get("SPENDGUARD_REDIS_URL", "redis://127.0.0.1:6379/0")
    prefix = f"spendguard-example:{uuid.uuid4().hex[:8]}:"
    url = f"{base}{'&' if '?' in base else '?'}prefix={prefix}&timeout=1"
    ledger = spendguard.open_ledger(url)
    try:
        ledger.totals("team:search", "all")  # reach Redis once: a missing server is said plainly
    except spendguard.LedgerUnavailable:
        print(f"no Redis at {base}: start one with `redis-server --port 6379` or set "
              f"SPENDGUARD_REDIS_URL")
        return
    try:
        with multiprocessing.get_context("spawn").Pool(4) as pool:
            allowed = pool.starmap(worker, [(url, f"w{i}") for i in range(4)])
        for name, calls in allowed:
            print(f"worker {name}: {calls} calls before the shared budget refused one")
        team = spendguard.Budget(LIMIT_USD, scope="team:search", period="daily", ledger=url)
        print(f"team:search spent ${team.spent:.6f} of ${LIMIT_USD} "
              f"(held in flight: ${team.reserved})")
        print(f"ledger verified: {ledger.verify() == []}")

        archive = f"sqlite:///{tempfile.mkdtemp(prefix='spendguard-archive-')}/archive.db"
        first, again = drain_ledger(url, archive), drain_ledger(url, archive)
        print(f"drained {first.written} records into {archive}; again: {again.written} new")
    finally:
        import redis  # noqa: PLC0415 - only to tidy up this example's keys

        server = redis.Redis.from_url(base)
        keys = list(server.scan_iter(match=f"{prefix}*"))
        if keys:
            server.delete(*keys)
        server.close()


if __name__ == "__main__":
    main()
