"""One budget shared by two worker processes through PostgreSQL, the durable shared ledger.

Each worker makes guarded calls until the shared budget refuses one; together they never
spend more than the limit, because every reservation checks and holds its worst case in one
PostgreSQL transaction, under a lock of the scope's own. Then the ledger's books are checked
and its records read back by worker, as finance would read them.

    .venv/bin/python examples/postgres_budget.py

Uses ``$SPENDGUARD_POSTGRES_URL`` if set, else the PostgreSQL on 127.0.0.1:5432 (database
``test``), in a schema of its own that it drops at the end. Without a reachable server it says
how to point it at one.
"""

from __future__ import annotations

import multiprocessing
import os
import uuid
from collections import Counter
from decimal import Decimal

import _client

import spendguard

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
    base = os.environ.get("SPENDGUARD_POSTGRES_URL", "postgresql://127.0.0.1:5432/test")
    schema = f"spendguard_example_{uuid.uuid4().hex[:8]}"
    url = f"{base}{'&' if '?' in base else '?'}schema={schema}&connect_timeout=2"
    try:
        ledger = spendguard.open_ledger(url)  # creates the schema and its tables
    except spendguard.LedgerUnavailable as exc:
        print(f"no PostgreSQL ledger at {base}: {exc}; set SPENDGUARD_POSTGRES_URL to a "
              f"database you may create a schema in")
        return
    except spendguard.ConfigError as exc:  # psycopg is not installed
        print(exc)
        return
    try:
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            allowed = pool.starmap(worker, [(url, f"w{i}") for i in range(2)])
        for name, calls in allowed:
            print(f"worker {name}: {calls} calls before the shared budget refused one")
        team = spendguard.Budget(LIMIT_USD, scope="team:search", period="daily", ledger=url)
        print(f"team:search spent ${team.spent:.6f} of ${LIMIT_USD} "
              f"(held in flight: ${team.reserved:.6f})")
        print(f"ledger verified: {ledger.verify() == []}")
        by_worker = Counter(f"{record.tags.get('worker', 'none')} {record.status}"
                            for record in ledger.records())
        print("records by worker and status: " + ", ".join(
            f"{key} {count}" for key, count in sorted(by_worker.items())))
    finally:
        ledger.close()
        import psycopg  # noqa: PLC0415 - only to tidy up this example's schema

        with psycopg.connect(base, autocommit=True) as db:
            db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    main()
